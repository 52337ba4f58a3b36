//go:build cann

package acl

/*
#include "binding.h"
*/
import "C"

import (
	"fmt"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/device"
)

// kqTypes are the K-quant types whose 2-D mul_mat the "ggml" QuantMatmul
// mode computes with quantMulMatK.
var kqTypes = map[ir.DType]bool{ir.Q2_K: true, ir.Q3_K: true, ir.Q4_K: true, ir.Q5_K: true, ir.Q6_K: true}

// quantMulMatK is the QuantMatmulGGML recipe of a K-quant mul_mat,
// out[M, N] = x[M, K] · W[N, K]ᵀ, computing ggml-cpu's bits: the x86 AVX2
// ggml_vec_dot_q{2..6}_K_q8_K of the llama.cpp build Options.LlamaBuild
// (and, for a q4_K matrix that build repacks, ggml_gemv_q4_K_8x8_q8_K for
// single columns and ggml_gemm_q4_K_8x8_q8_K for the first M − M mod 4
// columns), which irtool's kernels package reproduces bit for bit
// (kernels/qk.go, q6k_bsums.go, repack_q4k.go). The weight is converted
// once at load (kqValues: integers sc·q in f32, lane order).
//
//  1. The activations are quantised to q8_K on the device (q8Quantise:
//     the integers q in f32 and the block scales d_y kept apart; ggml's q
//     and d up to a joint sign flip per block, which leaves every product
//     below unchanged), their 16-value sums by aclnnReduceSum, and (but
//     for a repacked q4_K) a copy in lane order by aclnnInplaceCopy.
//  2. The integer sums are aclnnBatchMatMul calls over groups of
//     consecutive values of both operands: a lane (32 values), a pair of
//     sub-blocks (64), half a super-block (128), the mins' groups of
//     16-value sums. Every operand is an integer and every partial sum of
//     a group is below 2^24 in magnitude (|q8| ≤ 127; per product at most
//     15·3·127 for q2_K, 32·4·127 for q3_K, 63·15·127 for q4_K, 63·31·127
//     for q5_K, 128·32·127 for q6_K; 32 of them stay below 2^24 for every
//     type, 128 for q4_K), so the f32 sums are exact in any order: they are
//     the int32 lanes. Two sums could pass 2^24 and are split: q4_K's
//     whole super-block (GEMV) is two exact halves joined by one f32 add,
//     and q6_K's block-sum lane Σ sc·(q+32)·y − 32·Σ sc·bsum is
//     P + 32·(R1 − R2) with P = Σ sc·q·y over the lane, R1 = Σ sc·y over
//     the lane and R2 the block sums of its 32-value chunk: R1 − R2 is
//     exact, 32·(R1 − R2) too, and one aclnnInplaceAdd (alpha 32) rounds
//     P + 32·(R1 − R2) once, as the int32 → float conversion does.
//  3. The float chains in ggml's order: d = d_y·d_w by aclnnMul (and
//     -d_y·dmin), then per super-block (per sub-block pair for the q4_K
//     GEMM) acc = fma(d, lane, acc) by aclnnInplaceAddcmul (value 1: one
//     fused multiply-add under ggml's arithmetic; q2_K folds its mins into
//     acc first), then the AVX horizontal sum of the eight lanes
//     ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)) by three aclnnAdd, and q4_K's
//     four min lanes (m0+m2)+(m1+m3), q5_K's scalar min chain, or the
//     repacked q4_K's acc − accMin.
func quantMulMatK(b *builder, a, x, out device.TensorDesc) error {
	K, M := a.Ne[0], x.Ne[1]
	if a.Ne[2] != 1 || a.Ne[3] != 1 || x.Ne[2] != 1 || x.Ne[3] != 1 || x.Ne[0] != K || x.DType != ir.F32 || out.DType != ir.F32 {
		return b.unsupported("%s mul_mat of a %v by %s %v: 2-D f32 activations only", a.DType, a.Ne, x.DType, x.Ne)
	}
	if K%256 != 0 {
		return b.unsupported("%s weight with %d columns (not a multiple of 256)", a.DType, K)
	}
	l, w := b.kqWeight(a)
	_, xst, ok := aclOrder(x)
	if !ok {
		return b.unsupported("activations %v", x.Nb)
	}
	_, ost, _ := aclOrder(out)
	if b.err != nil {
		return b.err
	}
	xq, _, dy := b.q8Quantise([]int64{M}, []int64{xst[2]}, xst[3], K, x.Addr, a.DType, true)
	b.kqDot(l, w, M, xq, dy, out.Addr, ost[2], ost[3])
	return b.err
}

