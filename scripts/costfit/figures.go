package main

import (
	"fmt"

	"github.com/irtool/irtool/internal/pubshape"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/target"
)

// The public figures the calibration is fitted on, each with its source.
// Where a source does not state the SKU, the generic ascend910b (the
// 910B3's profile) stands for it; where it does not state the weight type,
// the row says which one is assumed.

type mode int

const (
	modeEager   mode = iota // decode tok/s, every aclnn call launched by the host
	modeGraph               // decode tok/s, the step replayed as one ACL graph
	modePrefill             // prompt tok/s (llama-bench pp), eager
	modeMatmul              // TFLOPS of an n×n×n f16 matmul loop
)

// build is the llama.cpp program a figure measured: ggml-cann changed
// what it launches per token between the figures' dates.
type build int

const (
	// buildEarly is ggml-cann before September 2025: llama.cpp's graph as
	// built with flash attention off (its default then), the RoPE sin/cos
	// computed in every layer.
	buildEarly build = iota
	// buildFA is ggml-cann from September 2025: flash attention on
	// (llama.cpp's -fa auto, PR 15434, takes FLASH_ATTN_EXT where the
	// backend supports it: aclnnFusedInferAttentionScoreV2 between a cast
	// of Q to f16 and of its output back) and the RoPE sin/cos made once
	// per step and reused by every layer (PR 15912).
	buildFA
	// buildFAEarly is ggml-cann's first flash attention (PR 13627, May
	// 2025, with -fa): FLASH_ATTN_EXT as in buildFA, the RoPE sin/cos
	// still computed in every layer.
	buildFAEarly
	// buildNoFA25 is buildEarly's node set in ggml-cann of August 2025
	// (PR 15065: ACL graph support, set_rows): its host path is the later
	// builds'.
	buildNoFA25
)

// passes is the irtool pipeline that turns llama.cpp's graph as built into
// the build's node set.
func (b build) passes() string {
	switch b {
	case buildFA:
		return "rope-cache,cse,fuse-softmax,fuse-attention"
	case buildFAEarly:
		return "fuse-softmax,fuse-attention"
	}
	return "none"
}

// early reports whether the build predates August 2025, whose host cost
// per eager call is Calibration.EarlyLaunchUS.
func (b build) early() bool { return b != buildFA && b != buildNoFA25 }

// calibration is c as the build's host path costs it.
func (b build) calibration(c target.Calibration) target.Calibration {
	if b.early() && c.EarlyLaunchUS > 0 {
		c.LaunchUS = c.EarlyLaunchUS
	}
	return c
}

func (b build) text() string {
	switch b {
	case buildFA:
		return "FA + RoPE cache"
	case buildFAEarly:
		return "FA"
	}
	return "no FA"
}

type figure struct {
	id      string
	group   string // the source, for the split by source (one public report)
	build   build
	source  string
	shape   *pubshape.Shape
	dtype   ir.DType
	typNote string // how the type is known
	sku     string
	skuNote string
	mode    mode
	n       float64 // modeMatmul: the matrix size
	pp      int64   // modePrefill: the prompt
	value   float64
	heldOut string // why the figure is not fitted ("": fitted)
}

func (f figure) key() string {
	return fmt.Sprintf("%s/%s/%s/%d/%d", f.shape.Name, f.dtype, f.sku, f.build, f.prompt())
}

func (f figure) prompt() int64 {
	if f.pp > 0 {
		return f.pp
	}
	return 512
}

func (f figure) model() string {
	if f.mode == modeMatmul {
		return fmt.Sprintf("aclnnMm %.0f³", f.n)
	}
	return f.shape.Name
}

func (f figure) typ() string {
	if f.mode == modeMatmul {
		return "F16"
	}
	t := map[ir.DType]string{ir.F16: "F16", ir.Q4_0: "Q4_0", ir.Q8_0: "Q8_0"}[f.dtype]
	if f.typNote != "" {
		t += " (" + f.typNote + ")"
	}
	return t
}

func (f figure) skuText() string {
	if f.skuNote != "" {
		return f.sku + " (" + f.skuNote + ")"
	}
	return f.sku
}

