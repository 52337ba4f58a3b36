//go:build cann

package acl

/*
#include "binding.h"
*/
import "C"

import (
	"fmt"

	"github.com/irtool/irtool/gguf/wqconv"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/acl/layout"
	"github.com/irtool/irtool/runtime/device"
)

// The mixture-of-experts family: mul_mat_id over f32 and quantised
// experts (quantTypes) (the table of recipes.go lists its calls).

// mulMatID: out[:, s, t] = as[:, :, ids[s, t]] · b[:, s % b.ne1, t].
// The P = n_used·T chosen experts are gathered, in (t, s) order, from the
// stacked experts by the ids as the device holds them.
func mulMatID(b *builder) error {
	as, x, ids, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Inputs[2], b.k.Output
	K, N, E := as.Ne[0], as.Ne[1], as.Ne[2]
	nUsed, T, ne11 := ids.Ne[0], ids.Ne[1], x.Ne[1]
	P := nUsed * T
	switch {
	case as.Ne[3] != 1 || x.Ne[0] != K || x.Ne[2] != T || x.Ne[3] != 1 || (ne11 != 1 && ne11 != nUsed):
		return b.unsupported("mul_mat_id of %v by %v with ids %v", as.Ne, x.Ne, ids.Ne)
	case x.DType != ir.F32 || out.DType != ir.F32 || ids.DType != ir.I32 || !dense(ids) || !dense(out) || x.Nb[0] != 4:
		return b.unsupported("mul_mat_id operands %s/%s/%s: f32 activations, dense i32 ids and f32 output", x.DType, ids.DType, out.DType)
	case out.Ne[0] != N || out.Ne[1] != nUsed || out.Ne[2] != T:
		return b.fail(device.ACLErrParamInvalid, "mul_mat_id output %v, want [%d %d %d]", out.Ne, N, nUsed, T)
	}
	e := experts{ids: ids, P: P, first: b.tensor(C.ACL_INT32, []int64{P}, []int64{1}, 0, ids.Addr)}
	xs := x.Nb[1] / 4
	if ne11 == 1 {
		xs = K
	}
	switch as.DType {
	case ir.F32:
		if !dense(as) {
			return b.unsupported("mul_mat_id over non-contiguous experts (nb %v)", as.Nb)
		}
		g := b.gatherExperts(e, C.ACL_FLOAT, E, N*K, as.Addr, "gathered experts", 4)
		self := b.tensor(C.ACL_FLOAT, []int64{T, ne11, 1, K}, []int64{x.Nb[2] / 4, xs, K, 1}, 0, x.Addr)
		b.expertMatmul(self, g, out, T, nUsed, K, N)
		return b.err
	}
	// The "ggml" mode's exact integer recipes (q5_0 included); the
	// weight-quant one for the types quantRecipeTypes lists (not q5_0,
	// whose int4 + high-bit layout has no expert recipe).
	if b.d.quantMode() == QuantMatmulGGML && layout.Q8Types[as.DType] {
		return mulMatIDQ8(b, as, x, ids, out, xs)
	}
	if b.d.quantMode() == QuantMatmulGGML && layout.KQTypes[as.DType] {
		return mulMatIDK(b, as, x, ids, out, xs)
	}
	if !recipeTakes(ir.OpMulMatID, as.DType) {
		return b.unsupported("mul_mat_id with %s experts: no recipe for the type", as.DType)
	}
	return mulMatIDWQBMM(b, as, x, out, e, xs)
}

// experts are the ids of a mul_mat_id: P of them, first their descriptor
// for the first gather.
type experts struct {
	ids   device.TensorDesc
	P     int64
	first C.uintptr_t
}

// gatherExperts gathers the rows (width elements of dtype dt, es bytes
// each) of the P chosen experts from the rows stacked at src into staging
// in the workspace, and returns the staging.
func (b *builder) gatherExperts(e experts, dt C.int, rows, width int64, src device.Ptr, role string, es int64) device.Ptr {
	g := b.temp(role, e.P*width*es, 32)
	st := b.tensor(dt, []int64{rows, width}, []int64{width, 1}, 0, src)
	gt := b.tensor(dt, []int64{e.P, width}, []int64{width, 1}, 0, g)
	idx := e.first
	if len(b.p.steps) > 0 {
		idx = b.tensor(C.ACL_INT32, []int64{e.P}, []int64{1}, 0, e.ids.Addr)
	}
	b.gather(st, idx, gt)
	return g
}