// kqDot adds quantMulMatK's calls after the quantisation: out[m, n] (at
// oaddr, rows ostRow and values ostCol elements apart) for the M
// activation rows of q8_K integers xq (contiguous [M, K]) with block
// scales dy ([M, K/256]) and the N rows of the weight converted to
// layout l at w.
func (b *builder) kqDot(l kqLayout, w device.Ptr, M int64, xq, dy, oaddr device.Ptr, ostRow, ostCol int64) {
	K, N := l.K, l.N
	nsb, G16 := K/256, K/16
	MN := M * N

	// Scratch, f32 elements: the activations in lane order, their 16-value
	// sums, d and the mins' scale per (column, row, super-block), three
	// integer-sum tensors of up to nsb·8 groups, the accumulators and the
	// horizontal sums' partials.
	var sp scratchParts
	iXP, iBS, iD, iDM := sp.part(M*K), sp.part(M*G16), sp.part(MN*nsb), sp.part(MN*nsb)
	iP, iR, iMM := sp.part(8*nsb*MN), sp.part(8*nsb*MN), sp.part(8*nsb*MN)
	iAcc, iAccM, iT4, iU, iS1, iS2 := sp.part(8*MN), sp.part(8*MN), sp.part(4*MN), sp.part(2*MN), sp.part(MN), sp.part(MN)
	at := b.scratchF32("kq scratch", &sp)
	wAt := func(off int64) device.Ptr { return w + device.Ptr(4*off) }
	f32 := func(shape, st []int64, off int64, p device.Ptr) C.uintptr_t {
		return b.tensor(C.ACL_FLOAT, shape, st, off, p)
	}
	flat := func(n int64, p device.Ptr) C.uintptr_t { return f32([]int64{n}, []int64{1}, 0, p) }
	// bmm: out[g, m, n] = Σ_j X[m0+m, g·width + j] · W[n, g·width + j] for
	// G groups, X's rows xRow apart, W's wRow apart.
	bmm := func(xp device.Ptr, xRow, m0, rows int64, wp device.Ptr, wRow, G, width int64, dst device.Ptr) {
		b.matmul(C.IRT_BMM,
			f32([]int64{G, rows, width}, []int64{width, xRow, 1}, m0*xRow, xp),
			f32([]int64{G, width, N}, []int64{width, 1, wRow}, 0, wp),
			f32([]int64{G, rows, N}, []int64{rows * N, N, 1}, 0, dst))
	}
	zero := b.table("f32 0", f32Bytes(0))
	// chain: acc[m, n, 0..L) = 0, then for t < T and each term (ds, v):
	// acc = fma(ds[m0+m, n, t/sub], v[t, 0..L, m, n], acc).
	type term struct{ ds, v device.Ptr }
	chain := func(acc device.Ptr, m0, rows, L, T, sub int64, terms ...term) C.uintptr_t {
		accT := f32([]int64{rows, N, L}, []int64{N * L, L, 1}, 0, acc)
		b.op(C.IRT_INPLACECOPY, accT, f32([]int64{1}, []int64{1}, 0, zero))
		for t := range T {
			for _, tm := range terms {
				a := tensors(accT,
					f32([]int64{rows, N, 1}, []int64{N * nsb, nsb, 1}, m0*N*nsb+t/sub, tm.ds),
					f32([]int64{rows, N, L}, []int64{N, 1, rows * N}, t*L*rows*N, tm.v))
				a.s = b.scalarF32(1)
				b.call(C.IRT_INPLACEADDCMUL, a)
			}
		}
		return accT
	}
	// hsum8: dst = ((a0+a4)+(a2+a6))+((a1+a5)+(a3+a7)) of acc[rows, N, 8].
	hsum8 := func(acc device.Ptr, rows int64, dst C.uintptr_t) {
		b.add(f32([]int64{rows, N, 4}, []int64{8 * N, 8, 1}, 0, acc), f32([]int64{rows, N, 4}, []int64{8 * N, 8, 1}, 4, acc),
			f32([]int64{rows, N, 4}, []int64{4 * N, 4, 1}, 0, at(iT4)), 1)
		b.add(f32([]int64{rows, N, 2}, []int64{4 * N, 4, 1}, 0, at(iT4)), f32([]int64{rows, N, 2}, []int64{4 * N, 4, 1}, 2, at(iT4)),
			f32([]int64{rows, N, 2}, []int64{2 * N, 2, 1}, 0, at(iU)), 1)
		b.add(f32([]int64{rows, N}, []int64{2 * N, 2}, 0, at(iU)), f32([]int64{rows, N}, []int64{2 * N, 2}, 1, at(iU)), dst, 1)
	}
	outRows := func(m0, rows int64) C.uintptr_t {
		return f32([]int64{rows, N}, []int64{ostRow, ostCol}, m0*ostRow, oaddr)
	}
	plain := func(p device.Ptr, rows int64) C.uintptr_t {
		return f32([]int64{rows, N}, []int64{N, 1}, 0, p)
	}

	// The activations' 16-value sums: bs[m, g].
	rs := tensors(f32([]int64{M, G16, 16}, []int64{K, 16, 1}, 0, xq), f32([]int64{M, G16, 1}, []int64{G16, 1, 1}, 0, at(iBS)))
	rs.s = b.intArray(2)
	rs.i[0], rs.i[1] = 1, C.ACL_FLOAT
	b.call(C.IRT_REDUCESUM, rs)
	// d = d_y·d_w and the mins' scale d_y·dm, [M, N, nsb].
	dyT := f32([]int64{M, 1, nsb}, []int64{nsb, nsb, 1}, 0, dy)
	b.op(C.IRT_MUL, dyT, f32([]int64{1, N, nsb}, []int64{N * nsb, nsb, 1}, 0, wAt(l.d)), f32([]int64{M, N, nsb}, []int64{N * nsb, nsb, 1}, 0, at(iD)))
	if l.dm >= 0 {
		b.op(C.IRT_MUL, dyT, f32([]int64{1, N, nsb}, []int64{N * nsb, nsb, 1}, 0, wAt(l.dm)), f32([]int64{M, N, nsb}, []int64{N * nsb, nsb, 1}, 0, at(iDM)))
	}

	if l.v == kqX8 {
		// Repacked q4_K: the first Mg columns in the GEMM's order, the
		// rest in the GEMV's; out = acc − accMin.
		Mg := M - M%4
		if Mg > 0 {
			bmm(xq, K, 0, Mg, wAt(l.w), K, 4*nsb, 64, at(iP))
			bmm(at(iBS), G16, 0, Mg, wAt(l.mn), G16, 4*nsb, 4, at(iMM))
			chain(at(iAcc), 0, Mg, 1, 4*nsb, 4, term{at(iD), at(iP)})
			chain(at(iAccM), 0, Mg, 1, 4*nsb, 4, term{at(iDM), at(iMM)})
			b.add(plain(at(iAcc), Mg), plain(at(iAccM), Mg), outRows(0, Mg), -1)
		}
		if Mv := M - Mg; Mv > 0 {
			// Two exact halves of each super-block, joined by one add.
			bmm(xq, K, Mg, Mv, wAt(l.w), K, 2*nsb, 128, at(iR))
			b.add(f32([]int64{nsb, Mv, N}, []int64{2 * Mv * N, N, 1}, 0, at(iR)), f32([]int64{nsb, Mv, N}, []int64{2 * Mv * N, N, 1}, Mv*N, at(iR)),
				f32([]int64{nsb, Mv, N}, []int64{Mv * N, N, 1}, 0, at(iP)), 1)
			bmm(at(iBS), G16, Mg, Mv, wAt(l.mn), G16, nsb, 16, at(iMM))
			chain(at(iAcc), Mg, Mv, 1, nsb, 1, term{at(iD), at(iP)})
			chain(at(iAccM), Mg, Mv, 1, nsb, 1, term{at(iDM), at(iMM)})
			b.add(plain(at(iAcc), Mv), plain(at(iAccM), Mv), outRows(Mg, Mv), -1)
		}
		return
	}

	// Lane order: value c·32 + 4k + j of a super-block to k·32 + c·4 + j.
	b.op(C.IRT_INPLACECOPY,
		f32([]int64{M, nsb, 8, 8, 4}, []int64{K, 256, 4, 32, 1}, 0, at(iXP)),
		f32([]int64{M, nsb, 8, 8, 4}, []int64{K, 256, 32, 4, 1}, 0, xq))
	bmm(at(iXP), K, 0, M, wAt(l.w), K, 8*nsb, 32, at(iP))
	terms := []term{{at(iD), at(iP)}}
	switch {
	case l.v == kqQ6Bsums:
		n := 8 * nsb * MN
		bmm(at(iXP), K, 0, M, wAt(l.scv), K, 8*nsb, 32, at(iR))
		bmm(at(iBS), G16, 0, M, wAt(l.mn), G16, 8*nsb, 2, at(iMM))
		b.inplaceAdd(flat(n, at(iR)), flat(n, at(iMM)), -1)
		b.inplaceAdd(flat(n, at(iP)), flat(n, at(iR)), 32)
	case l.t == ir.Q2_K:
		bmm(at(iBS), G16, 0, M, wAt(l.mn), G16, 8*nsb, 2, at(iMM))
		terms = []term{{at(iDM), at(iMM)}, {at(iD), at(iP)}}
	}
	chain(at(iAcc), 0, M, 8, nsb, 1, terms...)
	switch l.t {
	case ir.Q4_K:
		bmm(at(iBS), G16, 0, M, wAt(l.mn), G16, 4*nsb, 4, at(iMM))
		chain(at(iAccM), 0, M, 4, nsb, 1, term{at(iDM), at(iMM)})
		hsum8(at(iAcc), M, plain(at(iS1), M))
		b.add(f32([]int64{M, N, 2}, []int64{4 * N, 4, 1}, 0, at(iAccM)), f32([]int64{M, N, 2}, []int64{4 * N, 4, 1}, 2, at(iAccM)),
			f32([]int64{M, N, 2}, []int64{2 * N, 2, 1}, 0, at(iU)), 1)
		b.add(f32([]int64{M, N}, []int64{2 * N, 2}, 0, at(iU)), f32([]int64{M, N}, []int64{2 * N, 2}, 1, at(iU)), plain(at(iS2), M), 1)
		b.add(plain(at(iS1), M), plain(at(iS2), M), outRows(0, M), 1)
	case ir.Q5_K:
		bmm(at(iBS), G16, 0, M, wAt(l.mn), G16, nsb, 16, at(iMM))
		chain(at(iAccM), 0, M, 1, nsb, 1, term{at(iDM), at(iMM)})
		hsum8(at(iAcc), M, plain(at(iS1), M))
		b.add(plain(at(iS1), M), plain(at(iAccM), M), outRows(0, M), 1)
	default:
		hsum8(at(iAcc), M, outRows(0, M))
	}
}

