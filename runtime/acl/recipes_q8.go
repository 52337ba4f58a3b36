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
//     both operands, the weight converted at load (q8Values): every
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
	wp := q8Parts{w: w + device.Ptr(4*l.w), d: w + device.Ptr(4*l.d)}
	if l.m >= 0 {
		wp.m = w + device.Ptr(4*l.m)
	}
	b.q8Dot(a.DType, q8Scalar(a.DType, N), 1, M, N, K, q8Parts{w: xq, d: dx, m: sums}, wp, out.Addr, [3]int64{M * ost[2], ost[2], ost[3]})
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
	var sp scratchParts
	iP, iD, iAcc, iSumm := sp.part(cb*L*n), sp.part(cb*n), sp.part(L*n), sp.part(n)
	iT4, iU, iS := sp.part(4*n), sp.part(2*n), sp.part(n)
	at := b.scratchF32("q8 scratch", &sp)
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

// q8Key names the converted copy of the weight at addr (q8Values).
func q8Key(t ir.DType, addr device.Ptr, K, rows int64) string {
	return fmt.Sprintf("q8 %s %#x [%d,%d]", t, uint64(addr), K, rows)
}

// q8Weight returns the layout and device address of the converted copy
// of quantised weight a (its rows of K = Ne[0] values; the outer dims are
// rows too, expert after expert): the one placed at load (PlaceWeight),
// else, outside a capture, one made now from the blocks read back.
func (b *builder) q8Weight(a device.TensorDesc) (q8Layout, device.Ptr) {
	K, rows := a.Ne[0], a.Ne[1]*a.Ne[2]*a.Ne[3]
	l := newQ8Layout(a.DType, K, rows)
	if b.err != nil {
		return l, 0
	}
	if !dense(a) {
		b.unsupported("non-contiguous %s weight (nb %v)", a.DType, a.Nb)
		return l, 0
	}
	key := q8Key(a.DType, a.Addr, K, rows)
	p, err := b.onDemand(a, key, "weight", func(n *npu, blocks []byte) (device.Ptr, error) {
		return b.d.placeQ8(n, key, l, blocks)
	})
	if err != nil {
		b.setErr(err)
		return l, 0
	}
	return l, p
}

// placeQ8 converts the blocks of a matrix into layout l (q8Values) and
// uploads the copy into the pool under key. The caller holds n.cmu.
func (d *Device) placeQ8(n *npu, key string, l q8Layout, blocks []byte) (device.Ptr, error) {
	vals, err := q8Values(l, blocks)
	if err != nil {
		return 0, err
	}
	return d.placeF32(n, key, fmt.Sprintf("converted %s weight", l.t), vals)
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
	gather(w+device.Ptr(4*l.w), N*K, at(iW))
	gather(w+device.Ptr(4*l.d), N*nb, at(iWD))
	wp := q8Parts{w: at(iW), d: at(iWD)}
	// Slot (t, s) reads activation row t·ne11 + s mod ne11.
	spread := func(src device.Ptr, width int64, dst device.Ptr) {
		b.op(C.IRT_INPLACECOPY, b.tensor(C.ACL_FLOAT, []int64{T, nUsed, width}, []int64{nUsed * width, width, 1}, 0, dst),
			b.tensor(C.ACL_FLOAT, []int64{T, ne11, width}, []int64{ne11 * width, width, 1}, 0, src))
	}
	spread(xq, K, at(iX))
	spread(dx, nb, at(iXD))
	xp := q8Parts{w: at(iX), d: at(iXD)}
	if l.m >= 0 {
		gather(w+device.Ptr(4*l.m), N*nb, at(iWM))
		spread(sums, nb, at(iXM))
		wp.m, xp.m = at(iWM), at(iXM)
	}
	b.q8Dot(as.DType, q8Scalar(as.DType, N), P, 1, N, K, xp, wp, out.Addr, [3]int64{out.Nb[1] / 4, out.Nb[1] / 4, 1})
	return b.err
}
