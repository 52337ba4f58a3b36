package main

import (
	"fmt"

	"github.com/irtool/irtool/internal/pubshape"
	"github.com/irtool/irtool/ir"
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

type figure struct {
	id      string
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

func (f figure) key() string { return fmt.Sprintf("%s/%s/%s", f.shape.Name, f.dtype, f.sku) }

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

func figures() []figure {
	return []figure{
		{id: "15065-eager", source: "llama.cpp PR 15065", shape: pubshape.Qwen25_05B, dtype: ir.F16, typNote: "assumed: not stated", sku: "ascend910b4",
			skuNote: "assumed: the author's PR 16752 ran one", mode: modeEager, value: 70},
		{id: "15065-graph", source: "llama.cpp PR 15065", shape: pubshape.Qwen25_05B, dtype: ir.F16, typNote: "assumed: not stated", sku: "ascend910b4",
			skuNote: "assumed: the author's PR 16752 ran one", mode: modeGraph, value: 120},
		{id: "12671-tg", source: "llama.cpp PR 12671 (llama-bench tg128, mean of 43.43-45.38)", shape: pubshape.Qwen25_05B, dtype: ir.Q4_0, sku: "ascend910b",
			skuNote: "not stated", mode: modeEager, value: 44.26},
		{id: "12671-pp", source: "llama.cpp PR 12671 (llama-bench pp512, 11,106-13,594)", shape: pubshape.Qwen25_05B, dtype: ir.Q4_0, sku: "ascend910b",
			skuNote: "not stated", mode: modePrefill, value: 12350},
		{id: "8822", source: "llama.cpp PR 8822 (llama-cli)", shape: pubshape.Llama2_7B, dtype: ir.Q4_0, sku: "ascend910b", skuNote: "not stated",
			mode: modeEager, value: 19.7},
		{id: "10454", source: "llama.cpp PR 10454 (before the PR)", shape: pubshape.Qwen25_7B, dtype: ir.F16, sku: "ascend910b", skuNote: "Atlas 300T A2, SKU not stated",
			mode: modeEager, value: 12.70, heldOut: "measures the path the PR replaced (aclnnMatmul for every f16 matmul); the program modelled is ggml-cann's after it"},
		{id: "mm1024", source: "github.com/zzc0721/torch-performance-test-data/issues/109 (torch_npu)", sku: "ascend910b2", mode: modeMatmul, n: 1024, value: 98.08},
		{id: "mm2048", source: "github.com/zzc0721/torch-performance-test-data/issues/109 (torch_npu)", sku: "ascend910b2", mode: modeMatmul, n: 2048, value: 251.01},
		{id: "mm4096", source: "github.com/zzc0721/torch-performance-test-data/issues/109 (torch_npu)", sku: "ascend910b2", mode: modeMatmul, n: 4096, value: 314.52},
		{id: "mm8192", source: "github.com/zzc0721/torch-performance-test-data/issues/109 (torch_npu)", sku: "ascend910b2", mode: modeMatmul, n: 8192, value: 305.46},
		{id: "16752", source: "llama.cpp PR 16752 (llama-cli eval, before the PR)", shape: pubshape.Qwen25_05B, dtype: ir.F16, sku: "ascend910b4",
			mode: modeGraph, value: 223.77, heldOut: "a later ggml-cann than PR 15065's, whose 120 tok/s it contradicts by 1.86x on the same model; mode not stated"},
	}
}
