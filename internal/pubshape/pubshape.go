// Package pubshape holds published models' shapes: their hyper-parameters
// (the models' config.json on Hugging Face) and the GGUF tensors
// llama.cpp's converter writes for them, so that a cost or link-model
// table can build a 7B-shaped graph without its weights. scripts/costfit's
// calibration figures and cli's tensor-parallel sweep table use it.
package pubshape

import (
	"fmt"
	"math"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
)

// Shape is a published model's shape.
type Shape struct {
	Name string
	HP   models.HParams
	Bias bool // q/k/v biases (qwen2)
	Tied bool // no output.weight: the token embedding is the output projection
	// RopeFreqs: a rope_freqs.weight of NRot/2 factors (Llama 3.x's rope
	// scaling, which llama.cpp's converter writes as a tensor).
	RopeFreqs bool
}

// The shapes, from config.json of Qwen/Qwen2.5-0.5B-Instruct,
// Qwen/Qwen2.5-7B-Instruct, Qwen/Qwen2-7B-Instruct,
// meta-llama/Llama-2-7b-hf, meta-llama/Llama-3.2-1B,
// TinyLlama/TinyLlama-1.1B-Chat-v1.0, microsoft/Phi-3-mini-4k-instruct
// and Qwen/Qwen3-32B.
var (
	Qwen25_05B = &Shape{Name: "Qwen2.5-0.5B", Bias: true, Tied: true, HP: models.HParams{Arch: "qwen2", NVocab: 151936, NCtxTrain: 32768, NEmbd: 896, NLayer: 24,
		NHead: 14, NHeadKV: 2, NFF: 4864, HeadDimK: 64, HeadDimV: 64, NRot: 64, RMSEps: 1e-6, RopeFreqBase: 1e6, RopeFreqScale: 1, RopeAttn: 1, RopeBetaFast: 32, RopeBetaSlow: 1, RopeMode: 2}}
	Qwen25_7B = &Shape{Name: "Qwen2.5-7B", Bias: true, HP: models.HParams{Arch: "qwen2", NVocab: 152064, NCtxTrain: 32768, NEmbd: 3584, NLayer: 28,
		NHead: 28, NHeadKV: 4, NFF: 18944, HeadDimK: 128, HeadDimV: 128, NRot: 128, RMSEps: 1e-6, RopeFreqBase: 1e6, RopeFreqScale: 1, RopeAttn: 1, RopeBetaFast: 32, RopeBetaSlow: 1, RopeMode: 2}}
	// Qwen2_7B has Qwen2.5-7B's dimensions (config.json of
	// Qwen/Qwen2-7B-Instruct: 28 layers, 3584 wide, 18944 FFN, 28/4 heads,
	// 152064 tokens, rope_theta 1e6).
	Qwen2_7B  = &Shape{Name: "Qwen2-7B", Bias: true, HP: Qwen25_7B.HP}
	Llama2_7B = &Shape{Name: "Llama-2-7B", HP: models.HParams{Arch: "llama", NVocab: 32000, NCtxTrain: 4096, NEmbd: 4096, NLayer: 32,
		NHead: 32, NHeadKV: 32, NFF: 11008, HeadDimK: 128, HeadDimV: 128, NRot: 128, RMSEps: 1e-5, RopeFreqBase: 1e4, RopeFreqScale: 1, RopeAttn: 1}}
	// Llama32_1B is Llama 3.2 1B (1.24 B parameters): tied embeddings,
	// grouped-query attention 32/8, rope_theta 5e5 with Llama 3's rope
	// scaling (a rope_freqs tensor in the GGUF).
	Llama32_1B = &Shape{Name: "Llama-3.2-1B", Tied: true, RopeFreqs: true, HP: models.HParams{Arch: "llama", NVocab: 128256, NCtxTrain: 131072, NEmbd: 2048, NLayer: 16,
		NHead: 32, NHeadKV: 8, NFF: 8192, HeadDimK: 64, HeadDimV: 64, NRot: 64, RMSEps: 1e-5, RopeFreqBase: 5e5, RopeFreqScale: 1, RopeAttn: 1}}
	// TinyLlama_1B is TinyLlama 1.1B (1.10 B parameters), Llama 2's
	// architecture with grouped-query attention 32/4.
	TinyLlama_1B = &Shape{Name: "TinyLlama-1.1B", HP: models.HParams{Arch: "llama", NVocab: 32000, NCtxTrain: 2048, NEmbd: 2048, NLayer: 22,
		NHead: 32, NHeadKV: 4, NFF: 5632, HeadDimK: 64, HeadDimV: 64, NRot: 64, RMSEps: 1e-5, RopeFreqBase: 1e4, RopeFreqScale: 1, RopeAttn: 1}}
	// Qwen3_32B is Qwen3-32B: per-head RMS norms of Q and K, no q/k/v
	// biases, grouped-query attention 64/8 with 128-wide heads.
	Qwen3_32B = &Shape{Name: "Qwen3-32B", HP: models.HParams{Arch: "qwen3", NVocab: 151936, NCtxTrain: 40960, NEmbd: 5120, NLayer: 64,
		NHead: 64, NHeadKV: 8, NFF: 25600, HeadDimK: 128, HeadDimV: 128, NRot: 128, RMSEps: 1e-6, RopeFreqBase: 1e6, RopeFreqScale: 1, RopeAttn: 1, RopeMode: 2}}
	// Phi3_Mini is Phi-3-mini-4k (3.82 B parameters): fused QKV and
	// gate+up projections (attn_qkv, ffn_up of 2·n_ff rows), NeoX RoPE, Q
	// scaled by 1/sqrt(head_dim) as llama.cpp's loader sets it.
	Phi3_Mini = &Shape{Name: "Phi-3-mini", HP: models.HParams{Arch: "phi3", NVocab: 32064, NCtxTrain: 4096, NCtxOrig: 4096, NEmbd: 3072, NLayer: 32,
		NHead: 32, NHeadKV: 32, NFF: 8192, HeadDimK: 96, HeadDimV: 96, NRot: 96, RMSEps: 1e-5, RopeFreqBase: 1e4, RopeFreqScale: 1, RopeAttn: 1,
		RopeMode: 2, QScale: float64(1 / float32(math.Sqrt(96)))}}
)