func (f figure) modeText() string {
	switch f.mode {
	case modeEager:
		return "decode, eager"
	case modeGraph:
		return "decode, ACL graph"
	case modePrefill:
		return fmt.Sprintf("prefill pp%d, eager", f.prompt())
	}
	return "matmul loop"
}

func (f figure) unit() string {
	if f.mode == modeMatmul {
		return "TFLOPS"
	}
	return "tok/s"
}

// heldFA is why PR 16752's figures are predicted, not fitted.
const heldFA = "fitted together with PR 15065 they move its graph/eager ratio from 1.71 to 2.46, since per-call costs shared by both builds cannot give 120 and 224 tok/s; ggml-cann changed more between August and October 2025 than the flash attention and RoPE cache modelled"

// heldLlamaF16PP is why PR 12671's F16 llama prefill figures are not
// fitted.
const heldLlamaF16PP = "not understood: F16 llama prefill ran at about 1.4 TFLOPS in that build, 7-25x below the same table's Q4_0, Q8_0 and F16 BERT prefill per FLOP; the PR does not say why (these are its only rows with RoPE in normal, non-NeoX mode, which ggml-cann maps to aclnnRotaryPositionEmbedding mode 1), and the program modelled runs ggml-cann's F16 matmul on the cube"

func figures() []figure {
	q05, q7, q2_7, l7 := pubshape.Qwen25_05B, pubshape.Qwen25_7B, pubshape.Qwen2_7B, pubshape.Llama2_7B
	phi3, l32, tiny, q3 := pubshape.Phi3_Mini, pubshape.Llama32_1B, pubshape.TinyLlama_1B, pubshape.Qwen3_32B
	const torchPerf = "github.com/zzc0721/torch-performance-test-data/issues/109 (torch_npu)"
	const bench12671 = "llama.cpp PR 12671 (llama-bench, the PR's model table)"
	const batched13627 = "llama.cpp PR 13627 (llama-batched-bench -c 65536 -fa, PP 128, TG 128, B 1)"
	return []figure{
		{id: "15065-eager", group: "PR 15065", build: buildNoFA25, source: "llama.cpp PR 15065", shape: q05, dtype: ir.F16, typNote: "assumed: not stated", sku: "ascend910b4",
			skuNote: "assumed: the author's PR 16752 ran one", mode: modeEager, value: 70},
		{id: "15065-graph", group: "PR 15065", build: buildNoFA25, source: "llama.cpp PR 15065", shape: q05, dtype: ir.F16, typNote: "assumed: not stated", sku: "ascend910b4",
			skuNote: "assumed: the author's PR 16752 ran one", mode: modeGraph, value: 120},
		{id: "12671-tg", group: "PR 12671", source: "llama.cpp PR 12671 (llama-bench tg128, mean of 43.43-45.38)", shape: q05, dtype: ir.Q4_0, sku: "ascend910b",
			skuNote: "not stated", mode: modeEager, value: 44.26},
		{id: "12671-pp", group: "PR 12671", source: "llama.cpp PR 12671 (llama-bench pp512, 11,106-13,594)", shape: q05, dtype: ir.Q4_0, sku: "ascend910b",
			skuNote: "not stated", mode: modePrefill, value: 12350},
		{id: "8822", group: "PR 8822", source: "llama.cpp PR 8822 (llama-cli)", shape: l7, dtype: ir.Q4_0, sku: "ascend910b", skuNote: "not stated",
			mode: modeEager, value: 19.7},
		{id: "10454", group: "PR 10454", source: "llama.cpp PR 10454 (before the PR)", shape: q7, dtype: ir.F16, sku: "ascend910b", skuNote: "Atlas 300T A2, SKU not stated",
			mode: modeEager, value: 12.70, heldOut: "measures the path the PR replaced (aclnnMatmul for every f16 matmul); the program modelled is ggml-cann's after it, whose figure the PR does not state in text"},
		{id: "mm1024", group: "torch #109", source: torchPerf, sku: "ascend910b2", mode: modeMatmul, n: 1024, value: 98.08},
		{id: "mm2048", group: "torch #109", source: torchPerf, sku: "ascend910b2", mode: modeMatmul, n: 2048, value: 251.01},
		{id: "mm4096", group: "torch #109", source: torchPerf, sku: "ascend910b2", mode: modeMatmul, n: 4096, value: 314.52},
		{id: "mm8192", group: "torch #109", source: torchPerf, sku: "ascend910b2", mode: modeMatmul, n: 8192, value: 305.46},
		{id: "16752", group: "PR 16752", build: buildFA, source: "llama.cpp PR 16752 (llama-cli eval, before the PR; 105 of 106 graphs reused)", shape: q05, dtype: ir.F16, sku: "ascend910b4",
			mode: modeGraph, value: 223.77, heldOut: heldFA},
		{id: "16752-pp", group: "PR 16752", build: buildFA, source: "llama.cpp PR 16752 (llama-cli prompt eval, 20 tokens, before the PR)", shape: q05, dtype: ir.F16, sku: "ascend910b4",
			mode: modePrefill, pp: 20, value: 1333.33, heldOut: heldFA},
		{id: "12671-phi3-tg", group: "PR 12671", source: bench12671 + ": phi3 3B Q4_0 tg128 27.59", shape: phi3, dtype: ir.Q4_0, sku: "ascend910b",
			skuNote: "not stated", mode: modeEager, value: 27.59},
		{id: "12671-phi3-pp", group: "PR 12671", source: bench12671 + ": phi3 3B Q4_0 pp512 5351.96", shape: phi3, dtype: ir.Q4_0, sku: "ascend910b",
			skuNote: "not stated", mode: modePrefill, value: 5351.96},
		{id: "12671-l32-tg", group: "PR 12671", source: bench12671 + ": llama 1B F16, 1.24 B, tg128 63.70", shape: l32, dtype: ir.F16, sku: "ascend910b",
			skuNote: "not stated", mode: modeEager, value: 63.70},
		{id: "12671-tiny-tg", group: "PR 12671", source: bench12671 + ": llama 1B F16, 1.10 B, tg128 54.43", shape: tiny, dtype: ir.F16, sku: "ascend910b",
			skuNote: "not stated", mode: modeEager, value: 54.43},
		{id: "12671-l32-pp", group: "PR 12671", source: bench12671 + ": llama 1B F16, 1.24 B, pp512 578.29", shape: l32, dtype: ir.F16, sku: "ascend910b",
			skuNote: "not stated", mode: modePrefill, value: 578.29, heldOut: heldLlamaF16PP},
		{id: "12671-tiny-pp", group: "PR 12671", source: bench12671 + ": llama 1B F16, 1.10 B, pp512 424.31", shape: tiny, dtype: ir.F16, sku: "ascend910b",
			skuNote: "not stated", mode: modePrefill, value: 424.31, heldOut: heldLlamaF16PP},
		{id: "13627-tg", group: "PR 13627", build: buildFAEarly, source: batched13627 + ", S_TG 9.05", shape: q3, dtype: ir.Q8_0, sku: "ascend910b",
			skuNote: "not stated", mode: modeEager, value: 9.05},
		{id: "13627-pp", group: "PR 13627", build: buildFAEarly, source: batched13627 + ", S_PP 130.25", shape: q3, dtype: ir.Q8_0, sku: "ascend910b",
			skuNote: "not stated", mode: modePrefill, pp: 128, value: 130.25},
		{id: "14407", group: "PR 14407", source: "llama.cpp PR 14407 (llama-cli eval, weights in NZ format)", shape: q2_7, dtype: ir.F16, sku: "ascend310p",
			skuNote: "Ascend310P3", mode: modeEager, value: 6.33},
		{id: "14407-pp", group: "PR 14407", source: "llama.cpp PR 14407 (llama-cli prompt eval, 21 tokens, weights in NZ format)", shape: q2_7, dtype: ir.F16, sku: "ascend310p",
			skuNote: "Ascend310P3", mode: modePrefill, pp: 21, value: 88.57},
		{id: "14407-nd", group: "PR 14407", source: "llama.cpp PR 14407 (llama-cli eval, weights in ND format, before the PR)", shape: q2_7, dtype: ir.F16, sku: "ascend310p",
			skuNote: "Ascend310P3", mode: modeEager, value: 2.62, heldOut: "the ND weight layout the PR replaced: 310P's cube reads NZ, and ND weights are converted per call; the program modelled loads them in NZ"},
	}
}
