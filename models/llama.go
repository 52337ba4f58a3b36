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
	return b.typed(ir.OpView, name, ir.Attrs{"offset": offset, "nb": nb[:]}, t, args...)
}

func (b *builder) ropeAttrs() ir.Attrs {
	hp := b.hp
	return ir.Attrs{
		"n_dims":      hp.NRot,
		"mode":        hp.RopeMode,
		"n_ctx_orig":  hp.NCtxOrig,
		"freq_base":   float64(float32(hp.RopeFreqBase)),
		"freq_scale":  float64(float32(hp.RopeFreqScale)),
		"ext_factor":  float64(float32(hp.RopeExtFactor)),
		"attn_factor": float64(float32(hp.RopeAttn)),
		"beta_fast":   32.0,
		"beta_slow":   1.0,
	}
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
	nEmbdK, nEmbdV := hp.HeadDimK*hp.NHeadKV, hp.HeadDimV*hp.NHeadKV
	kvType := opts.KVType.DType()
	kvElt := kvType.TypeSize()
	nCtx := opts.NCtx

	tokEmbd := b.weight("token_embd.weight", false, nEmbd, hp.NVocab)
	inpTokens := b.input("inp_tokens", ir.T(ir.I32, nTok))
	inpL := b.op(ir.OpGetRows, "inp_embd", nil, tokEmbd, inpTokens)
	inpPos := b.input("inp_pos", ir.T(ir.I32, nTok))
	var kvIdx *ir.Node
	if opts.KVWrite == KVSetRows {
		kvIdx = b.input("kv_idx", ir.T(ir.I64, nTok))
	}
	mask := b.input("KQ_mask", ir.T(ir.F32, ir.S(SymKV), ir.Padded(SymTokens, MaskPad)))
	ropeFactors := b.weight("rope_freqs.weight", true, hp.NRot/2)
	kqScale := hp.AttnScale
	if kqScale == 0 {
		kqScale = 1 / math.Sqrt(float64(hp.HeadDimK))
	}
	kqScale = float64(float32(kqScale))
	eps := float64(float32(hp.RMSEps))
	var outIDs *ir.Node

	for il := int64(0); il < hp.NLayer; il++ {
		b.layer = int(il)
		sfx := "-" + strconv.FormatInt(il, 10)
		blk := "blk." + strconv.FormatInt(il, 10) + "."
		inpSA := inpL

		cur := b.op(ir.OpRMSNorm, "norm"+sfx, ir.Attrs{"eps": eps}, inpL)
		cur = b.op(ir.OpMul, "attn_norm"+sfx, nil, cur, b.weight(blk+"attn_norm.weight", false, nEmbd))

		proj := func(w, bias, name string, nOut int64) *ir.Node {
			x := b.op(ir.OpMulMat, name+sfx, nil, b.weight(blk+w, false, nEmbd, nOut), cur)
			if bw := b.weight(blk+bias, true, nOut); bw != nil {
				x = b.op(ir.OpAdd, name+sfx, nil, x, bw)
			}
			return x
		}
		rope := func(x *ir.Node, name string) *ir.Node {
			args := []*ir.Node{x, inpPos}
			if ropeFactors != nil {
				args = append(args, ropeFactors)
			}
			return b.op(ir.OpRope, name, b.ropeAttrs(), args...)
		}
		q := proj("attn_q.weight", "attn_q.bias", "Qcur", hp.HeadDimK*hp.NHead)
		q = rope(b.reshape("Qcur"+sfx+" (reshaped)", q, hp.HeadDimK, hp.NHead, SymTokens), "Qcur"+sfx)
		k := proj("attn_k.weight", "attn_k.bias", "Kcur", nEmbdK)
		k = rope(b.reshape("Kcur"+sfx+" (reshaped)", k, hp.HeadDimK, hp.NHeadKV, SymTokens), "Kcur"+sfx)
		v := proj("attn_v.weight", "attn_v.bias", "Vcur", nEmbdV)

		var kView, vView *ir.Node
		kRow := nEmbdK * kvElt
		if opts.KVWrite == KVSetRows {
			cacheK := b.typed(ir.OpState, "cache_k_l"+strconv.FormatInt(il, 10), nil, ir.T(kvType, nEmbdK, nCtx))
			cacheV := b.typed(ir.OpState, "cache_v_l"+strconv.FormatInt(il, 10), nil, ir.T(kvType, nEmbdV, nCtx))
			kRows := b.reshape("Kcur"+sfx+" (rows)", k, nEmbdK, SymTokens)
			wk := b.op(ir.OpSetRows, "k_cache_set"+sfx, nil, cacheK, kRows, kvIdx)
			wv := b.op(ir.OpSetRows, "v_cache_set"+sfx, nil, cacheV, v, kvIdx)
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
				kcv.Attrs["nb"] = []int64{kvElt, 0, 0, 0}
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
		qp := b.op(ir.OpPermute, "q"+sfx, ir.Attrs{"axes": []int64{0, 2, 1, 3}}, q)
		kq := b.op(ir.OpMulMat, "kq"+sfx, nil, kView, qp)
		kq = b.op(ir.OpSoftMax, "kq_soft_max_ext"+sfx, ir.Attrs{"scale": kqScale, "max_bias": 0.0}, kq, mask)
		kqv := b.op(ir.OpMulMat, "kqv"+sfx, nil, vView, kq)
		merged := b.op(ir.OpPermute, "kqv_merged"+sfx, ir.Attrs{"axes": []int64{0, 2, 1, 3}}, kqv)
		cur = b.typed(ir.OpCont, "kqv_merged_cont"+sfx, nil, ir.T(ir.F32, hp.HeadDimV*hp.NHead, SymTokens), merged)
		cur = b.op(ir.OpMulMat, "kqv_out"+sfx, nil, b.weight(blk+"attn_output.weight", false, hp.HeadDimV*hp.NHead, nEmbd), cur)
		if bo := b.weight(blk+"attn_output.bias", true, nEmbd); bo != nil {
			cur = b.op(ir.OpAdd, "kqv_out"+sfx, nil, cur, bo)
		}
		if il == hp.NLayer-1 {
			outIDs = b.input("inp_out_ids", ir.T(ir.I32, SymOutputs))
			cur = b.op(ir.OpGetRows, "out_rows"+sfx, nil, cur, outIDs)
			inpSA = b.op(ir.OpGetRows, "out_rows_sa"+sfx, nil, inpSA, outIDs)
		}
		ffnInp := b.op(ir.OpAdd, "ffn_inp"+sfx, nil, cur, inpSA)
		cur = b.op(ir.OpRMSNorm, "norm"+sfx, ir.Attrs{"eps": eps}, ffnInp)
		cur = b.op(ir.OpMul, "ffn_norm"+sfx, nil, cur, b.weight(blk+"ffn_norm.weight", false, nEmbd))
		gate := b.op(ir.OpMulMat, "ffn_gate"+sfx, nil, b.weight(blk+"ffn_gate.weight", false, nEmbd, hp.NFF), cur)
		gate = b.op(ir.OpSilu, "ffn_silu"+sfx, nil, gate)
		up := b.op(ir.OpMulMat, "ffn_up"+sfx, nil, b.weight(blk+"ffn_up.weight", false, nEmbd, hp.NFF), cur)
		par := b.op(ir.OpMul, "ffn_gate_par"+sfx, nil, gate, up)
		cur = b.op(ir.OpMulMat, "ffn_out"+sfx, nil, b.weight(blk+"ffn_down.weight", false, hp.NFF, nEmbd), par)
		inpL = b.op(ir.OpAdd, "l_out"+sfx, nil, cur, ffnInp)
	}
	b.layer = -1
	cur := b.op(ir.OpRMSNorm, "norm", ir.Attrs{"eps": eps}, inpL)
	cur = b.op(ir.OpMul, "result_norm", nil, cur, b.weight("output_norm.weight", false, nEmbd))
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