// Lookup lists the shape's tensors in type dt, norms and biases in F32.
// For Q4_0 it follows llama-quantize's default mix: the output projection
// (the tied embedding for a tied model) in Q6_K, or Q8_0 where its rows
// are not whole Q6_K blocks.
func (s *Shape) Lookup(dt ir.DType) models.WeightLookup {
	hp := s.HP
	q, kv := hp.NHead*hp.HeadDimK, hp.NHeadKV*hp.HeadDimK
	w := map[string][2]int64{"token_embd.weight": {hp.NEmbd, hp.NVocab}, "output_norm.weight": {hp.NEmbd, 1}}
	if !s.Tied {
		w["output.weight"] = [2]int64{hp.NEmbd, hp.NVocab}
	}
	if s.RopeFreqs {
		w["rope_freqs.weight"] = [2]int64{hp.NRot / 2, 1}
	}
	for l := range hp.NLayer {
		p := fmt.Sprintf("blk.%d.", l)
		layer := map[string][2]int64{
			"attn_norm.weight": {hp.NEmbd, 1}, "ffn_norm.weight": {hp.NEmbd, 1},
			"attn_q.weight": {hp.NEmbd, q}, "attn_k.weight": {hp.NEmbd, kv}, "attn_v.weight": {hp.NEmbd, kv},
			"attn_output.weight": {q, hp.NEmbd},
			"ffn_gate.weight":    {hp.NEmbd, hp.NFF}, "ffn_up.weight": {hp.NEmbd, hp.NFF}, "ffn_down.weight": {hp.NFF, hp.NEmbd},
		}
		if hp.Arch == "qwen3" {
			layer["attn_q_norm.weight"] = [2]int64{hp.HeadDimK, 1}
			layer["attn_k_norm.weight"] = [2]int64{hp.HeadDimK, 1}
		}
		if hp.Arch == "phi3" {
			// One QKV projection and one gate+up projection.
			delete(layer, "attn_q.weight")
			delete(layer, "attn_k.weight")
			delete(layer, "attn_v.weight")
			delete(layer, "ffn_gate.weight")
			layer["attn_qkv.weight"] = [2]int64{hp.NEmbd, q + 2*kv}
			layer["ffn_up.weight"] = [2]int64{hp.NEmbd, 2 * hp.NFF}
		}
		for name, ne := range layer {
			w[p+name] = ne
		}
		if s.Bias {
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
		case dt == ir.Q4_0 && (name == "output.weight" || s.Tied && name == "token_embd.weight"):
			t = ir.Q6_K
			if ne[0]%256 != 0 {
				t = ir.Q8_0 // llama-quantize's fallback for rows that are not whole K-quant blocks
			}
		}
		return models.Weight{Type: t, Ne: [4]int64{ne[0], ne[1], 1, 1}}, true
	}
}