// kqKey names the converted copy of the K-quant weight at addr.
func kqKey(l kqLayout, addr device.Ptr) string {
	return fmt.Sprintf("kq %s v%d %#x [%d,%d]", l.t, l.v, uint64(addr), l.K, l.N)
}

// kqWeight returns the layout and device address of the converted copy of
// the 2-D K-quant weight a (kqValues): the one placed at load
// (PlaceWeight), else, outside a capture, one made now from the blocks
// read back.
func (b *builder) kqWeight(a device.TensorDesc) (kqLayout, device.Ptr) {
	K, N := a.Ne[0], a.Ne[1]
	l := newKQLayout(a.DType, K, N, kqVariantOf(a.DType, N, b.d.opts.LlamaBuild))
	if b.err != nil {
		return l, 0
	}
	if !dense(a) {
		b.unsupported("non-contiguous %s weight (nb %v)", a.DType, a.Nb)
		return l, 0
	}
	key := kqKey(l, a.Addr)
	p, err := b.onDemand(a, key, "weight", func(n *npu, blocks []byte) (device.Ptr, error) {
		return b.d.placeKQ(n, key, l, blocks)
	})
	if err != nil {
		b.setErr(err)
		return l, 0
	}
	return l, p
}

// placeKQ converts the blocks of a K-quant matrix into layout l
// (kqValues) and uploads the copy into the pool under key. The caller
// holds n.cmu.
func (d *Device) placeKQ(n *npu, key string, l kqLayout, blocks []byte) (device.Ptr, error) {
	vals, err := kqValues(l, blocks)
	if err != nil {
		return 0, err
	}
	return d.placeF32(n, key, fmt.Sprintf("converted %s weight", l.t), vals)
}