// mulMatIDWQBMM is mul_mat_id over quantised experts with
// QuantMatmulWQBMM: the chosen experts' values, scales (and offsets) of
// the layout converted at load (gguf/wqconv.ConvertExperts: expert e is a
// contiguous slice of each part) gathered, the activations cast to f16,
// one aclnnWeightQuantBatchMatmulV2 per (token, slot), the result cast to
// f32.
func mulMatIDWQBMM(b *builder, as, x, out device.TensorDesc, e experts, xs int64) error {
	K, N, E := as.Ne[0], as.Ne[1], as.Ne[2]
	nUsed, T, ne11 := e.ids.Ne[0], e.ids.Ne[1], x.Ne[1]
	if as.Nb[2] != as.Nb[1]*N {
		return b.unsupported("mul_mat_id over non-contiguous %s experts (nb %v)", as.DType, as.Nb)
	}
	w := b.converted(as)
	if b.err != nil {
		return b.err
	}
	l := w.layout
	vb, pe := K*N, K*N/int64(l.Span) // value bytes and parameters per expert
	if l.Dtype == wqconv.Int4 {
		vb /= 2
	}
	gq := b.gatherExperts(e, C.ACL_INT8, E, vb, w.values, "gathered values", 1)
	gs := b.gatherExperts(e, C.ACL_FLOAT16, E, pe, w.scales, "gathered scales", 2)
	var gof device.Ptr
	if l.Offset {
		gof = b.gatherExperts(e, C.ACL_FLOAT16, E, pe, w.offsets, "gathered offsets", 2)
	}
	x16 := b.temp("f16 input", 2*T*ne11*K, 32)
	y16 := b.temp("f16 output", 2*e.P*N, 32)
	xt := b.tensor(C.ACL_FLOAT, []int64{T, ne11, K}, []int64{x.Nb[2] / 4, xs, 1}, 0, x.Addr)
	b.cast(xt, b.tensor(C.ACL_FLOAT16, []int64{T, ne11, K}, []int64{ne11 * K, K, 1}, 0, x16), C.ACL_FLOAT16)
	wd, g := wqDType(l), int64(l.GroupSize(int(K)))
	for p := int64(0); p < e.P; p++ {
		t, s := p/nUsed, p%nUsed
		row := t*ne11 + s%ne11
		var off *operand
		if l.Offset {
			off = wqParamOperand(l, K, N, gof+device.Ptr(2*p*pe))
		}
		if err := b.wqbmmSplit(operand{C.ACL_FLOAT16, []int64{1, K}, []int64{K, 1}, 0, x16 + device.Ptr(2*row*K)},
			operand{wd, []int64{K, N}, []int64{1, K}, 0, gq + device.Ptr(p*vb)},
			wqParamOperand(l, K, N, gs+device.Ptr(2*p*pe)), off,
			operand{C.ACL_FLOAT16, []int64{1, N}, []int64{N, 1}, 0, y16 + device.Ptr(2*p*N)}, g); err != nil {
			return err
		}
	}
	yin := b.tensor(C.ACL_FLOAT16, []int64{T, nUsed, N}, []int64{nUsed * N, N, 1}, 0, y16)
	b.cast(yin, b.tensor(C.ACL_FLOAT, []int64{T, nUsed, N}, []int64{out.Nb[2] / 4, out.Nb[1] / 4, 1}, 0, out.Addr), C.ACL_FLOAT)
	return b.err
}

// expertMatmul multiplies the activation view self [T, ne11, 1, K] by the
// gathered f32 experts g [T, nUsed, K, N] (one matrix per token and slot,
// read transposed) into out's [T, nUsed, 1, N] rows: one aclnnMatmul,
// broadcasting self's ne11 over the slots.
func (b *builder) expertMatmul(self C.uintptr_t, g device.Ptr, out device.TensorDesc, T, nUsed, K, N int64) {
	mat := b.tensor(C.ACL_FLOAT, []int64{T, nUsed, K, N}, []int64{nUsed * N * K, N * K, 1, K}, 0, g)
	ot := b.tensor(C.ACL_FLOAT, []int64{T, nUsed, 1, N}, []int64{out.Nb[2] / 4, out.Nb[1] / 4, N, 1}, 0, out.Addr)
	b.matmul(C.IRT_MATMUL, self, mat, ot)
}

