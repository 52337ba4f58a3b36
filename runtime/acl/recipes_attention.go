//go:build cann

package acl

/*
#include "binding.h"
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/target"
)

// The attention family: attention (by matmuls and softmax, or fused) and
// swa_mask (the table of recipes.go lists their calls).

// bsnd is a ggml view whose dims 0..2 are (D, S, N) in some order as a
// BSND aclTensor: perm gives, for S, N and D, the ggml dim holding it.
func bsnd(t device.TensorDesc, s, n, d int) ([]int64, []int64, bool) {
	es := t.DType.TypeSize()
	if t.Ne[3] != 1 || es <= 0 {
		return nil, nil, false
	}
	for _, i := range []int{s, n, d} {
		if t.Nb[i]%es != 0 {
			return nil, nil, false
		}
	}
	return []int64{1, t.Ne[s], t.Ne[n], t.Ne[d]}, []int64{t.Nb[3] / es, t.Nb[s] / es, t.Nb[n] / es, t.Nb[d] / es}, true
}

// attention(q, k, v, mask?){scale, max_bias}: q [D, T, H, 1], k [D, KV,
// Hkv, 1], v [KV, Dv, Hkv, 1] (the transposed V view), mask [KV, T', 1, 1]
// with T' ≥ T; out f32 [Dv·H, T, 1, 1].
//
// The target's rule chooses (target.FIA, the kernel's Name): on Atlas A2
// it is aclnnFusedInferAttentionScoreV2 (fusedAttention), as ggml-cann
// runs attention with flash attention on and vLLM-Ascend runs it. In the
// "ggml" QuantMatmul mode (llama.cpp's arithmetic throughout) and where
// the target lowered it unfused (parts without FIA), it runs as ggml-cann
// runs llama.cpp's attention with flash attention off, which is also the
// arithmetic of ggml-cpu (matmulAttention): q cast to f16, scores = q16 ·
// k16 with f32 results (aclnnMatmul, the KV-head groups broadcast over
// their query heads), aclnnMuls by the scale, aclnnAdd of the mask,
// aclnnSoftmax, the probabilities cast to f16, and out = p16 · v16 with f32
// results written straight into the output's [Dv·H, T] layout.
// Options.FlashAttention forces the fused operator.
func attention(b *builder) error {
	if b.d.opts.FlashAttention || b.k.Name == target.FIA && b.d.quantMode() != QuantMatmulGGML {
		return fusedAttention(b)
	}
	return matmulAttention(b)
}

func matmulAttention(b *builder) error {
	q, k, v, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Inputs[2], b.k.Output
	if mb := b.k.Attrs.MaxBias(); mb != 0 {
		return b.unsupported("attention with ALiBi (max_bias %g) is not bound", mb)
	}
	D, T, H := q.Ne[0], q.Ne[1], q.Ne[2]
	KV, Hkv, Dv := k.Ne[1], k.Ne[2], v.Ne[1]
	switch {
	case k.DType != ir.F16 || v.DType != ir.F16 || q.DType != ir.F32 || out.DType != ir.F32:
		return b.unsupported("attention of %s q over %s/%s K/V: f32 q, f16 K and V", q.DType, k.DType, v.DType)
	case k.Ne[0] != D || v.Ne[0] != KV || v.Ne[2] != Hkv || Hkv == 0 || H%Hkv != 0 || out.Ne[0] != Dv*H || out.Ne[1] != T || q.Ne[3] != 1 || out.Nb[0] != 4:
		return b.unsupported("attention of q %v, k %v, v %v into %v", q.Ne, k.Ne, v.Ne, out.Ne)
	}
	for _, t := range []device.TensorDesc{q, k, v} {
		if t.Nb[0]%t.DType.TypeSize() != 0 || t.Nb[1]%t.DType.TypeSize() != 0 || t.Nb[2]%t.DType.TypeSize() != 0 {
			return b.unsupported("attention operand with strides %v", t.Nb)
		}
	}
	r := H / Hkv
	e := func(t device.TensorDesc, i int) int64 { return t.Nb[i] / t.DType.TypeSize() }
	// q → f16 [Hkv, r, T, D], contiguous, in the planned workspace.
	q16 := b.temp("f16 query", 2*H*T*D, 32)
	qin := b.tensor(C.ACL_FLOAT, []int64{H, T, D}, []int64{e(q, 2), e(q, 1), e(q, 0)}, 0, q.Addr)
	b.cast(qin, b.tensor(C.ACL_FLOAT16, []int64{H, T, D}, []int64{T * D, D, 1}, 0, q16), C.ACL_FLOAT16)

	// Scores and probabilities in the planned workspace (the attention
	// rule plans target.AttentionScoresBytes when it lowers attention
	// unfused). Where the target chose FIA and the "ggml" arithmetic runs
	// it unfused, the plan has no room for them: they come from the
	// shared scratch (buffer), outside the plan, as the "ggml" mode's
	// other scratch does (docs/RUNTIME.md).
	n := H * T * KV
	var scratch device.Ptr
	if b.k.Name == target.FIA {
		scratch = b.buffer(fmt.Sprintf("attention scores[%d,%d,%d]", H, T, KV), target.AttentionScoresBytes(H, T, KV))
	} else {
		scratch = b.temp("attention scores", target.AttentionScoresBytes(H, T, KV), 32)
	}
	s1, s2, p16 := scratch, scratch+device.Ptr(4*n), scratch+device.Ptr(8*n)
	sShape := []int64{Hkv, r, T, KV}
	sStrides := contiguous(sShape)
	view := func(dt C.int, p device.Ptr) C.uintptr_t { return b.tensor(dt, sShape, sStrides, 0, p) }

	qt := b.tensor(C.ACL_FLOAT16, []int64{Hkv, r, T, D}, []int64{r * T * D, T * D, D, 1}, 0, q16)
	kt := b.tensor(C.ACL_FLOAT16, []int64{Hkv, 1, D, KV}, []int64{e(k, 2), 0, e(k, 0), e(k, 1)}, 0, k.Addr)
	b.matmul(C.IRT_MATMUL, qt, kt, view(C.ACL_FLOAT, s1))
	b.muls(view(C.ACL_FLOAT, s1), view(C.ACL_FLOAT, s2), float32(b.k.Attrs.Scale()))
	cur, free := s2, s1
	if len(b.k.Inputs) > 3 {
		m := b.k.Inputs[3]
		if m.Ne[0] != KV || m.Ne[1] < T || !rows2D(m) || (m.DType != ir.F32 && m.DType != ir.F16) {
			return b.fail(device.ACLErrParamInvalid, "mask %s %v does not cover %d rows of %d keys", m.DType, m.Ne, T, KV)
		}
		md, _ := aclDType(m.DType)
		mt := b.tensor(md, []int64{1, 1, T, KV}, []int64{0, 0, e(m, 1), e(m, 0)}, 0, m.Addr)
		b.add(view(C.ACL_FLOAT, s2), mt, view(C.ACL_FLOAT, s1), 1)
		cur, free = s1, s2
	}
	b.withDim(C.IRT_SOFTMAX, 3, view(C.ACL_FLOAT, cur), view(C.ACL_FLOAT, free))
	b.cast(view(C.ACL_FLOAT, free), view(C.ACL_FLOAT16, p16), C.ACL_FLOAT16)
	pt := view(C.ACL_FLOAT16, p16)
	vt := b.tensor(C.ACL_FLOAT16, []int64{Hkv, 1, KV, Dv}, []int64{e(v, 2), 0, e(v, 0), e(v, 1)}, 0, v.Addr)
	b.matmul(C.IRT_MATMUL, pt, vt, b.tensor(C.ACL_FLOAT, []int64{Hkv, r, T, Dv}, []int64{r * Dv, Dv, out.Nb[1] / 4, 1}, 0, out.Addr))
	return b.err
}

// fusedAttention is attention through aclnnFusedInferAttentionScoreV2,
// BSND (its query, key, value and output contiguous, as CANN's page
// requires): the query cast to f16; the mask (0 or −inf per cell, llama.cpp's
// KQ_mask and swa mask) as the boolean attenMask, 1 where −mask ≥ 1
// (aclnnMuls by −1, aclnnGeScalar), one [T, KV] plane broadcast over the
// heads; scale, numKeyValueHeads for GQA, preTokens/nextTokens open
// (2147483647, the page's default: the mask alone bounds the window); the
// f16 output cast into out. A prefill whose head dim is not a multiple of
// 16 (target.FIAPadding) runs on Q, K and V zero-padded in the workspace.
func fusedAttention(b *builder) error {
	q, k, v, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Inputs[2], b.k.Output
	if mb := b.k.Attrs.MaxBias(); mb != 0 {
		return b.unsupported("attention with ALiBi (max_bias %g) is not bound", mb)
	}
	D, T, H := q.Ne[0], q.Ne[1], q.Ne[2]
	KV, Hkv := k.Ne[1], k.Ne[2]
	if k.DType != ir.F16 || v.DType != ir.F16 || q.DType != ir.F32 || out.DType != ir.F32 {
		return b.unsupported("attention of %s q over %s/%s K/V: aclnnFusedInferAttentionScoreV2 takes f16 (q cast from f32)", q.DType, k.DType, v.DType)
	}
	if k.Ne[0] != D || v.Ne[1] != D || v.Ne[0] != KV || v.Ne[2] != Hkv || Hkv == 0 || H%Hkv != 0 || out.Ne[0] != D*H || out.Ne[1] != T || out.Nb[0] != 4 {
		return b.unsupported("attention of q %v, k %v, v %v into %v", q.Ne, k.Ne, v.Ne, out.Ne)
	}
	qs, qst, ok := bsnd(q, 1, 2, 0)
	ks, kst, ok1 := bsnd(k, 1, 2, 0)
	vs, vst, ok2 := bsnd(v, 0, 2, 1)
	if !ok || !ok1 || !ok2 {
		return b.unsupported("q/K/V views with strides %v / %v / %v", q.Nb, k.Nb, v.Nb)
	}
	Dp := D
	if T > 1 && D%16 != 0 {
		Dp = (D + 15) / 16 * 16 // target.FIAPadding
	}
	bsnd16 := func(p device.Ptr, s, n int64) C.uintptr_t {
		sh := []int64{1, s, n, Dp}
		return b.tensor(C.ACL_FLOAT16, sh, contiguous(sh), 0, p)
	}
	// the first D lanes of a padded BSND buffer
	lanes := func(p device.Ptr, s, n int64) C.uintptr_t {
		return b.tensor(C.ACL_FLOAT16, []int64{1, s, n, D}, []int64{s * n * Dp, n * Dp, Dp, 1}, 0, p)
	}
	q16 := b.temp("f16 query", 2*T*H*Dp, 32)
	kt := b.tensor(C.ACL_FLOAT16, ks, kst, 0, k.Addr)
	vt := b.tensor(C.ACL_FLOAT16, vs, vst, 0, v.Addr)
	qin := b.tensor(C.ACL_FLOAT, qs, qst, 0, q.Addr)
	if Dp != D {
		kp := b.temp("padded key", 2*KV*Hkv*Dp, 32)
		vp := b.temp("padded value", 2*KV*Hkv*Dp, 32)
		span := int64(vp-q16)/2 + KV*Hkv*Dp
		zero := b.table("f16 zero", make([]byte, 32))
		b.op(C.IRT_INPLACECOPY, b.tensor(C.ACL_FLOAT16, []int64{span}, []int64{1}, 0, q16), b.tensor(C.ACL_FLOAT16, []int64{1}, []int64{1}, 0, zero))
		b.cast(qin, lanes(q16, T, H), C.ACL_FLOAT16)
		b.op(C.IRT_INPLACECOPY, lanes(kp, KV, Hkv), kt)
		b.op(C.IRT_INPLACECOPY, lanes(vp, KV, Hkv), vt)
		kt, vt = bsnd16(kp, KV, Hkv), bsnd16(vp, KV, Hkv)
	} else {
		b.cast(qin, bsnd16(q16, T, H), C.ACL_FLOAT16)
	}
	o16 := b.temp("f16 output", 2*T*H*Dp, 32)
	var mask C.uintptr_t
	if len(b.k.Inputs) > 3 {
		if mask = b.attenMask(b.k.Inputs[3], T, KV); mask == 0 {
			return b.err
		}
	}
	a := tensors(bsnd16(q16, T, H), 0, mask, bsnd16(o16, T, H))
	a.l[0], a.l[1] = b.tensorList(kt), b.tensorList(vt)
	a.f[0] = C.double(b.k.Attrs.Scale())
	a.i[0] = C.int64_t(H)
	a.i[1], a.i[2] = 2147483647, 2147483647
	a.i[3] = C.int64_t(Hkv)
	a.i[4] = 0 // sparseMode 0: the full mask
	if T > 1 {
		a.i[5] = 2 // innerPrecise 2 for S > 1 (row-invalid correction), 0 for S == 1, as ggml-cann
	}
	for i, ch := range "BSND" {
		a.layout[i] = C.char(ch)
	}
	b.call(C.IRT_FIA, a)
	b.cast(lanes(o16, T, H), b.tensor(C.ACL_FLOAT, []int64{1, T, H, D}, []int64{T * out.Nb[1] / 4, out.Nb[1] / 4, D, 1}, 0, out.Addr), C.ACL_FLOAT)
	return b.err
}

// attenMask is mask m (f32 or f16, 0 or −inf per cell) as FIA's boolean
// attenMask [1, 1, T, KV] in the workspace, 1 where a cell is hidden:
// −m ≥ 1 (aclnnMuls by −1 into f32, aclnnGeScalar). 0 after an error.
func (b *builder) attenMask(m device.TensorDesc, T, KV int64) C.uintptr_t {
	if m.Ne[0] != KV || m.Ne[1] < T || !rows2D(m) || (m.DType != ir.F32 && m.DType != ir.F16) {
		b.fail(device.ACLErrParamInvalid, "mask %s %v does not cover %d rows of %d keys", m.DType, m.Ne, T, KV)
		return 0
	}
	md, _ := aclDType(m.DType)
	es := m.DType.TypeSize()
	neg := b.temp("negated mask", 4*T*KV, 32)
	hidden := b.temp("attenMask", T*KV, 32)
	grid := func(dt C.int, p device.Ptr) C.uintptr_t { return b.tensor(dt, []int64{T, KV}, []int64{KV, 1}, 0, p) }
	b.muls(b.tensor(md, []int64{T, KV}, []int64{m.Nb[1] / es, m.Nb[0] / es}, 0, m.Addr), grid(C.ACL_FLOAT, neg), -1)
	b.geScalar(grid(C.ACL_FLOAT, neg), grid(C.ACL_BOOL, hidden), 1)
	return b.tensor(C.ACL_BOOL, []int64{1, 1, T, KV}, []int64{T * KV, T * KV, KV, 1}, 0, hidden)
}

// swaMask: out = mask, with −inf where token r (at position pos[r]) and KV
// cell c (holding position c, the session's KV layout) are window or more
// apart: pos[r] − (c + window) ≥ 0. Rows past the tokens (the mask's
// padding) are copied unchanged, as the CPU kernel does.
func swaMask(b *builder) error {
	mask, pos, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	w := b.k.Attrs.Window()
	nKV, R, T := mask.Ne[0], mask.Ne[1], pos.Ne[0]
	switch {
	case w < 1:
		return b.fail(device.ACLErrParamInvalid, "swa_mask window %d", w)
	case mask.DType != ir.F32 || out.DType != ir.F32 || pos.DType != ir.I32 || !rows2D(mask) || out.Ne != mask.Ne ||
		!rows2D(pos) || pos.Ne[1] != 1 || T > R || mask.Nb[0] != 4 || out.Nb[0] != 4:
		return b.unsupported("swa_mask of %s %v at %s %v", mask.DType, mask.Ne, pos.DType, pos.Ne)
	case nKV+w >= 1<<24:
		return b.unsupported("swa_mask over %d cells with window %d: positions beyond f32's exact integers", nKV, w)
	}
	cells := make([]byte, 4*nKV)
	for c := range nKV {
		binary.LittleEndian.PutUint32(cells[4*c:], math.Float32bits(float32(c+w)))
	}
	tab := b.table(fmt.Sprintf("swa cell+window f32[%d]+%d", nKV, w), cells)
	pf := b.temp("f32 positions", 4*T, 32)
	dist := b.temp("position distances", 4*T*nKV, 32)
	far := b.temp("outside the window", T*nKV, 32)
	column := func(dt C.int, p device.Ptr) C.uintptr_t { return b.tensor(dt, []int64{T, 1}, []int64{1, 1}, 0, p) }
	grid := func(dt C.int, p device.Ptr) C.uintptr_t { return b.tensor(dt, []int64{T, nKV}, []int64{nKV, 1}, 0, p) }
	b.cast(column(C.ACL_INT32, pos.Addr), column(C.ACL_FLOAT, pf), C.ACL_FLOAT)
	pin := column(C.ACL_FLOAT, pf)
	ct := b.tensor(C.ACL_FLOAT, []int64{1, nKV}, []int64{nKV, 1}, 0, tab)
	b.add(pin, ct, grid(C.ACL_FLOAT, dist), -1)
	b.geScalar(grid(C.ACL_FLOAT, dist), grid(C.ACL_BOOL, far), 0)
	if out.Addr != mask.Addr || out.Nb != mask.Nb {
		ot := b.tensor(C.ACL_FLOAT, []int64{R, nKV}, []int64{out.Nb[1] / 4, 1}, 0, out.Addr)
		b.op(C.IRT_INPLACECOPY, ot, b.tensor(C.ACL_FLOAT, []int64{R, nKV}, []int64{mask.Nb[1] / 4, 1}, 0, mask.Addr))
	}
	orows := b.tensor(C.ACL_FLOAT, []int64{T, nKV}, []int64{out.Nb[1] / 4, 1}, 0, out.Addr)
	b.maskedFill(orows, grid(C.ACL_BOOL, far), float32(math.Inf(-1)))
	return b.err
}