// kqExpertsKey names the converted copy of the stack of E K-quant expert
// matrices at addr, each in layout l.
func kqExpertsKey(l kqLayout, addr device.Ptr, E int64) string {
	return fmt.Sprintf("%s experts %d", kqKey(l, addr), E)
}

// kqExperts returns the layout of one expert matrix of the K-quant stack
// as ([K, N, E]) and the device address of its converted copy
// (kqStackValues: E copies of that layout, l.size elements apart): the
// one placed at load, else, outside a capture, one made now.
func (b *builder) kqExperts(as device.TensorDesc) (kqLayout, device.Ptr) {
	K, N, E := as.Ne[0], as.Ne[1], as.Ne[2]
	l := newKQLayout(as.DType, K, N, kqVariantOf(as.DType, N, b.d.opts.LlamaBuild))
	if b.err != nil {
		return l, 0
	}
	if !dense(as) {
		b.unsupported("non-contiguous %s experts (nb %v)", as.DType, as.Nb)
		return l, 0
	}
	key := kqExpertsKey(l, as.Addr, E)
	p, err := b.onDemand(as, key, "experts", func(n *npu, blocks []byte) (device.Ptr, error) {
		return b.d.placeKQExperts(n, key, l, E, blocks)
	})
	if err != nil {
		b.setErr(err)
		return l, 0
	}
	return l, p
}