// mulMatIDK is mul_mat_id over K-quant experts with QuantMatmulGGML:
// ggml-cpu multiplies each (token, slot) with its expert's matrix as one
// single-column mul_mat (kernels' MulMatID, the expert a 2-D matrix of N
// rows: q4_K repacked when N is a multiple of 8 under 3f545bec), so each
// slot is quantMulMatK's GEMV: the activations quantised to q8_K once,
// then per slot the chosen expert's converted copy gathered by its id on
// the device (aclnnGatherV2 of one row of the stack's copies) and
// kqDot's calls on the slot's activation row.
func mulMatIDK(b *builder, as, x, ids, out device.TensorDesc, xs int64) error {
	K, N := as.Ne[0], as.Ne[1]
	nUsed, T, ne11 := ids.Ne[0], ids.Ne[1], x.Ne[1]
	if K%256 != 0 {
		return b.unsupported("%s experts with %d columns (not a multiple of 256)", as.DType, K)
	}
	l, w := b.kqExperts(as)
	if b.err != nil {
		return b.err
	}
	E, nsb := as.Ne[2], K/256
	xq, _, dy := b.q8Quantise([]int64{T, ne11}, []int64{x.Nb[2] / 4, xs}, 1, K, x.Addr, as.DType, true)
	g := b.buffer(fmt.Sprintf("kq expert f32[%d]", l.Size), 4*l.Size)
	stack := b.tensor(C.ACL_FLOAT, []int64{E, l.Size}, []int64{l.Size, 1}, 0, w)
	for p := range nUsed * T {
		t, s := p/nUsed, p%nUsed
		row := t*ne11 + s%ne11
		b.gather(stack, b.tensor(C.ACL_INT32, []int64{1}, []int64{1}, p, ids.Addr),
			b.tensor(C.ACL_FLOAT, []int64{1, l.Size}, []int64{l.Size, 1}, 0, g))
		b.kqDot(l, g, 1, xq+device.Ptr(4*row*K), dy+device.Ptr(4*row*nsb), out.Addr+device.Ptr(s*out.Nb[1]+t*out.Nb[2]), N, 1)
	}
	return b.err
}

// mulMatIDQ8 is mul_mat_id over q4_0, q5_0, q8_0, q4_1 or q5_1 experts
// with QuantMatmulGGML: ggml-cpu multiplies each (token, slot) with its
// expert's matrix as one single-column mul_mat (kernels' MulMatID), so
// the recipe is quantMulMatQ8's with a batch of P = n_used·T slots: the
// chosen experts' converted integers, scales (and mins) gathered by the
// ids on the device (aclnnGatherV2), the activations quantised once and
// spread over the slots (aclnnInplaceCopy), then q8Dot with B = P, M = 1.
func mulMatIDQ8(b *builder, as, x, ids, out device.TensorDesc, xs int64) error {
	K, N, E := as.Ne[0], as.Ne[1], as.Ne[2]
	nUsed, T, ne11 := ids.Ne[0], ids.Ne[1], x.Ne[1]
	P := nUsed * T
	if K%32 != 0 {
		return b.unsupported("%s experts with %d columns (not a multiple of 32)", as.DType, K)
	}
	if as.Nb[2] != as.Nb[1]*N {
		return b.unsupported("mul_mat_id over non-contiguous %s experts (nb %v)", as.DType, as.Nb)
	}
	l, w := b.q8Weight(as)
	if b.err != nil {
		return b.err
	}
	nb := K / 32
	xq, sums, dx := b.q8Quantise([]int64{T, ne11}, []int64{x.Nb[2] / 4, xs}, 1, K, x.Addr, as.DType, true)
	var sp scratchParts
	iW, iWD, iWM, iX, iXD, iXM := sp.part(P*N*K), sp.part(P*N*nb), sp.part(P*N*nb), sp.part(P*K), sp.part(P*nb), sp.part(P*nb)
	at := b.scratchF32("q8 experts", &sp)
	idt := func() C.uintptr_t { return b.tensor(C.ACL_INT32, []int64{P}, []int64{1}, 0, ids.Addr) }
	gather := func(src device.Ptr, width int64, dst device.Ptr) {
		b.gather(b.tensor(C.ACL_FLOAT, []int64{E, width}, []int64{width, 1}, 0, src), idt(),
			b.tensor(C.ACL_FLOAT, []int64{P, width}, []int64{width, 1}, 0, dst))
	}
	gather(w+device.Ptr(4*l.W), N*K, at(iW))
	gather(w+device.Ptr(4*l.D), N*nb, at(iWD))
	wp := q8Parts{w: at(iW), d: at(iWD)}
	// Slot (t, s) reads activation row t·ne11 + s mod ne11.
	spread := func(src device.Ptr, width int64, dst device.Ptr) {
		b.op(C.IRT_INPLACECOPY, b.tensor(C.ACL_FLOAT, []int64{T, nUsed, width}, []int64{nUsed * width, width, 1}, 0, dst),
			b.tensor(C.ACL_FLOAT, []int64{T, ne11, width}, []int64{ne11 * width, width, 1}, 0, src))
	}
	spread(xq, K, at(iX))
	spread(dx, nb, at(iXD))
	xp := q8Parts{w: at(iX), d: at(iXD)}
	if l.M >= 0 {
		gather(w+device.Ptr(4*l.M), N*nb, at(iWM))
		spread(sums, nb, at(iXM))
		wp.m, xp.m = at(iWM), at(iXM)
	}
	b.q8Dot(as.DType, layout.Q8Scalar(as.DType, N), P, 1, N, K, xp, wp, out.Addr, [3]int64{out.Nb[1] / 4, out.Nb[1] / 4, 1})
	return b.err
}
