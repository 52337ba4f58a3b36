package main

import (
	"fmt"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
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
	shape   *shape
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

func (f figure) key() string { return fmt.Sprintf("%s/%s/%s", f.shape.name, f.dtype, f.sku) }

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
	return f.shape.name
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
		{id: "15065-eager", source: "llama.cpp PR 15065", shape: qwen05, dtype: ir.F16, typNote: "assumed: not stated", sku: "ascend910b4",
			skuNote: "assumed: the author's PR 16752 ran one", mode: modeEager, value: 70},
		{id: "15065-graph", source: "llama.cpp PR 15065", shape: qwen05, dtype: ir.F16, typNote: "assumed: not stated", sku: "ascend910b4",
			skuNote: "assumed: the author's PR 16752 ran one", mode: modeGraph, value: 120},
		{id: "12671-tg", source: "llama.cpp PR 12671 (llama-bench tg128, mean of 43.43-45.38)", shape: qwen05, dtype: ir.Q4_0, sku: "ascend910b",
			skuNote: "not stated", mode: modeEager, value: 44.26},
		{id: "12671-pp", source: "llama.cpp PR 12671 (llama-bench pp512, 11,106-13,594)", shape: qwen05, dtype: ir.Q4_0, sku: "ascend910b",
			skuNote: "not stated", mode: modePrefill, value: 12350},
		{id: "8822", source: "llama.cpp PR 8822 (llama-cli)", shape: llama2_7b, dtype: ir.Q4_0, sku: "ascend910b", skuNote: "not stated",
			mode: modeEager, value: 19.7},
		{id: "10454", source: "llama.cpp PR 10454 (before the PR)", shape: qwen7b, dtype: ir.F16, sku: "ascend910b", skuNote: "Atlas 300T A2, SKU not stated",
			mode: modeEager, value: 12.70, heldOut: "measures the path the PR replaced (aclnnMatmul for every f16 matmul); the program modelled is ggml-cann's after it"},
		{id: "mm1024", source: "github.com/zzc0721/torch-performance-test-data/issues/109 (torch_npu)", sku: "ascend910b2", mode: modeMatmul, n: 1024, value: 98.08},
		{id: "mm2048", source: "github.com/zzc0721/torch-performance-test-data/issues/109 (torch_npu)", sku: "ascend910b2", mode: modeMatmul, n: 2048, value: 251.01},
		{id: "mm4096", source: "github.com/zzc0721/torch-performance-test-data/issues/109 (torch_npu)", sku: "ascend910b2", mode: modeMatmul, n: 4096, value: 314.52},
		{id: "mm8192", source: "github.com/zzc0721/torch-performance-test-data/issues/109 (torch_npu)", sku: "ascend910b2", mode: modeMatmul, n: 8192, value: 305.46},
		{id: "16752", source: "llama.cpp PR 16752 (llama-cli eval, before the PR)", shape: qwen05, dtype: ir.F16, sku: "ascend910b4",
			mode: modeGraph, value: 223.77, heldOut: "a later ggml-cann than PR 15065's, whose 120 tok/s it contradicts by 1.86x on the same model; mode not stated"},
	}
}

// shape is a published model's shape: its hyper-parameters and the GGUF
// tensors llama.cpp's converter writes for it (config.json of
// Qwen/Qwen2.5-0.5B-Instruct, Qwen/Qwen2.5-7B-Instruct and
// meta-llama/Llama-2-7b-hf on Hugging Face).
type shape struct {
	name string
	hp   models.HParams
	bias bool // q/k/v biases (qwen2)
	tied bool // no output.weight
}

var (
	qwen05 = &shape{name: "Qwen2.5-0.5B", bias: true, tied: true, hp: models.HParams{Arch: "qwen2", NVocab: 151936, NCtxTrain: 32768, NEmbd: 896, NLayer: 24,
		NHead: 14, NHeadKV: 2, NFF: 4864, HeadDimK: 64, HeadDimV: 64, NRot: 64, RMSEps: 1e-6, RopeFreqBase: 1e6, RopeFreqScale: 1, RopeAttn: 1, RopeBetaFast: 32, RopeBetaSlow: 1, RopeMode: 2}}
	qwen7b = &shape{name: "Qwen2.5-7B", bias: true, hp: models.HParams{Arch: "qwen2", NVocab: 152064, NCtxTrain: 32768, NEmbd: 3584, NLayer: 28,
		NHead: 28, NHeadKV: 4, NFF: 18944, HeadDimK: 128, HeadDimV: 128, NRot: 128, RMSEps: 1e-6, RopeFreqBase: 1e6, RopeFreqScale: 1, RopeAttn: 1, RopeBetaFast: 32, RopeBetaSlow: 1, RopeMode: 2}}
	llama2_7b = &shape{name: "Llama-2-7B", hp: models.HParams{Arch: "llama", NVocab: 32000, NCtxTrain: 4096, NEmbd: 4096, NLayer: 32,
		NHead: 32, NHeadKV: 32, NFF: 11008, HeadDimK: 128, HeadDimV: 128, NRot: 128, RMSEps: 1e-5, RopeFreqBase: 1e4, RopeFreqScale: 1, RopeAttn: 1}}
)

// lookup lists the shape's tensors in type dt, with llama-quantize's
// default Q4_0 mix: the output projection (the tied embedding for a tied
// model) in Q6_K, Q8_0 where its rows are not whole Q6_K blocks.
func (s *shape) lookup(dt ir.DType) models.WeightLookup {
	hp := s.hp
	q, kv := hp.NHead*hp.HeadDimK, hp.NHeadKV*hp.HeadDimK
	w := map[string][2]int64{"token_embd.weight": {hp.NEmbd, hp.NVocab}, "output_norm.weight": {hp.NEmbd, 1}}
	if !s.tied {
		w["output.weight"] = [2]int64{hp.NEmbd, hp.NVocab}
	}
	for l := range hp.NLayer {
		p := fmt.Sprintf("blk.%d.", l)
		for name, ne := range map[string][2]int64{
			"attn_norm.weight": {hp.NEmbd, 1}, "ffn_norm.weight": {hp.NEmbd, 1},
			"attn_q.weight": {hp.NEmbd, q}, "attn_k.weight": {hp.NEmbd, kv}, "attn_v.weight": {hp.NEmbd, kv},
			"attn_output.weight": {q, hp.NEmbd},
			"ffn_gate.weight":    {hp.NEmbd, hp.NFF}, "ffn_up.weight": {hp.NEmbd, hp.NFF}, "ffn_down.weight": {hp.NFF, hp.NEmbd},
		} {
			w[p+name] = ne
		}
		if s.bias {
			w[p+"attn_q.bias"], w[p+"attn_k.bias"], w[p+"attn_v.bias"] = [2]int64{q, 1}, [2]int64{kv, 1}, [2]int64{kv, 1}
		}
	}
	return func(name string) (models.Weight, bool) {
		ne, ok := w[name]
		if !ok {
			return models.Weight{}, false
		}
		t := dt
		switch {
		case ne[1] == 1:
			t = ir.F32 // norms and biases
		case dt == ir.Q4_0 && (name == "output.weight" || s.tied && name == "token_embd.weight"):
			t = ir.Q6_K
			if ne[0]%256 != 0 {
				t = ir.Q8_0 // llama-quantize's fallback for rows that are not whole K-quant blocks
			}
		}
		return models.Weight{Type: t, Ne: [4]int64{ne[0], ne[1], 1, 1}}, true
	}
}