// placeKQExperts converts E stacked expert matrices (blocks) into E
// copies of layout l and uploads them under key. The caller holds n.cmu.
func (d *Device) placeKQExperts(n *npu, key string, l kqLayout, E int64, blocks []byte) (device.Ptr, error) {
	vals, err := kqStackValues(l, E, blocks)
	if err != nil {
		return 0, err
	}
	return d.placeF32(n, key, fmt.Sprintf("converted %s experts", l.t), vals)
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
	g := b.buffer(fmt.Sprintf("kq expert f32[%d]", l.size), 4*l.size)
	stack := b.tensor(C.ACL_FLOAT, []int64{E, l.size}, []int64{l.size, 1}, 0, w)
	for p := range nUsed * T {
		t, s := p/nUsed, p%nUsed
		row := t*ne11 + s%ne11
		b.gather(stack, b.tensor(C.ACL_INT32, []int64{1}, []int64{1}, p, ids.Addr),
			b.tensor(C.ACL_FLOAT, []int64{1, l.size}, []int64{l.size, 1}, 0, g))
		b.kqDot(l, g, 1, xq+device.Ptr(4*row*K), dy+device.Ptr(4*row*nsb), out.Addr+device.Ptr(s*out.Nb[1]+t*out.Nb[2]), N, 1)
	}
	return b.err
}
