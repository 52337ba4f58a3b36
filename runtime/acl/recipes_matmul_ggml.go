//go:build cann

package acl

/*
#include "binding.h"
*/
import "C"

import (
	"fmt"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/acl/layout"
	"github.com/irtool/irtool/runtime/device"
)

// quantMulMatK is the QuantMatmulGGML recipe of a K-quant mul_mat,
// out[M, N] = x[M, K] · W[N, K]ᵀ, computing ggml-cpu's bits: the x86 AVX2
// ggml_vec_dot_q{2..6}_K_q8_K of the llama.cpp build Options.LlamaBuild
// (and, for a q4_K matrix that build repacks, ggml_gemv_q4_K_8x8_q8_K for
// single columns and ggml_gemm_q4_K_8x8_q8_K for the first M − M mod 4
// columns), which irtool's kernels package reproduces bit for bit
// (kernels/qk.go, q6k_bsums.go, repack_q4k.go). The weight is converted
// once at load (KQValues: integers sc·q in f32, lane order).
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
func (b *builder) kqDot(l layout.KQ, w device.Ptr, M int64, xq, dy, oaddr device.Ptr, ostRow, ostCol int64) {
	K, N := l.K, l.N
	nsb, G16 := K/256, K/16
	MN := M * N

	// Scratch, f32 elements: the activations in lane order, their 16-value
	// sums, d and the mins' scale per (column, row, super-block), three
	// integer-sum tensors of up to nsb·8 groups, the accumulators and the
	// horizontal sums' partials.
	var parts []int64
	part := func(n int64) int {
		parts = append(parts, (n+15)/16*16)
		return len(parts) - 1
	}
	iXP, iBS, iD, iDM := part(M*K), part(M*G16), part(MN*nsb), part(MN*nsb)
	iP, iR, iMM := part(8*nsb*MN), part(8*nsb*MN), part(8*nsb*MN)
	iAcc, iAccM, iT4, iU, iS1, iS2 := part(8*MN), part(8*MN), part(4*MN), part(2*MN), part(MN), part(MN)
	var total int64
	for _, n := range parts {
		total += n
	}
	buf := b.buffer(fmt.Sprintf("kq scratch f32[%d]", total), 4*total)
	at := func(i int) device.Ptr {
		var o int64
		for _, n := range parts[:i] {
			o += n
		}
		return buf + device.Ptr(4*o)
	}
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
	b.op(C.IRT_MUL, dyT, f32([]int64{1, N, nsb}, []int64{N * nsb, nsb, 1}, 0, wAt(l.D)), f32([]int64{M, N, nsb}, []int64{N * nsb, nsb, 1}, 0, at(iD)))
	if l.DM >= 0 {
		b.op(C.IRT_MUL, dyT, f32([]int64{1, N, nsb}, []int64{N * nsb, nsb, 1}, 0, wAt(l.DM)), f32([]int64{M, N, nsb}, []int64{N * nsb, nsb, 1}, 0, at(iDM)))
	}

	if l.V == layout.KQX8 {
		// Repacked q4_K: the first Mg columns in the GEMM's order, the
		// rest in the GEMV's; out = acc − accMin.
		Mg := M - M%4
		if Mg > 0 {
			bmm(xq, K, 0, Mg, wAt(l.W), K, 4*nsb, 64, at(iP))
			bmm(at(iBS), G16, 0, Mg, wAt(l.MN), G16, 4*nsb, 4, at(iMM))
			chain(at(iAcc), 0, Mg, 1, 4*nsb, 4, term{at(iD), at(iP)})
			chain(at(iAccM), 0, Mg, 1, 4*nsb, 4, term{at(iDM), at(iMM)})
			b.add(plain(at(iAcc), Mg), plain(at(iAccM), Mg), outRows(0, Mg), -1)
		}
		if Mv := M - Mg; Mv > 0 {
			// Two exact halves of each super-block, joined by one add.
			bmm(xq, K, Mg, Mv, wAt(l.W), K, 2*nsb, 128, at(iR))
			b.add(f32([]int64{nsb, Mv, N}, []int64{2 * Mv * N, N, 1}, 0, at(iR)), f32([]int64{nsb, Mv, N}, []int64{2 * Mv * N, N, 1}, Mv*N, at(iR)),
				f32([]int64{nsb, Mv, N}, []int64{Mv * N, N, 1}, 0, at(iP)), 1)
			bmm(at(iBS), G16, Mg, Mv, wAt(l.MN), G16, nsb, 16, at(iMM))
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
	bmm(at(iXP), K, 0, M, wAt(l.W), K, 8*nsb, 32, at(iP))
	terms := []term{{at(iD), at(iP)}}
	switch {
	case l.V == layout.KQQ6Bsums:
		n := 8 * nsb * MN
		bmm(at(iXP), K, 0, M, wAt(l.SCV), K, 8*nsb, 32, at(iR))
		bmm(at(iBS), G16, 0, M, wAt(l.MN), G16, 8*nsb, 2, at(iMM))
		b.inplaceAdd(flat(n, at(iR)), flat(n, at(iMM)), -1)
		b.inplaceAdd(flat(n, at(iP)), flat(n, at(iR)), 32)
	case l.T == ir.Q2_K:
		bmm(at(iBS), G16, 0, M, wAt(l.MN), G16, 8*nsb, 2, at(iMM))
		terms = []term{{at(iDM), at(iMM)}, {at(iD), at(iP)}}
	}
	chain(at(iAcc), 0, M, 8, nsb, 1, terms...)
	switch l.T {
	case ir.Q4_K:
		bmm(at(iBS), G16, 0, M, wAt(l.MN), G16, 4*nsb, 4, at(iMM))
		chain(at(iAccM), 0, M, 4, nsb, 1, term{at(iDM), at(iMM)})
		hsum8(at(iAcc), M, plain(at(iS1), M))
		b.add(f32([]int64{M, N, 2}, []int64{4 * N, 4, 1}, 0, at(iAccM)), f32([]int64{M, N, 2}, []int64{4 * N, 4, 1}, 2, at(iAccM)),
			f32([]int64{M, N, 2}, []int64{2 * N, 2, 1}, 0, at(iU)), 1)
		b.add(f32([]int64{M, N}, []int64{2 * N, 2}, 0, at(iU)), f32([]int64{M, N}, []int64{2 * N, 2}, 1, at(iU)), plain(at(iS2), M), 1)
		b.add(plain(at(iS1), M), plain(at(iS2), M), outRows(0, M), 1)
	case ir.Q5_K:
		bmm(at(iBS), G16, 0, M, wAt(l.MN), G16, nsb, 16, at(iMM))
		chain(at(iAccM), 0, M, 1, nsb, 1, term{at(iDM), at(iMM)})
		hsum8(at(iAcc), M, plain(at(iS1), M))
		b.add(plain(at(iS1), M), plain(at(iAccM), M), outRows(0, M), 1)
	default:
		hsum8(at(iAcc), M, outRows(0, M))
	}
}

// quantMulMatQ8 is the QuantMatmulGGML recipe of a q4_0, q5_0, q8_0, q4_1
// or q5_1 mul_mat, out[M, N] = x[M, K] · W[N, K]ᵀ, computing ggml-cpu's
// bits as irtool's kernels package does (kernels/quant.go, legacy.go,
// q8_1.go, simd.go; bit for bit llama.cpp's x86 AVX2 build):
//
//   - q8_0, q5_0, q4_1, q5_1, and q4_0 with a row count that is not a
//     multiple of 8 (ggml_vec_dot_*_q8_0 / _q8_1, and llamafile's
//     tinyBLAS_Q0_AVX for prefill, which forms the same lanes): per block
//     of 32 the products of values 4k..4k+3 in int32 lane k (k < 8), then
//     acc[k] = fma(d_w·d_x, float(lane k), acc[k]) block after block, the
//     result the AVX horizontal sum ((a0+a4)+(a2+a6))+((a1+a5)+(a3+a7));
//     q4_1 and q5_1 add the scalar chain summs = fma(m_w, s_x, summs)
//     (s_x the q8_1 block's f16 sum) to it.
//   - q4_0 with a multiple of 8 rows, which llama.cpp repacks to
//     q4_0_8x8 in every build (ggml_gemv_q4_0_8x8_q8_0 for one column,
//     ggml_gemm_q4_0_8x8_q8_0 for groups of four: the same per-column
//     order): per block the whole integer sum s, and one chain
//     acc = fma(d_w·d_x, float(s), acc) per output.
//
// One order serves every column, so decode and prefill differ only in M.
// The calls:
//
//  1. The activations quantised on the device (q8Quantise: the integers q
//     in f32, the blocks' f16 scales d_x and, for q8_1, the f16 sums s_x).
//  2. The integer lanes (or block sums) as aclnnBatchMatMul (aclnnMatmul
//     for a batch of experts) over groups of 4 (32) consecutive values of
//     both operands, the weight converted at load (layout.Q8Values): every
//     operand an integer and every partial sum below 2^24 in magnitude
//     (|q_x| ≤ 127, |q_w| ≤ 128: 32·127·128 < 2^20), so the f32 sums are
//     exact in any order: they are the int32 lanes.
//  3. d = d_x·d_w by aclnnMul, then block after block
//     aclnnInplaceAddcmul(acc, d, lanes) (value 1: one fused multiply-add
//     under ggml's arithmetic), the horizontal sum by three aclnnAdd, the
//     q8_1 min chain by aclnnInplaceAddcmul(summs, m_w, s_x) and one
//     aclnnAdd.
//
// The blocks go through the matmul in chunks whose lanes fit in about
// 16 MiB of scratch (and the columns in groups when one block's lanes do
// not). ggml's sign trick for an activation of -128 (only NaN or infinite
// inputs quantise to it, kernels' mulQuirk) is not reproduced.
func quantMulMatQ8(b *builder, a, x, out device.TensorDesc) error {
	K, N, M := a.Ne[0], a.Ne[1], x.Ne[1]
	if a.Ne[2] != 1 || a.Ne[3] != 1 || x.Ne[2] != 1 || x.Ne[3] != 1 || x.Ne[0] != K || x.DType != ir.F32 || out.DType != ir.F32 {
		return b.unsupported("%s mul_mat of a %v by %s %v: 2-D f32 activations only", a.DType, a.Ne, x.DType, x.Ne)
	}
	if K%32 != 0 {
		return b.unsupported("%s weight with %d columns (not a multiple of 32)", a.DType, K)
	}
	l, w := b.q8Weight(a)
	_, xst, ok := aclOrder(x)
	if !ok {
		return b.unsupported("activations %v", x.Nb)
	}
	_, ost, _ := aclOrder(out)
	if b.err != nil {
		return b.err
	}
	xq, sums, dx := b.q8Quantise([]int64{M}, []int64{xst[2]}, xst[3], K, x.Addr, a.DType, true)
	wp := q8Parts{w: w + device.Ptr(4*l.W), d: w + device.Ptr(4*l.D)}
	if l.M >= 0 {
		wp.m = w + device.Ptr(4*l.M)
	}
	b.q8Dot(a.DType, layout.Q8Scalar(a.DType, N), 1, M, N, K, q8Parts{w: xq, d: dx, m: sums}, wp, out.Addr, [3]int64{M * ost[2], ost[2], ost[3]})
	return b.err
}

// q8ScratchCap bounds the f32 lanes q8Dot keeps in scratch at a time
// (16 MiB); tests lower it to exercise the chunks.
var q8ScratchCap int64 = 4 << 20

// q8Parts are the f32 operands of one side of q8Dot: the integers w
// [B, rows, K], the blocks' scales d [B, rows, K/32] and, for q8_1, the
// weight's mins or the activations' sums m (0 when none), all contiguous.
type q8Parts struct{ w, d, m device.Ptr }

// q8Dot adds the calls of quantMulMatQ8's steps 2 and 3 for B batches:
// out[p, i, n] (at addr, strides ost in elements) = ggml's dot of
// activation row i < M of batch p (x) with weight row n < N of batch p
// (w). scalar selects the repacked q4_0 order.
func (b *builder) q8Dot(t ir.DType, scalar bool, B, M, N, K int64, x, w q8Parts, addr device.Ptr, ost [3]int64) {
	nb := K / 32
	L, width := int64(8), int64(4)
	if scalar {
		L, width = 1, 32
	}
	q1 := x.m != 0 && w.m != 0
	// Columns per pass and blocks per chunk: the lanes of a chunk,
	// B·cb·L·Mc·N values, within q8ScratchCap (at least one block of one
	// column).
	capQ8 := q8ScratchCap
	Mc := max(1, min(M, capQ8/max(1, B*L*N)))
	cb := max(1, min(nb, capQ8/max(1, B*L*Mc*N)))
	n := B * Mc * N
	var parts []int64
	part := func(n int64) int {
		parts = append(parts, (n+15)/16*16)
		return len(parts) - 1
	}
	iP, iD, iAcc, iSumm := part(cb*L*n), part(cb*n), part(L*n), part(n)
	iT4, iU, iS := part(4*n), part(2*n), part(n)
	var total int64
	for _, v := range parts {
		total += v
	}
	buf := b.buffer(fmt.Sprintf("q8 scratch f32[%d]", total), 4*total)
	at := func(i int) device.Ptr {
		var o int64
		for _, v := range parts[:i] {
			o += v
		}
		return buf + device.Ptr(4*o)
	}
	f32 := func(shape, st []int64, off int64, p device.Ptr) C.uintptr_t {
		return b.tensor(C.ACL_FLOAT, shape, st, off, p)
	}
	zero := b.table("f32 0", f32Bytes(0))
	for m0 := int64(0); m0 < M; m0 += Mc {
		mc := min(Mc, M-m0)
		// acc[B, mc, N, L] = 0 (and summs).
		accT := f32([]int64{B, mc, N, L}, []int64{mc * N * L, N * L, L, 1}, 0, at(iAcc))
		b.op(C.IRT_INPLACECOPY, accT, f32([]int64{1}, []int64{1}, 0, zero))
		summT := f32([]int64{B, mc, N}, []int64{mc * N, N, 1}, 0, at(iSumm))
		if q1 {
			b.op(C.IRT_INPLACECOPY, summT, f32([]int64{1}, []int64{1}, 0, zero))
		}
		for c0 := int64(0); c0 < nb; c0 += cb {
			nc := min(cb, nb-c0)
			G := nc * L
			// P[p, g, i, n] = Σ_j x[p, m0+i, c0·32 + g·width + j] · w[p, n, c0·32 + g·width + j].
			xs := f32([]int64{B, G, mc, width}, []int64{M * K, width, K, 1}, m0*K+c0*32, x.w)
			ws := f32([]int64{B, G, width, N}, []int64{N * K, width, 1, K}, c0*32, w.w)
			ps := f32([]int64{B, G, mc, N}, []int64{G * mc * N, mc * N, N, 1}, 0, at(iP))
			if B == 1 {
				xs = f32([]int64{G, mc, width}, []int64{width, K, 1}, m0*K+c0*32, x.w)
				ws = f32([]int64{G, width, N}, []int64{width, 1, K}, c0*32, w.w)
				ps = f32([]int64{G, mc, N}, []int64{mc * N, N, 1}, 0, at(iP))
				b.matmul(C.IRT_BMM, xs, ws, ps)
			} else {
				b.matmul(C.IRT_MATMUL, xs, ws, ps)
			}
			// D[p, i, n, c] = d_x[p, m0+i, c0+c] · d_w[p, n, c0+c].
			b.op(C.IRT_MUL,
				f32([]int64{B, mc, 1, nc}, []int64{M * nb, nb, 1, 1}, m0*nb+c0, x.d),
				f32([]int64{B, 1, N, nc}, []int64{N * nb, 1, nb, 1}, c0, w.d),
				f32([]int64{B, mc, N, nc}, []int64{mc * N * nc, N * nc, nc, 1}, 0, at(iD)))
			for c := range nc {
				a := tensors(accT,
					f32([]int64{B, mc, N, 1}, []int64{mc * N * nc, N * nc, nc, 1}, c, at(iD)),
					f32([]int64{B, mc, N, L}, []int64{G * mc * N, N, 1, mc * N}, c*L*mc*N, at(iP)))
				a.s = b.scalarF32(1)
				b.call(C.IRT_INPLACEADDCMUL, a)
				if q1 {
					// summs = fma(m_w, s_x, summs).
					a := tensors(summT,
						f32([]int64{B, 1, N}, []int64{N * nb, 1, nb}, c0+c, w.m),
						f32([]int64{B, mc, 1}, []int64{M * nb, nb, 1}, m0*nb+c0+c, x.m))
					a.s = b.scalarF32(1)
					b.call(C.IRT_INPLACEADDCMUL, a)
				}
			}
		}
		dst := f32([]int64{B, mc, N}, ost[:], m0*ost[1], addr)
		plain := func(i int) C.uintptr_t { return f32([]int64{B, mc, N}, []int64{mc * N, N, 1}, 0, at(i)) }
		if scalar {
			b.op(C.IRT_INPLACECOPY, dst, f32([]int64{B, mc, N}, []int64{mc * N, N, 1}, 0, at(iAcc)))
			continue
		}
		// ((a0+a4)+(a2+a6))+((a1+a5)+(a3+a7)).
		r := B * mc
		b.add(f32([]int64{r, N, 4}, []int64{8 * N, 8, 1}, 0, at(iAcc)), f32([]int64{r, N, 4}, []int64{8 * N, 8, 1}, 4, at(iAcc)),
			f32([]int64{r, N, 4}, []int64{4 * N, 4, 1}, 0, at(iT4)), 1)
		b.add(f32([]int64{r, N, 2}, []int64{4 * N, 4, 1}, 0, at(iT4)), f32([]int64{r, N, 2}, []int64{4 * N, 4, 1}, 2, at(iT4)),
			f32([]int64{r, N, 2}, []int64{2 * N, 2, 1}, 0, at(iU)), 1)
		hs := dst
		if q1 {
			hs = plain(iS)
		}
		b.add(f32([]int64{B, mc, N}, []int64{mc * 2 * N, 2 * N, 2}, 0, at(iU)), f32([]int64{B, mc, N}, []int64{mc * 2 * N, 2 * N, 2}, 1, at(iU)), hs, 1)
		if q1 {
			b.add(plain(iS), plain(iSumm), dst, 1)
		}
	}
}
