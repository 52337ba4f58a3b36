package models

import "github.com/irtool/irtool/ir"

// The parts of the gemma3 graph (llama.cpp src/models/gemma3.cpp) the
// llama-family builder does not share: the sliding-window mask and the
// GELU-gated FFN.

// swaMask is llama.cpp's KQ_mask_swa: the causal mask with the KV cells
// window or more positions behind each token hidden (the sliding-window
// layers of gemma3). llama.cpp fills it on the host from the cells'
// positions; here it is an op on the causal mask and the token positions,
// which relies on the session's layout (cell c holds position c).
func (b *builder) swaMask(mask, pos *ir.Node) *ir.Node {
	return b.op(ir.OpSWAMask, "KQ_mask_swa", ir.Attrs{ir.AttrWindow: b.hp.SWAWindow}, mask, pos)
}

// gegluFFN is build_ffn(..., LLM_FFN_GELU, LLM_FFN_PAR) (gemma):
// down(gelu(gate(x)) * up(x)). llama.cpp fuses gelu and the product into
// ggml_geglu_split, whose CPU kernel computes the same values as gelu
// followed by mul.
func (b *builder) gegluFFN(lc *layerCtx, cur *ir.Node) *ir.Node {
	hp := b.hp
	up := b.op(ir.OpMulMat, "ffn_up"+lc.sfx, nil, b.weight(lc.blk+"ffn_up.weight", false, hp.NEmbd, hp.NFF), cur)
	gate := b.op(ir.OpMulMat, "ffn_gate"+lc.sfx, nil, b.weight(lc.blk+"ffn_gate.weight", false, hp.NEmbd, hp.NFF), cur)
	gate = b.op(ir.OpGelu, "ffn_gelu"+lc.sfx, nil, gate)
	par := b.op(ir.OpMul, "ffn_geglu"+lc.sfx, nil, gate, up)
	return b.op(ir.OpMulMat, "ffn_out"+lc.sfx, nil, b.weight(lc.blk+"ffn_down.weight", false, hp.NFF, hp.NEmbd), par)
}
