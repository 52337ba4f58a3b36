package models

import "github.com/irtool/irtool/ir"

// The parts of the Phi-3 graph (llama.cpp src/models/phi3.cpp) the
// llama-family builder does not share: the rope factors and the fused
// gate+up FFN.

// phi3RopeFactors picks Phi-3's per-layer rope factors as llama.cpp's
// get_rope_factors does: the long factors when the context exceeds the
// original one, else the short ones (absent in most files).
func (b *builder) phi3RopeFactors() *ir.Node {
	name := "rope_factors_short.weight"
	if b.opts.NCtx > b.hp.NCtxOrig {
		name = "rope_factors_long.weight"
	}
	return b.weight(name, true, b.hp.NRot/2)
}

// phi3FFN is Phi-3's fused gate+up: one projection to 2*n_ff rows, then
// ggml_swiglu (silu of the first half times the second half), then down.
func (b *builder) phi3FFN(lc *layerCtx, cur *ir.Node) *ir.Node {
	hp := b.hp
	up := b.op(ir.OpMulMat, "ffn_up"+lc.sfx, nil, b.weight(lc.blk+"ffn_up.weight", false, hp.NEmbd, 2*hp.NFF), cur)
	if up == nil {
		return nil
	}
	row, rows := 2*hp.NFF*4, up.Type.Shape[1] // n_tokens, or n_outputs in the last layer
	half := ir.Type{DType: ir.F32, Shape: ir.Shape{ir.C(hp.NFF), rows, ir.C(1), ir.C(1)}}
	gate := b.view("ffn_gate"+lc.sfx, up, half, ir.C(0), [4]int64{4, row, 0, 0})
	upv := b.view("ffn_up_half"+lc.sfx, up, half, ir.C(hp.NFF*4), [4]int64{4, row, 0, 0})
	gate = b.op(ir.OpSilu, "ffn_silu"+lc.sfx, nil, gate)
	par := b.op(ir.OpMul, "ffn_swiglu"+lc.sfx, nil, gate, upv)
	return b.op(ir.OpMulMat, "ffn_out"+lc.sfx, nil, b.weight(lc.blk+"ffn_down.weight", false, hp.NFF, hp.NEmbd), par)
}
