package models

import (
	"fmt"
	"math"
	"strconv"

	"github.com/irtool/irtool/ir"
)

// builder emits the llama / qwen2 graph in llama.cpp's node order.
type builder struct {
	hp     HParams
	lookup WeightLookup
	opts   Options
	g      *ir.Graph
	err    error
	layer  int
}

func (b *builder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// op adds an inferred node with a name and the current layer.
func (b *builder) op(op ir.Op, name string, attrs ir.Attrs, args ...*ir.Node) *ir.Node {
	if b.err != nil {
		return nil
	}
	for _, a := range args {
		if a == nil {
			b.fail(fmt.Errorf("%s %q: missing operand", op, name))
			return nil
		}
	}
	n, err := b.g.Add(op, args, attrs)
	if err != nil {
		b.fail(fmt.Errorf("node %q: %w", name, err))
		return nil
	}
	n.Name, n.Layer = name, b.layer
	return n
}

// typed adds a node with a declared type.
func (b *builder) typed(op ir.Op, name string, attrs ir.Attrs, t ir.Type, args ...*ir.Node) *ir.Node {
	if b.err != nil {
		return nil
	}
	for _, a := range args {
		if a == nil {
			b.fail(fmt.Errorf("%s %q: missing operand", op, name))
			return nil
		}
	}
	n, err := b.g.AddTyped(op, args, attrs, t)
	if err != nil {
		b.fail(fmt.Errorf("node %q: %w", name, err))
		return nil
	}
	n.Name, n.Layer = name, b.layer
	return n
}

// weight adds a weight leaf, checking its dims against what the
// architecture expects (ggml order). Optional weights return nil when absent.
func (b *builder) weight(name string, optional bool, want ...int64) *ir.Node {
	if b.err != nil {
		return nil
	}
	w, ok := b.lookup(name)
	if !ok {
		if !optional {
			b.fail(fmt.Errorf("missing tensor %q", name))
		}
		return nil
	}
	for i, d := range want {
		if w.Ne[i] != d {
			b.fail(fmt.Errorf("tensor %q has dims %v, want %v", name, w.Ne, want))
			return nil
		}
	}
	for i := len(want); i < 4; i++ {
		if w.Ne[i] != 1 {
			b.fail(fmt.Errorf("tensor %q has dims %v, want %v", name, w.Ne, want))
			return nil
		}
	}
	if !w.Type.Known() {
		b.fail(fmt.Errorf("tensor %q has unknown type %d", name, uint32(w.Type)))
		return nil
	}
	t := ir.Type{DType: w.Type, Shape: ir.Sh(w.Ne[0], w.Ne[1], w.Ne[2], w.Ne[3])}
	return b.typed(ir.OpWeight, name, nil, t)
}

func (b *builder) input(name string, t ir.Type) *ir.Node {
	return b.typed(ir.OpInput, name, nil, t)
}

func (b *builder) reshape(name string, x *ir.Node, dims ...any) *ir.Node {
	if x == nil {
		return nil
	}
	return b.typed(ir.OpReshape, name, nil, ir.T(x.Type.DType, dims...), x)
}

func (b *builder) view(name string, x *ir.Node, t ir.Type, offset ir.Dim, nb [4]int64, deps ...*ir.Node) *ir.Node {
	args := append([]*ir.Node{x}, deps...)
	return b.typed(ir.OpView, name, ir.Attrs{ir.AttrOffset: offset, ir.AttrNB: nb[:]}, t, args...)
}

// ropeAttrs are ggml_rope_ext's parameters for layer il (sliding-window
// layers may rotate with their own base and scale).
func (b *builder) ropeAttrs(il int64) ir.Attrs {
	hp := b.hp
	base, scale := hp.RopeFreqBase, hp.RopeFreqScale
	if hp.IsSWA(il) {
		base, scale = hp.RopeFreqBaseSWA, hp.RopeFreqScaleSWA
	}
	fast, slow := hp.RopeBetaFast, hp.RopeBetaSlow
	if fast == 0 {
		fast = 32
	}
	if slow == 0 {
		slow = 1
	}
	return ir.Attrs{
		ir.AttrNDims:      hp.NRot,
		ir.AttrMode:       hp.RopeMode,
		ir.AttrNCtxOrig:   hp.NCtxOrig,
		ir.AttrFreqBase:   float64(float32(base)),
		ir.AttrFreqScale:  float64(float32(scale)),
		ir.AttrExtFactor:  float64(float32(hp.RopeExtFactor)),
		ir.AttrAttnFactor: float64(float32(hp.RopeAttn)),
		ir.AttrBetaFast:   float64(float32(fast)),
		ir.AttrBetaSlow:   float64(float32(slow)),
	}
}

// layerCtx is what one layer's sub-builders share.
type layerCtx struct {
	il     int64
	sfx    string // "-<il>"
	blk    string // "blk.<il>."
	inpPos *ir.Node
	mask   *ir.Node // the layer's KQ mask (sliding-window layers get their own)
	kvIdx  *ir.Node
	rope   *ir.Node // rope_freqs.weight or nil
}

// norm is build_norm(x, w, NULL, LLM_NORM_RMS): rms_norm then mul.
func (b *builder) norm(x *ir.Node, w *ir.Node, normName, mulName string) *ir.Node {
	eps := float64(float32(b.hp.RMSEps))
	cur := b.op(ir.OpRMSNorm, normName, ir.Attrs{ir.AttrEps: eps}, x)
	return b.op(ir.OpMul, mulName, nil, cur, w)
}

func (b *builder) build() (*ir.Graph, error) {
	hp, opts := b.hp, b.opts
	g := ir.New(hp.Arch)
	g.Meta = map[string]string{
		"arch":     hp.Arch,
		"n_ctx":    strconv.FormatInt(opts.NCtx, 10),
		"n_layer":  strconv.FormatInt(hp.NLayer, 10),
		"n_vocab":  strconv.FormatInt(hp.NVocab, 10),
		"kv_type":  opts.KVType.String(),
		"kv_write": opts.KVWrite.String(),
	}
	b.g = g
	b.layer = -1
	nEmbd, nTok := hp.NEmbd, ir.S(SymTokens)

	tokEmbd := b.weight("token_embd.weight", false, nEmbd, hp.NVocab)
	inpTokens := b.input(InputTokens, ir.T(ir.I32, nTok))
	inpL := b.op(ir.OpGetRows, "inp_embd", nil, tokEmbd, inpTokens)
	if hp.EmbdScale != 0 {
		inpL = b.op(ir.OpScale, "inp_scaled", ir.Attrs{ir.AttrScale: float64(float32(hp.EmbdScale))}, inpL)
	}
	inpPos := b.input(InputPos, ir.T(ir.I32, nTok))
	var kvIdx *ir.Node
	if opts.KVWrite == KVSetRows {
		kvIdx = b.input(InputKVIdx, ir.T(ir.I64, nTok))
	}
	mask := b.input(InputMask, ir.T(ir.F32, ir.S(SymKV), ir.Padded(SymTokens, MaskPad)))
	var maskSWA *ir.Node
	for il := int64(0); il < hp.NLayer && maskSWA == nil; il++ {
		if hp.IsSWA(il) {
			maskSWA = b.swaMask(mask, inpPos)
		}
	}
	ropeFactors := b.weight("rope_freqs.weight", true, hp.NRot/2)
	if ropeFactors == nil && hp.Arch == "phi3" {
		ropeFactors = b.phi3RopeFactors()
	}

	for il := int64(0); il < hp.NLayer; il++ {
		b.layer = int(il)
		lc := &layerCtx{il: il, sfx: "-" + strconv.FormatInt(il, 10), blk: "blk." + strconv.FormatInt(il, 10) + ".",
			inpPos: inpPos, mask: mask, kvIdx: kvIdx, rope: ropeFactors}
		if hp.IsSWA(il) {
			lc.mask = maskSWA
		}
		inpSA := inpL
		cur := b.norm(inpL, b.weight(lc.blk+"attn_norm.weight", false, nEmbd), "norm"+lc.sfx, "attn_norm"+lc.sfx)
		cur = b.attention(lc, cur)
		if il == hp.NLayer-1 {
			outIDs := b.input(InputOutIDs, ir.T(ir.I32, SymOutputs))
			cur = b.op(ir.OpGetRows, "out_rows"+lc.sfx, nil, cur, outIDs)
			inpSA = b.op(ir.OpGetRows, "out_rows_sa"+lc.sfx, nil, inpSA, outIDs)
		}
		if hp.Arch == "gemma3" {
			cur = b.norm(cur, b.weight(lc.blk+"post_attention_norm.weight", false, nEmbd), "norm"+lc.sfx, "attn_post_norm"+lc.sfx)
		}
		ffnInp := b.op(ir.OpAdd, "ffn_inp"+lc.sfx, nil, cur, inpSA)
		cur = b.norm(ffnInp, b.weight(lc.blk+"ffn_norm.weight", false, nEmbd), "norm"+lc.sfx, "ffn_norm"+lc.sfx)
		switch {
		case hp.NExpert > 0:
			cur = b.moeFFN(lc, cur)
		case hp.Arch == "phi3":
			cur = b.phi3FFN(lc, cur)
		case hp.Arch == "gemma3":
			cur = b.gegluFFN(lc, cur)
			cur = b.norm(cur, b.weight(lc.blk+"post_ffw_norm.weight", false, nEmbd), "norm"+lc.sfx, "ffn_post_norm"+lc.sfx)
		default:
			cur = b.swigluFFN(lc, cur)
		}
		inpL = b.op(ir.OpAdd, "l_out"+lc.sfx, nil, cur, ffnInp)
	}
	b.layer = -1
	cur := b.norm(inpL, b.weight("output_norm.weight", false, nEmbd), "norm", "result_norm")
	out := b.weight("output.weight", true, nEmbd, hp.NVocab)
	if out == nil {
		out = tokEmbd // tied embeddings
	}
	logits := b.op(ir.OpMulMat, "result_output", nil, out, cur)
	if b.err != nil {
		return nil, b.err
	}
	g.Outputs = []*ir.Node{logits}
	if err := ir.Verify(g); err != nil {
		return nil, err
	}
	return g, nil
}

// qkv projects Q, K and V, as [head_dim, heads, n_tokens] (Q, K) and
// [n_embd_v, n_tokens] (V). LLaMA/Qwen2 interleave the RoPE of Q and K
// with the projections (llama.cpp's node order); the builders of
// qwen3, qwen3moe, gemma3 and phi3 project all three first.
func (b *builder) qkv(lc *layerCtx, cur *ir.Node) (q, k, v *ir.Node) {
	hp := b.hp
	nEmbd := hp.NEmbd
	nQ, nK, nV := hp.HeadDimK*hp.NHead, hp.HeadDimK*hp.NHeadKV, hp.HeadDimV*hp.NHeadKV
	proj := func(w, bias, name string, nOut int64) *ir.Node {
		x := b.op(ir.OpMulMat, name+lc.sfx, nil, b.weight(lc.blk+w, false, nEmbd, nOut), cur)
		if bw := b.weight(lc.blk+bias, true, nOut); bw != nil {
			x = b.op(ir.OpAdd, name+lc.sfx, nil, x, bw)
		}
		return x
	}
	switch hp.Arch {
	case "phi3":
		// One fused projection; Q, K, V are views of its rows.
		qkv := proj("attn_qkv.weight", "attn_qkv.bias", "wqkv", nQ+nK+nV)
		row := (nQ + nK + nV) * 4
		q = b.view("Qcur"+lc.sfx, qkv, ir.T(ir.F32, hp.HeadDimK, hp.NHead, SymTokens), ir.C(0),
			[4]int64{4, hp.HeadDimK * 4, row, row})
		k = b.view("Kcur"+lc.sfx, qkv, ir.T(ir.F32, hp.HeadDimK, hp.NHeadKV, SymTokens), ir.C(nQ*4),
			[4]int64{4, hp.HeadDimK * 4, row, row})
		vv := b.view("Vcur"+lc.sfx, qkv, ir.T(ir.F32, nV, SymTokens), ir.C((nQ+nK)*4), [4]int64{4, row, 0, 0})
		v = b.typed(ir.OpCont, "Vcur"+lc.sfx, nil, ir.T(ir.F32, nV, SymTokens), vv)
		return q, k, v
	case "llama", "qwen2", "mistral":
		q = proj("attn_q.weight", "attn_q.bias", "Qcur", nQ)
		q = b.rope(lc, b.reshape("Qcur"+lc.sfx+" (reshaped)", q, hp.HeadDimK, hp.NHead, SymTokens), "Qcur"+lc.sfx)
		k = proj("attn_k.weight", "attn_k.bias", "Kcur", nK)
		k = b.rope(lc, b.reshape("Kcur"+lc.sfx+" (reshaped)", k, hp.HeadDimK, hp.NHeadKV, SymTokens), "Kcur"+lc.sfx)
		v = proj("attn_v.weight", "attn_v.bias", "Vcur", nV)
		return q, k, v
	}
	q = proj("attn_q.weight", "attn_q.bias", "Qcur", nQ)
	k = proj("attn_k.weight", "attn_k.bias", "Kcur", nK)
	v = proj("attn_v.weight", "attn_v.bias", "Vcur", nV)
	q = b.reshape("Qcur"+lc.sfx+" (reshaped)", q, hp.HeadDimK, hp.NHead, SymTokens)
	k = b.reshape("Kcur"+lc.sfx+" (reshaped)", k, hp.HeadDimK, hp.NHeadKV, SymTokens)
	return q, k, v
}

// rope rotates x [head_dim, heads, n_tokens] by the positions.
func (b *builder) rope(lc *layerCtx, x *ir.Node, name string) *ir.Node {
	args := []*ir.Node{x, lc.inpPos}
	if lc.rope != nil {
		args = append(args, lc.rope)
	}
	return b.op(ir.OpRope, name, b.ropeAttrs(lc.il), args...)
}

// attention is the self-attention block from the normed input to the
// output projection (kqv_out), KV cache writes included.
func (b *builder) attention(lc *layerCtx, cur *ir.Node) *ir.Node {
	hp, opts := b.hp, b.opts
	il, sfx := lc.il, lc.sfx
	nEmbdK, nEmbdV := hp.HeadDimK*hp.NHeadKV, hp.HeadDimV*hp.NHeadKV
	kvType := opts.KVType.DType()
	kvElt := kvType.TypeSize()
	nCtx := opts.NCtx

	q, k, v := b.qkv(lc, cur)
	switch hp.Arch {
	case "qwen3", "qwen3moe", "gemma3":
		// Per-head RMS norms of Q and K (on the [head_dim, heads, tokens]
		// view), then RoPE.
		q = b.norm(q, b.weight(lc.blk+"attn_q_norm.weight", false, hp.HeadDimK), "norm"+sfx, "Qcur_normed"+sfx)
		q = b.rope(lc, q, "Qcur"+sfx)
		k = b.norm(k, b.weight(lc.blk+"attn_k_norm.weight", false, hp.HeadDimK), "norm"+sfx, "Kcur_normed"+sfx)
		k = b.rope(lc, k, "Kcur"+sfx)
	case "phi3":
		q = b.rope(lc, q, "Qcur"+sfx)
		k = b.rope(lc, k, "Kcur"+sfx)
	}
	kqScale := hp.AttnScale
	if kqScale == 0 {
		kqScale = 1 / math.Sqrt(float64(hp.HeadDimK))
	}
	if hp.QScale != 0 {
		q = b.op(ir.OpScale, "Qcur"+sfx, ir.Attrs{ir.AttrScale: float64(float32(hp.QScale))}, q)
		kqScale = 1
	}
	kqScale = float64(float32(kqScale))

	var kView, vView *ir.Node
	kRow := nEmbdK * kvElt
	if opts.KVWrite == KVSetRows {
		cacheK := b.typed(ir.OpState, "cache_k_l"+strconv.FormatInt(il, 10), nil, ir.T(kvType, nEmbdK, nCtx))
		cacheV := b.typed(ir.OpState, "cache_v_l"+strconv.FormatInt(il, 10), nil, ir.T(kvType, nEmbdV, nCtx))
		kRows := b.reshape("Kcur"+sfx+" (rows)", k, nEmbdK, SymTokens)
		wk := b.op(ir.OpSetRows, "k_cache_set"+sfx, nil, cacheK, kRows, lc.kvIdx)
		wv := b.op(ir.OpSetRows, "v_cache_set"+sfx, nil, cacheV, v, lc.kvIdx)
		vRow := nEmbdV * kvElt
		vView = b.view("v"+sfx, wv, ir.T(kvType, ir.S(SymKV), hp.HeadDimV, hp.NHeadKV), ir.C(0),
			[4]int64{vRow, kvElt, hp.HeadDimV * kvElt, hp.HeadDimV * kvElt * hp.NHeadKV})
		kView = b.view("k"+sfx, wk, ir.T(kvType, hp.HeadDimK, ir.S(SymKV), hp.NHeadKV), ir.C(0),
			[4]int64{kvElt, kRow, hp.HeadDimK * kvElt, kRow * nCtx})
	} else {
		// llama.cpp c392e50: K cache is 1-D, V cache is stored transposed.
		cacheK := b.typed(ir.OpState, "cache_k_l"+strconv.FormatInt(il, 10), nil, ir.T(kvType, nEmbdK*nCtx))
		cacheV := b.typed(ir.OpState, "cache_v_l"+strconv.FormatInt(il, 10), nil, ir.T(kvType, nEmbdV*nCtx))
		kcv := b.view("k_cache_view"+sfx, cacheK, ir.T(kvType, ir.Scaled(SymTokens, nEmbdK)), ir.Scaled(SymKVHead, kRow),
			[4]int64{kvElt, 0, 0, 0})
		if kcv != nil {
			// ggml sets the outer strides of a 1-D view to its size; only nb[0] matters.
			kcv.Attrs[ir.AttrNB] = []int64{kvElt, 0, 0, 0}
		}
		wk := b.op(ir.OpCpy, "k_cache_view"+sfx+" (copy of Kcur"+sfx+")", nil, k, kcv)
		vt := b.op(ir.OpTransp, "Vcur"+sfx+" (transposed)", nil, v)
		vcv := b.view("v_cache_view"+sfx, cacheV, ir.T(kvType, SymTokens, nEmbdV), ir.Scaled(SymKVHead, kvElt),
			[4]int64{kvElt, nCtx * kvElt, 0, 0})
		wv := b.op(ir.OpCpy, "v_cache_view"+sfx+" (copy of Vcur"+sfx+" (transposed))", nil, vt, vcv)
		vView = b.view("v"+sfx, cacheV, ir.T(kvType, ir.S(SymKV), hp.HeadDimV, hp.NHeadKV), ir.C(0),
			[4]int64{kvElt, nCtx * kvElt, nCtx * kvElt * hp.HeadDimV, nCtx * kvElt * nEmbdV}, wv)
		kView = b.view("k"+sfx, cacheK, ir.T(kvType, hp.HeadDimK, ir.S(SymKV), hp.NHeadKV), ir.C(0),
			[4]int64{kvElt, kRow, hp.HeadDimK * kvElt, kRow * nCtx}, wk)
	}
	qp := b.op(ir.OpPermute, "q"+sfx, ir.Attrs{ir.AttrAxes: []int64{0, 2, 1, 3}}, q)
	kq := b.op(ir.OpMulMat, "kq"+sfx, nil, kView, qp)
	kq = b.op(ir.OpSoftMax, "kq_soft_max_ext"+sfx, ir.Attrs{ir.AttrScale: kqScale, ir.AttrMaxBias: 0.0}, kq, lc.mask)
	kqv := b.op(ir.OpMulMat, "kqv"+sfx, nil, vView, kq)
	merged := b.op(ir.OpPermute, "kqv_merged"+sfx, ir.Attrs{ir.AttrAxes: []int64{0, 2, 1, 3}}, kqv)
	cur = b.typed(ir.OpCont, "kqv_merged_cont"+sfx, nil, ir.T(ir.F32, hp.HeadDimV*hp.NHead, SymTokens), merged)
	cur = b.op(ir.OpMulMat, "kqv_out"+sfx, nil, b.weight(lc.blk+"attn_output.weight", false, hp.HeadDimV*hp.NHead, hp.NEmbd), cur)
	if bo := b.weight(lc.blk+"attn_output.bias", true, hp.NEmbd); bo != nil {
		cur = b.op(ir.OpAdd, "kqv_out"+sfx, nil, cur, bo)
	}
	return cur
}

// swigluFFN is build_ffn(..., LLM_FFN_SILU, LLM_FFN_PAR): down(silu(gate(x)) * up(x)).
// llama.cpp c392e50 (the llama/qwen2 reference graphs) projects the gate
// first; 3f545bec's build_ffn projects up first and fuses silu and the
// product (ggml_swiglu_split), the order the qwen3 builder keeps.
func (b *builder) swigluFFN(lc *layerCtx, cur *ir.Node) *ir.Node {
	hp := b.hp
	var gate, up *ir.Node
	projUp := func() {
		up = b.op(ir.OpMulMat, "ffn_up"+lc.sfx, nil, b.weight(lc.blk+"ffn_up.weight", false, hp.NEmbd, hp.NFF), cur)
	}
	if hp.Arch == "qwen3" {
		projUp()
	}
	gate = b.op(ir.OpMulMat, "ffn_gate"+lc.sfx, nil, b.weight(lc.blk+"ffn_gate.weight", false, hp.NEmbd, hp.NFF), cur)
	gate = b.op(ir.OpSilu, "ffn_silu"+lc.sfx, nil, gate)
	if up == nil {
		projUp()
	}
	par := b.op(ir.OpMul, "ffn_gate_par"+lc.sfx, nil, gate, up)
	return b.op(ir.OpMulMat, "ffn_out"+lc.sfx, nil, b.weight(lc.blk+"ffn_down.weight", false, hp.NFF, hp.NEmbd), par)
}
