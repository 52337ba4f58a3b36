package ir

import (
	"encoding/binary"
	"math"
	"testing"
)

// The toy attention block used by the golden, layout and specialisation
// tests: n_embd 8, two heads of 4, a 16-slot f16 KV cache where K is written
// with set_rows (2-D cache) and V with cpy into a transposed 1-D cache, as
// llama.cpp does for its two KV-cache layouts. It uses every builtin op.
const (
	attnEmbd  = 8
	attnHeads = 2
	attnHead  = 4
	attnCtx   = 16
)

func attentionGraph(t testing.TB) *Graph {
	t.Helper()
	g := New("attention")
	g.Meta = map[string]string{"arch": "toy", "n_ctx": "16"}
	layer := -1
	add := func(name string, op Op, attrs Attrs, args ...*Node) *Node {
		n, err := g.Add(op, args, attrs)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		n.Name, n.Layer = name, layer
		return n
	}
	typed := func(name string, op Op, attrs Attrs, ty Type, args ...*Node) *Node {
		n, err := g.AddTyped(op, args, attrs, ty)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		n.Name, n.Layer = name, layer
		return n
	}
	const elt = 2 // f16 cache
	tokEmbd := typed("token_embd.weight", OpWeight, nil, T(F32, attnEmbd, 32))
	tokens := typed("inp_tokens", OpInput, nil, T(I32, "n_tokens"))
	pos := typed("inp_pos", OpInput, nil, T(I32, "n_tokens"))
	kvIdx := typed("kv_idx", OpInput, nil, T(I64, "n_tokens"))
	mask := typed("KQ_mask", OpInput, nil, T(F32, "n_kv", Padded("n_tokens", 4)))
	ffData := make([]byte, 8)
	binary.LittleEndian.PutUint32(ffData, math.Float32bits(1))
	binary.LittleEndian.PutUint32(ffData[4:], math.Float32bits(0.5))
	freq := &Node{Op: OpConst, Type: T(F32, attnHead/2), Data: ffData, Name: "rope_freqs", Layer: -1}
	if err := CheckNode(freq); err != nil {
		t.Fatal(err)
	}
	g.append(freq)
	x := add("inp_embd", OpGetRows, nil, tokEmbd, tokens)

	layer = 0
	rope := Attrs{"n_dims": int64(attnHead), "mode": int64(0), "freq_base": 10000.0, "freq_scale": 1.0, "ext_factor": 0.0, "attn_factor": 1.0}
	cur := add("norm-0", OpRMSNorm, Attrs{"eps": 1e-05}, x)
	cur = add("attn_norm-0", OpMul, nil, cur, typed("blk.0.attn_norm.weight", OpWeight, nil, T(F32, attnEmbd)))
	q := add("Qcur-0", OpMulMat, nil, typed("blk.0.attn_q.weight", OpWeight, nil, T(F16, attnEmbd, attnEmbd)), cur)
	q = typed("Qcur-0 (reshaped)", OpReshape, nil, T(F32, attnHead, attnHeads, "n_tokens"), q)
	q = add("Qcur-0", OpRope, rope, q, pos, freq)
	k := add("Kcur-0", OpMulMat, nil, typed("blk.0.attn_k.weight", OpWeight, nil, T(F16, attnEmbd, attnEmbd)), cur)
	k = typed("Kcur-0 (reshaped)", OpReshape, nil, T(F32, attnHead, attnHeads, "n_tokens"), k)
	k = add("Kcur-0", OpRope, rope, k, pos, freq)
	v := add("Vcur-0", OpMulMat, nil, typed("blk.0.attn_v.weight", OpWeight, nil, T(F16, attnEmbd, attnEmbd)), cur)

	// K: a 2-D cache written row by row with set_rows.
	cacheK := typed("cache_k_l0", OpState, nil, T(F16, attnEmbd, attnCtx))
	kRows := typed("Kcur-0 (rows)", OpReshape, nil, T(F32, attnEmbd, "n_tokens"), k)
	kSet := add("k_cache_set-0", OpSetRows, nil, cacheK, kRows, kvIdx)
	kView := typed("k-0", OpView, Attrs{"offset": C(0), "nb": []int64{elt, attnEmbd * elt, attnHead * elt, attnEmbd * elt * attnCtx}},
		T(F16, attnHead, "n_kv", attnHeads), kSet)

	// V: a transposed 1-D cache written with cpy at kv_head.
	cacheV := typed("cache_v_l0", OpState, nil, T(F16, attnEmbd*attnCtx))
	vt := add("Vcur-0 (transposed)", OpTransp, nil, v)
	vDst := typed("v_cache_view-0", OpView, Attrs{"offset": Scaled("kv_head", elt), "nb": []int64{elt, attnCtx * elt, 0, 0}},
		T(F16, "n_tokens", attnEmbd), cacheV)
	vCpy := add("v_cache_view-0 (copy of Vcur-0 (transposed))", OpCpy, nil, vt, vDst)
	vView := typed("v-0", OpView, Attrs{"offset": C(0), "nb": []int64{elt, attnCtx * elt, attnCtx * elt * attnHead, attnCtx * elt * attnEmbd}},
		T(F16, "n_kv", attnHead, attnHeads), cacheV, vCpy)

	qp := add("q-0", OpPermute, Attrs{"axes": []int64{0, 2, 1, 3}}, q)
	kq := add("kq-0", OpMulMat, nil, kView, qp)
	kq = add("kq_soft_max_ext-0", OpSoftMax, Attrs{"scale": 0.5, "max_bias": 0.0}, kq, mask)
	kqv := add("kqv-0", OpMulMat, nil, vView, kq)
	merged := add("kqv_merged-0", OpPermute, Attrs{"axes": []int64{0, 2, 1, 3}}, kqv)
	cur = typed("kqv_merged_cont-0", OpCont, nil, T(F32, attnEmbd, "n_tokens"), merged)
	cur = add("kqv_out-0", OpMulMat, nil, typed("blk.0.attn_output.weight", OpWeight, nil, T(F16, attnEmbd, attnEmbd)), cur)
	outIDs := typed("inp_out_ids", OpInput, nil, T(I32, "n_outputs"))
	cur = add("out_rows-0", OpGetRows, nil, cur, outIDs)
	sa := add("out_rows_sa-0", OpGetRows, nil, x, outIDs)
	cur = add("l_out-0", OpAdd, nil, cur, sa)

	layer = -1
	cur = add("result_scaled", OpScale, Attrs{"scale": 0.125}, cur)
	cur = add("result_silu", OpSilu, nil, cur)
	cur = typed("result_output", OpCast, nil, T(F16, attnEmbd, "n_outputs"), cur)
	g.Outputs = []*Node{cur}
	if err := Verify(g); err != nil {
		t.Fatal(err)
	}
	return g
}

// attentionBindings is a prefill of 3 tokens at kv_head 5 with 16 slots visible.
var attentionBindings = Bindings{"n_tokens": 3, "n_kv": 16, "n_outputs": 1, "kv_head": 5}

func TestAttentionGraphCoversEveryBuiltinOp(t *testing.T) {
	g := attentionGraph(t)
	used := map[Op]bool{}
	for _, n := range g.Nodes {
		used[n.Op] = true
	}
	for _, op := range builtinOps {
		if !used[op] {
			t.Errorf("the attention graph does not use %s", op)
		}
	}
}
