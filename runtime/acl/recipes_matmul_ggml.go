//go:build cann

package acl

/*
#include "binding.h"
*/
import "C"

import (
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
	if err := b.ggmlMatmulShape(a, x, out, 256); err != nil {
		return err
	}
	l, w := b.kqWeight(a)
	xst, ost, err := b.ggmlMatmulStrides(x, out)
	if err != nil {
		return err
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
	k := b.newKQCall(l, w, M, oaddr, ostRow, ostCol)
	k.scales(xq, dy)
	if l.V == layout.KQX8 {
		k.repacked(xq)
		return
	}
	k.lanes(xq)
}

// kqCall is one kqDot: the weight (layout l at w), the M activation rows,
// the output, and the f32 scratch of its steps: the activations in lane
// order (xp), their 16-value sums (bs), d and the mins' scale per (column,
// row, super-block) (d, dm), three integer-sum tensors of up to nsb·8
// groups (p, r, mm), the accumulators (acc, accM) and the horizontal
// sums' partials (t4, u, s1, s2).
type kqCall struct {
	b                                                 *builder
	l                                                 layout.KQ
	w, oaddr                                          device.Ptr
	M, N, nsb, G16, ostRow, ostCol                    int64
	xp, bs, d, dm, p, r, mm, acc, accM, t4, u, s1, s2 device.Ptr
	zero                                              device.Ptr // f32 0
}

func (b *builder) newKQCall(l layout.KQ, w device.Ptr, M int64, oaddr device.Ptr, ostRow, ostCol int64) *kqCall {
	K, N := l.K, l.N
	nsb, G16, MN := K/256, K/16, M*N
	var sp scratchParts
	iXP, iBS, iD, iDM := sp.part(M*K), sp.part(M*G16), sp.part(MN*nsb), sp.part(MN*nsb)
	iP, iR, iMM := sp.part(8*nsb*MN), sp.part(8*nsb*MN), sp.part(8*nsb*MN)
	iAcc, iAccM, iT4, iU, iS1, iS2 := sp.part(8*MN), sp.part(8*MN), sp.part(4*MN), sp.part(2*MN), sp.part(MN), sp.part(MN)
	at := b.scratchF32("kq scratch", &sp)
	zero := b.table("f32 0", f32Bytes(0))
	return &kqCall{zero: zero, b: b, l: l, w: w, oaddr: oaddr, M: M, N: N, nsb: nsb, G16: G16, ostRow: ostRow, ostCol: ostCol,
		xp: at(iXP), bs: at(iBS), d: at(iD), dm: at(iDM), p: at(iP), r: at(iR), mm: at(iMM),
		acc: at(iAcc), accM: at(iAccM), t4: at(iT4), u: at(iU), s1: at(iS1), s2: at(iS2)}
}

func (k *kqCall) f32(shape, st []int64, off int64, p device.Ptr) C.uintptr_t {
	return k.b.tensor(C.ACL_FLOAT, shape, st, off, p)
}

func (k *kqCall) flat(n int64, p device.Ptr) C.uintptr_t {
	return k.f32([]int64{n}, []int64{1}, 0, p)
}

// wAt is the address of the weight copy's part at element off.
func (k *kqCall) wAt(off int64) device.Ptr { return k.w + device.Ptr(4*off) }

// plain is a contiguous [rows, N] view of p.
func (k *kqCall) plain(p device.Ptr, rows int64) C.uintptr_t {
	return k.f32([]int64{rows, k.N}, []int64{k.N, 1}, 0, p)
}

// outRows is the output's rows m0..m0+rows.
func (k *kqCall) outRows(m0, rows int64) C.uintptr_t {
	return k.f32([]int64{rows, k.N}, []int64{k.ostRow, k.ostCol}, m0*k.ostRow, k.oaddr)
}

// bmm: dst[g, m, n] = Σ_j X[m0+m, g·width + j] · W[n, g·width + j] for G
// groups, X's rows xRow apart, W's wRow apart.
func (k *kqCall) bmm(xp device.Ptr, xRow, m0, rows int64, wp device.Ptr, wRow, G, width int64, dst device.Ptr) {
	N := k.N
	k.b.matmul(C.IRT_BMM,
		k.f32([]int64{G, rows, width}, []int64{width, xRow, 1}, m0*xRow, xp),
		k.f32([]int64{G, width, N}, []int64{width, 1, wRow}, 0, wp),
		k.f32([]int64{G, rows, N}, []int64{rows * N, N, 1}, 0, dst))
}

// kqTerm is one product of a chain: a scale per super-block (ds) times
// the integer sums v.
type kqTerm struct{ ds, v device.Ptr }

// chain: acc[m, n, 0..L) = 0, then for t < T and each term (ds, v):
// acc = fma(ds[m0+m, n, t/sub], v[t, 0..L, m, n], acc).
func (k *kqCall) chain(acc device.Ptr, m0, rows, L, T, sub int64, terms ...kqTerm) {
	b, N, nsb := k.b, k.N, k.nsb
	accT := k.f32([]int64{rows, N, L}, []int64{N * L, L, 1}, 0, acc)
	b.op(C.IRT_INPLACECOPY, accT, k.f32([]int64{1}, []int64{1}, 0, k.zero))
	for t := range T {
		for _, tm := range terms {
			a := tensors(accT,
				k.f32([]int64{rows, N, 1}, []int64{N * nsb, nsb, 1}, m0*N*nsb+t/sub, tm.ds),
				k.f32([]int64{rows, N, L}, []int64{N, 1, rows * N}, t*L*rows*N, tm.v))
			a.s = b.scalarF32(1)
			b.call(C.IRT_INPLACEADDCMUL, a)
		}
	}
}

// hsum8: dst = ((a0+a4)+(a2+a6))+((a1+a5)+(a3+a7)) of acc[rows, N, 8].
func (k *kqCall) hsum8(acc device.Ptr, rows int64, dst C.uintptr_t) {
	b, N := k.b, k.N
	b.add(k.f32([]int64{rows, N, 4}, []int64{8 * N, 8, 1}, 0, acc), k.f32([]int64{rows, N, 4}, []int64{8 * N, 8, 1}, 4, acc),
		k.f32([]int64{rows, N, 4}, []int64{4 * N, 4, 1}, 0, k.t4), 1)
	k.hsum4(k.t4, rows, dst)
}

// hsum4: dst = (a0+a2)+(a1+a3) of acc[rows, N, 4].
func (k *kqCall) hsum4(acc device.Ptr, rows int64, dst C.uintptr_t) {
	b, N := k.b, k.N
	b.add(k.f32([]int64{rows, N, 2}, []int64{4 * N, 4, 1}, 0, acc), k.f32([]int64{rows, N, 2}, []int64{4 * N, 4, 1}, 2, acc),
		k.f32([]int64{rows, N, 2}, []int64{2 * N, 2, 1}, 0, k.u), 1)
	b.add(k.f32([]int64{rows, N}, []int64{2 * N, 2}, 0, k.u), k.f32([]int64{rows, N}, []int64{2 * N, 2}, 1, k.u), dst, 1)
}

// scales adds the activations' 16-value sums bs[m, g] and the scales of
// the chains: d = d_y·d_w and the mins' d_y·dm, [M, N, nsb].
func (k *kqCall) scales(xq, dy device.Ptr) {
	b, l, M, N, nsb, G16, K := k.b, k.l, k.M, k.N, k.nsb, k.G16, k.l.K
	rs := tensors(k.f32([]int64{M, G16, 16}, []int64{K, 16, 1}, 0, xq), k.f32([]int64{M, G16, 1}, []int64{G16, 1, 1}, 0, k.bs))
	rs.s = b.intArray(2)
	rs.i[0], rs.i[1] = 1, C.ACL_FLOAT
	b.call(C.IRT_REDUCESUM, rs)
	dyT := k.f32([]int64{M, 1, nsb}, []int64{nsb, nsb, 1}, 0, dy)
	b.op(C.IRT_MUL, dyT, k.f32([]int64{1, N, nsb}, []int64{N * nsb, nsb, 1}, 0, k.wAt(l.D)), k.f32([]int64{M, N, nsb}, []int64{N * nsb, nsb, 1}, 0, k.d))
	if l.DM >= 0 {
		b.op(C.IRT_MUL, dyT, k.f32([]int64{1, N, nsb}, []int64{N * nsb, nsb, 1}, 0, k.wAt(l.DM)), k.f32([]int64{M, N, nsb}, []int64{N * nsb, nsb, 1}, 0, k.dm))
	}
}

// repacked is the repacked q4_K: the first Mg columns in the GEMM's
// order, the rest in the GEMV's; out = acc − accMin.
func (k *kqCall) repacked(xq device.Ptr) {
	b, l, M, N, nsb, G16, K := k.b, k.l, k.M, k.N, k.nsb, k.G16, k.l.K
	Mg := M - M%4
	if Mg > 0 {
		k.bmm(xq, K, 0, Mg, k.wAt(l.W), K, 4*nsb, 64, k.p)
		k.bmm(k.bs, G16, 0, Mg, k.wAt(l.MN), G16, 4*nsb, 4, k.mm)
		k.chain(k.acc, 0, Mg, 1, 4*nsb, 4, kqTerm{k.d, k.p})
		k.chain(k.accM, 0, Mg, 1, 4*nsb, 4, kqTerm{k.dm, k.mm})
		b.add(k.plain(k.acc, Mg), k.plain(k.accM, Mg), k.outRows(0, Mg), -1)
	}
	if Mv := M - Mg; Mv > 0 {
		// Two exact halves of each super-block, joined by one add.
		k.bmm(xq, K, Mg, Mv, k.wAt(l.W), K, 2*nsb, 128, k.r)
		b.add(k.f32([]int64{nsb, Mv, N}, []int64{2 * Mv * N, N, 1}, 0, k.r), k.f32([]int64{nsb, Mv, N}, []int64{2 * Mv * N, N, 1}, Mv*N, k.r),
			k.f32([]int64{nsb, Mv, N}, []int64{Mv * N, N, 1}, 0, k.p), 1)
		k.bmm(k.bs, G16, Mg, Mv, k.wAt(l.MN), G16, nsb, 16, k.mm)
		k.chain(k.acc, Mg, Mv, 1, nsb, 1, kqTerm{k.d, k.p})
		k.chain(k.accM, Mg, Mv, 1, nsb, 1, kqTerm{k.dm, k.mm})
		b.add(k.plain(k.acc, Mv), k.plain(k.accM, Mv), k.outRows(Mg, Mv), -1)
	}
}

// lanes is every other variant: the eight lanes per super-block, their
// chain, the mins, and the horizontal sum.
func (k *kqCall) lanes(xq device.Ptr) {
	b, l, M, N, nsb, G16, K := k.b, k.l, k.M, k.N, k.nsb, k.G16, k.l.K
	// Lane order: value c·32 + 4k + j of a super-block to k·32 + c·4 + j.
	b.op(C.IRT_INPLACECOPY,
		k.f32([]int64{M, nsb, 8, 8, 4}, []int64{K, 256, 4, 32, 1}, 0, k.xp),
		k.f32([]int64{M, nsb, 8, 8, 4}, []int64{K, 256, 32, 4, 1}, 0, xq))
	k.bmm(k.xp, K, 0, M, k.wAt(l.W), K, 8*nsb, 32, k.p)
	terms := []kqTerm{{k.d, k.p}}
	switch {
	case l.V == layout.KQQ6Bsums:
		n := 8 * nsb * M * N
		k.bmm(k.xp, K, 0, M, k.wAt(l.SCV), K, 8*nsb, 32, k.r)
		k.bmm(k.bs, G16, 0, M, k.wAt(l.MN), G16, 8*nsb, 2, k.mm)
		b.inplaceAdd(k.flat(n, k.r), k.flat(n, k.mm), -1)
		b.inplaceAdd(k.flat(n, k.p), k.flat(n, k.r), 32)
	case l.T == ir.Q2_K:
		k.bmm(k.bs, G16, 0, M, k.wAt(l.MN), G16, 8*nsb, 2, k.mm)
		terms = []kqTerm{{k.dm, k.mm}, {k.d, k.p}}
	}
	k.chain(k.acc, 0, M, 8, nsb, 1, terms...)
	switch l.T {
	case ir.Q4_K:
		k.bmm(k.bs, G16, 0, M, k.wAt(l.MN), G16, 4*nsb, 4, k.mm)
		k.chain(k.accM, 0, M, 4, nsb, 1, kqTerm{k.dm, k.mm})
		k.hsum8(k.acc, M, k.plain(k.s1, M))
		k.hsum4(k.accM, M, k.plain(k.s2, M))
		b.add(k.plain(k.s1, M), k.plain(k.s2, M), k.outRows(0, M), 1)
	case ir.Q5_K:
		k.bmm(k.bs, G16, 0, M, k.wAt(l.MN), G16, nsb, 16, k.mm)
		k.chain(k.accM, 0, M, 1, nsb, 1, kqTerm{k.dm, k.mm})
		k.hsum8(k.acc, M, k.plain(k.s1, M))
		b.add(k.plain(k.s1, M), k.plain(k.accM, M), k.outRows(0, M), 1)
	default:
		k.hsum8(k.acc, M, k.outRows(0, M))
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
	if err := b.ggmlMatmulShape(a, x, out, 32); err != nil {
		return err
	}
	l, w := b.q8Weight(a)
	xst, ost, err := b.ggmlMatmulStrides(x, out)
	if err != nil {
		return err
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
// (w). scalar selects the repacked q4_0 order. The activation rows go in
// passes of Mc, the blocks of a pass in chunks of cb (q8Call).
func (b *builder) q8Dot(t ir.DType, scalar bool, B, M, N, K int64, x, w q8Parts, addr device.Ptr, ost [3]int64) {
	q := b.newQ8Call(scalar, B, M, N, K, x, w, addr, ost)
	nb := K / 32
	for m0 := int64(0); m0 < M; m0 += q.Mc {
		mc := min(q.Mc, M-m0)
		accT, summT := q.clear(mc)
		for c0 := int64(0); c0 < nb; c0 += q.cb {
			q.blocks(m0, mc, c0, min(q.cb, nb-c0), accT, summT)
		}
		q.finish(m0, mc)
	}
}

// q8Call is one q8Dot: its operands, the lanes per block (L, each of
// width values), the columns per pass (Mc) and blocks per chunk (cb), and
// the f32 scratch of its steps: the integer sums (p), the scale products
// (d), the accumulators (acc, summ) and the horizontal sum's partials
// (t4, u, s).
type q8Call struct {
	b                      *builder
	scalar, q1             bool
	B, M, N, K, L, width   int64
	Mc, cb                 int64
	x, w                   q8Parts
	addr                   device.Ptr
	ost                    [3]int64
	p, d, acc, summ, t4, u device.Ptr
	s, zero                device.Ptr
}

func (b *builder) newQ8Call(scalar bool, B, M, N, K int64, x, w q8Parts, addr device.Ptr, ost [3]int64) *q8Call {
	nb := K / 32
	q := &q8Call{b: b, scalar: scalar, q1: x.m != 0 && w.m != 0, B: B, M: M, N: N, K: K, L: 8, width: 4, x: x, w: w, addr: addr, ost: ost}
	if scalar {
		q.L, q.width = 1, 32
	}
	// Columns per pass and blocks per chunk: the lanes of a chunk,
	// B·cb·L·Mc·N values, within q8ScratchCap (at least one block of one
	// column).
	capQ8, L := q8ScratchCap, q.L
	q.Mc = max(1, min(M, capQ8/max(1, B*L*N)))
	q.cb = max(1, min(nb, capQ8/max(1, B*L*q.Mc*N)))
	n := B * q.Mc * N
	var sp scratchParts
	iP, iD, iAcc, iSumm := sp.part(q.cb*L*n), sp.part(q.cb*n), sp.part(L*n), sp.part(n)
	iT4, iU, iS := sp.part(4*n), sp.part(2*n), sp.part(n)
	at := b.scratchF32("q8 scratch", &sp)
	q.p, q.d, q.acc, q.summ, q.t4, q.u, q.s = at(iP), at(iD), at(iAcc), at(iSumm), at(iT4), at(iU), at(iS)
	q.zero = b.table("f32 0", f32Bytes(0))
	return q
}

func (q *q8Call) f32(shape, st []int64, off int64, p device.Ptr) C.uintptr_t {
	return q.b.tensor(C.ACL_FLOAT, shape, st, off, p)
}

// clear zeroes the accumulators acc[B, mc, N, L] (and summs) of a pass of
// mc columns and returns them.
func (q *q8Call) clear(mc int64) (accT, summT C.uintptr_t) {
	B, N, L := q.B, q.N, q.L
	accT = q.f32([]int64{B, mc, N, L}, []int64{mc * N * L, N * L, L, 1}, 0, q.acc)
	q.b.op(C.IRT_INPLACECOPY, accT, q.f32([]int64{1}, []int64{1}, 0, q.zero))
	summT = q.f32([]int64{B, mc, N}, []int64{mc * N, N, 1}, 0, q.summ)
	if q.q1 {
		q.b.op(C.IRT_INPLACECOPY, summT, q.f32([]int64{1}, []int64{1}, 0, q.zero))
	}
	return accT, summT
}

// blocks adds blocks c0..c0+nc of columns m0..m0+mc into the
// accumulators: the integer sums, the scale products, then per block
// acc = fma(d, lanes, acc) (and summs = fma(m_w, s_x, summs)).
func (q *q8Call) blocks(m0, mc, c0, nc int64, accT, summT C.uintptr_t) {
	b, B, M, N, K, L, width, x, w := q.b, q.B, q.M, q.N, q.K, q.L, q.width, q.x, q.w
	nb, G := K/32, nc*L
	// P[p, g, i, n] = Σ_j x[p, m0+i, c0·32 + g·width + j] · w[p, n, c0·32 + g·width + j].
	if B == 1 {
		b.matmul(C.IRT_BMM,
			q.f32([]int64{G, mc, width}, []int64{width, K, 1}, m0*K+c0*32, x.w),
			q.f32([]int64{G, width, N}, []int64{width, 1, K}, c0*32, w.w),
			q.f32([]int64{G, mc, N}, []int64{mc * N, N, 1}, 0, q.p))
	} else {
		b.matmul(C.IRT_MATMUL,
			q.f32([]int64{B, G, mc, width}, []int64{M * K, width, K, 1}, m0*K+c0*32, x.w),
			q.f32([]int64{B, G, width, N}, []int64{N * K, width, 1, K}, c0*32, w.w),
			q.f32([]int64{B, G, mc, N}, []int64{G * mc * N, mc * N, N, 1}, 0, q.p))
	}
	// D[p, i, n, c] = d_x[p, m0+i, c0+c] · d_w[p, n, c0+c].
	b.op(C.IRT_MUL,
		q.f32([]int64{B, mc, 1, nc}, []int64{M * nb, nb, 1, 1}, m0*nb+c0, x.d),
		q.f32([]int64{B, 1, N, nc}, []int64{N * nb, 1, nb, 1}, c0, w.d),
		q.f32([]int64{B, mc, N, nc}, []int64{mc * N * nc, N * nc, nc, 1}, 0, q.d))
	for c := range nc {
		a := tensors(accT,
			q.f32([]int64{B, mc, N, 1}, []int64{mc * N * nc, N * nc, nc, 1}, c, q.d),
			q.f32([]int64{B, mc, N, L}, []int64{G * mc * N, N, 1, mc * N}, c*L*mc*N, q.p))
		a.s = b.scalarF32(1)
		b.call(C.IRT_INPLACEADDCMUL, a)
		if q.q1 {
			// summs = fma(m_w, s_x, summs).
			a := tensors(summT,
				q.f32([]int64{B, 1, N}, []int64{N * nb, 1, nb}, c0+c, w.m),
				q.f32([]int64{B, mc, 1}, []int64{M * nb, nb, 1}, m0*nb+c0+c, x.m))
			a.s = b.scalarF32(1)
			b.call(C.IRT_INPLACEADDCMUL, a)
		}
	}
}

// finish writes the output of columns m0..m0+mc: the accumulator (the
// repacked order), else ((a0+a4)+(a2+a6))+((a1+a5)+(a3+a7)), plus the
// summs of q8_1.
func (q *q8Call) finish(m0, mc int64) {
	b, B, N := q.b, q.B, q.N
	dst := q.f32([]int64{B, mc, N}, q.ost[:], m0*q.ost[1], q.addr)
	plain := func(p device.Ptr) C.uintptr_t { return q.f32([]int64{B, mc, N}, []int64{mc * N, N, 1}, 0, p) }
	if q.scalar {
		b.op(C.IRT_INPLACECOPY, dst, plain(q.acc))
		return
	}
	r := B * mc
	b.add(q.f32([]int64{r, N, 4}, []int64{8 * N, 8, 1}, 0, q.acc), q.f32([]int64{r, N, 4}, []int64{8 * N, 8, 1}, 4, q.acc),
		q.f32([]int64{r, N, 4}, []int64{4 * N, 4, 1}, 0, q.t4), 1)
	b.add(q.f32([]int64{r, N, 2}, []int64{4 * N, 4, 1}, 0, q.t4), q.f32([]int64{r, N, 2}, []int64{4 * N, 4, 1}, 2, q.t4),
		q.f32([]int64{r, N, 2}, []int64{2 * N, 2, 1}, 0, q.u), 1)
	hs := dst
	if q.q1 {
		hs = plain(q.s)
	}
	b.add(q.f32([]int64{B, mc, N}, []int64{mc * 2 * N, 2 * N, 2}, 0, q.u), q.f32([]int64{B, mc, N}, []int64{mc * 2 * N, 2 * N, 2}, 1, q.u), hs, 1)
	if q.q1 {
		b.add(plain(q.s), plain(q.summ), dst, 1)
	}
}

// ggmlMatmulShape checks the operands of an exact-integer mul_mat: a 2-D
// weight a of K columns (a multiple of block) by 2-D f32 activations x
// into f32 out.
func (b *builder) ggmlMatmulShape(a, x, out device.TensorDesc, block int64) error {
	K := a.Ne[0]
	if a.Ne[2] != 1 || a.Ne[3] != 1 || x.Ne[2] != 1 || x.Ne[3] != 1 || x.Ne[0] != K || x.DType != ir.F32 || out.DType != ir.F32 {
		return b.unsupported("%s mul_mat of a %v by %s %v: 2-D f32 activations only", a.DType, a.Ne, x.DType, x.Ne)
	}
	if K%block != 0 {
		return b.unsupported("%s weight with %d columns (not a multiple of %d)", a.DType, K, block)
	}
	return nil
}

// ggmlMatmulStrides are the element strides of x and out in ACL's order,
// after the weight was placed (its error, if any, first).
func (b *builder) ggmlMatmulStrides(x, out device.TensorDesc) (xst, ost []int64, err error) {
	_, xst, ok := aclOrder(x)
	if !ok {
		return xst, ost, b.unsupported("activations %v", x.Nb)
	}
	_, ost, _ = aclOrder(out)
	return xst, ost, b.err
}
