package models

import "github.com/irtool/irtool/ir"

// The mixture-of-experts FFN of qwen3moe and of llama files with experts
// (Mixtral's layout).

// moeFFN is llama.cpp's build_moe_ffn with softmax gating (qwen3moe):
// router logits, softmax, the top n_used experts, their probabilities
// renormalised to sum 1, the SiLU-gated experts through mul_mat_id, each
// expert's output weighted, and the weighted outputs summed in slot order.
// llama.cpp also clamps the weight sum to >= 6.1e-5 before dividing; the
// sum of the top n_used of n_expert softmax probabilities is at least
// n_used/n_expert, so that clamp never changes a value and is left out.
func (b *builder) moeFFN(lc *layerCtx, cur *ir.Node) *ir.Node {
	hp := b.hp
	if cur == nil {
		return nil
	}
	sfx, blk := lc.sfx, lc.blk
	nTok := cur.Type.Shape[1] // n_tokens, or n_outputs in the last layer
	nE, nU, nFF := hp.NExpert, hp.NExpertUsed, hp.NFFExp
	t3 := func(dt ir.DType, d0, d1 any) ir.Type {
		s := ir.T(dt, d0, d1)
		return ir.Type{DType: dt, Shape: ir.Shape{s.Shape[0], s.Shape[1], nTok, ir.C(1)}}
	}
	logits := b.op(ir.OpMulMat, "ffn_moe_logits"+sfx, nil, b.weight(blk+"ffn_gate_inp.weight", false, hp.NEmbd, nE), cur)
	probs := b.op(ir.OpSoftMax, "ffn_moe_probs"+sfx, ir.Attrs{ir.AttrScale: 1.0, ir.AttrMaxBias: 0.0}, logits)
	selected := b.op(ir.OpTopK, "ffn_moe_topk"+sfx, ir.Attrs{ir.AttrK: nU}, probs)
	probs3 := b.typed(ir.OpReshape, "ffn_moe_probs"+sfx+" (reshaped)", nil, t3(ir.F32, 1, nE), probs)
	weights := b.op(ir.OpGetRows, "ffn_moe_weights"+sfx, nil, probs3, selected)
	if hp.ExpertNormW {
		w2 := b.typed(ir.OpReshape, "ffn_moe_weights"+sfx+" (reshaped)", nil,
			ir.Type{DType: ir.F32, Shape: ir.Shape{ir.C(nU), nTok, ir.C(1), ir.C(1)}}, weights)
		sum := b.op(ir.OpSumRows, "ffn_moe_weights_sum"+sfx, nil, w2)
		w2 = b.op(ir.OpDiv, "ffn_moe_weights_norm"+sfx, nil, w2, sum)
		weights = b.typed(ir.OpReshape, "ffn_moe_weights_norm"+sfx+" (reshaped)", nil, t3(ir.F32, 1, nU), w2)
	}
	if s := hp.ExpertWeightsScale; s != 0 && s != 1 {
		weights = b.op(ir.OpScale, "ffn_moe_weights_scaled"+sfx, ir.Attrs{ir.AttrScale: float64(float32(s))}, weights)
	}
	x := b.typed(ir.OpReshape, "ffn_norm"+sfx+" (reshaped)", nil, t3(ir.F32, hp.NEmbd, 1), cur)
	up := b.op(ir.OpMulMatID, "ffn_moe_up"+sfx, nil, b.weight(blk+"ffn_up_exps.weight", false, hp.NEmbd, nFF, nE), x, selected)
	gate := b.op(ir.OpMulMatID, "ffn_moe_gate"+sfx, nil, b.weight(blk+"ffn_gate_exps.weight", false, hp.NEmbd, nFF, nE), x, selected)
	gate = b.op(ir.OpSilu, "ffn_moe_silu"+sfx, nil, gate)
	par := b.op(ir.OpMul, "ffn_moe_swiglu"+sfx, nil, gate, up)
	experts := b.op(ir.OpMulMatID, "ffn_moe_down"+sfx, nil, b.weight(blk+"ffn_down_exps.weight", false, nFF, hp.NEmbd, nE), par, selected)
	experts = b.op(ir.OpMul, "ffn_moe_weighted"+sfx, nil, experts, weights)
	if experts == nil {
		return nil
	}
	row := hp.NEmbd * 4
	slot := ir.Type{DType: ir.F32, Shape: ir.Shape{ir.C(hp.NEmbd), nTok, ir.C(1), ir.C(1)}}
	var out *ir.Node
	for e := int64(0); e < nU; e++ {
		v := b.view("ffn_moe_expert"+sfx, experts, slot, ir.C(e*row), [4]int64{4, row * nU, 0, 0})
		if out == nil {
			out = v
			continue
		}
		out = b.op(ir.OpAdd, "ffn_moe_out"+sfx, nil, out, v)
	}
	if nU == 1 {
		out = b.typed(ir.OpCont, "ffn_moe_out"+sfx, nil, slot, out)
	}
	return out
}
