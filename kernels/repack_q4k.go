package kernels

import (
	"fmt"
	"strings"

	"github.com/irtool/irtool/gguf"
)

// LlamaBuild names the llama.cpp build whose CPU arithmetic the quantised
// matmuls reproduce. llama.cpp's x86 CPU backend (AVX2, no AVX-512) changed
// the float summation order of two weight types between the builds this
// package knows, by a few ulps per product, which a quantised model can
// amplify to 1e-2 of its logits over a few dozen steps; reproducing a
// llama.cpp run needs the order of the build that made it:
//
//   - Q4_K: llama.cpp repacks every 2-D MUL_MAT weight (and 3-D MUL_MAT_ID
//     expert stack) with F32 activations whose row count ne[1] is a
//     multiple of 8 into an interleaved layout chosen by
//     ggml_repack_get_optimal_repack_type (ggml/src/ggml-cpu/repack.cpp).
//     Q4_0 has been repacked to q4_0_8x8 in both builds; Q4_K is repacked
//     to q4_K_8x8 (dotQ4Kx8) only in the newer one. (Q2_K is repacked only
//     with AVX-512; Q5_K, Q6_K and Q8_0 only on ARM and RISC-V.)
//   - Q6_K: ggml_vec_dot_q6_K_q8_K (ggml-cpu/arch/x86/quants.c) takes the
//     -32 offset of the weights out of the lanes and subtracts it per lane
//     from the activation block sums in the newer build (dotQ6KBsums).
type LlamaBuild int

const (
	// LlamaCurrent is llama.cpp commit 3f545bec (build 10587, August
	// 2026) and its neighbours: Q4_0 and Q4_K repacked, Q6_K with the
	// block-sum offset. The default.
	LlamaCurrent LlamaBuild = iota
	// LlamaC392e50 is llama.cpp commit c392e50 and other builds before
	// x86 q4_K_8x8: only Q4_0 repacked, Q4_K in ggml_vec_dot_q4_K_q8_K's
	// order, Q6_K with the offset inside the lanes.
	LlamaC392e50
)

// String names the build as ParseLlamaBuild reads it.
func (b LlamaBuild) String() string {
	switch b {
	case LlamaCurrent:
		return "3f545bec"
	case LlamaC392e50:
		return "c392e50"
	}
	return fmt.Sprintf("LlamaBuild(%d)", int(b))
}

// ParseLlamaBuild maps a llama.cpp commit hash known to this package
// (3f545bec… or c392e50…, at least 7 hex digits) or "current" to a
// LlamaBuild.
func ParseLlamaBuild(s string) (LlamaBuild, error) {
	if s == "current" {
		return LlamaCurrent, nil
	}
	if len(s) >= 7 {
		for _, b := range []struct {
			commit string
			b      LlamaBuild
		}{
			{"3f545beccee69d9975f466ec7e45fd9aacd8ba90", LlamaCurrent},
			{"c392e5094deaf2d1a7c18683214f007fad3fe42b", LlamaC392e50},
		} {
			if len(s) <= len(b.commit) && strings.EqualFold(b.commit[:len(s)], s) {
				return b.b, nil
			}
		}
	}
	return 0, fmt.Errorf("kernels: unknown llama.cpp build %q (want current, 3f545bec or c392e50)", s)
}

// qkDot returns the dot product of a K-quant weight row with a Q8_K
// activation row that llama.cpp's build o.LlamaBuild uses for a·b, and,
// for a repacked Q4_K matrix, the one of its GEMM (qkDotGemm).
func qkDot(o Options, a, b Tensor) func(*qkRow, q8Row) float32 {
	switch {
	case repackQ4K(o, a, b):
		return dotQ4Kx8
	case o.LlamaBuild == LlamaCurrent && a.Type == gguf.TypeQ6_K:
		return dotQ6KBsums
	}
	return dotQK
}

// qkDotGemm returns the dot product llama.cpp uses for the activation
// columns it multiplies four at a time (repacked Q4_K: dotQ4Kx8Gemm), or
// nil when every column takes qkDot's.
func qkDotGemm(o Options, a, b Tensor) func(*qkRow, q8Row) float32 {
	if repackQ4K(o, a, b) {
		return dotQ4Kx8Gemm
	}
	return nil
}

// repackQ4K reports whether llama.cpp repacks the Q4_K weight a to
// q4_K_8x8 for a product with b under o: a 2-D Q4_K matrix with a
// multiple of 8 rows, F32 activations, integer (QuantGGML) arithmetic.
func repackQ4K(o Options, a, b Tensor) bool {
	return o.LlamaBuild == LlamaCurrent && o.Quant == QuantGGML && a.Type == gguf.TypeQ4_K &&
		a.Ne[1]%8 == 0 && a.Ne[2] == 1 && a.Ne[3] == 1 && b.Type == gguf.TypeF32
}

// dotQ4Kx8 is the dot product of one Q4_K weight row with one Q8_K
// activation row in the order of llama.cpp's repacked q4_K_8x8 kernels on
// AVX2 (ggml_gemv_q4_K_8x8_q8_K and ggml_gemm_q4_K_8x8_q8_K in
// ggml-cpu/arch/x86/repack.cpp), which compute eight interleaved rows at a
// time but keep one accumulator per row: per super-block of 256 values the
// scaled products Σ_sub sc[sub]·Σ q·y and the mins Σ_sub m[sub]·bsum[sub]
// are exact integers (int16 partial sums that cannot overflow, then
// int32); each is converted to float once and accumulated with an FMA,
// acc = fma(float(isum), d_w·d_y, acc) and
// accMin = fma(float(imin), dmin_w·d_y, accMin) (the scale products
// rounded to float32 first); the result is acc − accMin. (vec_dot instead
// keeps eight lanes per row and four lanes of mins: dotQK.) The activation
// rows are quantised by quantize_row_q8_K for single columns and by
// ggml_quantize_mat_q8_K_4x8 for groups of four; both give quantizeQ8_K's
// values up to a joint sign flip of a block's d and qs when +max and -max
// both occur, which leaves every product unchanged.
func dotQ4Kx8(a *qkRow, b q8Row) float32 {
	var acc, accMin float32
	for s, dw := range a.d {
		q := a.q[s*256 : s*256+256 : s*256+256]
		y := b.qs[s*256 : s*256+256 : s*256+256]
		sc := a.sc[s*16 : s*16+16 : s*16+16]
		mn := a.m[s*16 : s*16+16 : s*16+16]
		bs := b.bsums[s*16 : s*16+16 : s*16+16]
		var isum, imin int32
		// Eight sub-blocks of 32 values; unpackQK repeats each sub-block's
		// scale and min in both of its 16-value groups.
		for sub := range 8 {
			is, im := q4KSubBlock(q, y, sc, mn, bs, sub)
			isum += is
			imin += im
		}
		dy := b.d[s]
		acc = fma32(float32(isum), dw*dy, acc)
		accMin = fma32(float32(imin), a.dmin[s]*dy, accMin)
	}
	return acc - accMin
}

// dotQ4Kx8Gemm is dotQ4Kx8 as ggml_gemm_q4_K_8x8_q8_K computes it, for
// the activation columns llama.cpp multiplies four at a time (the first
// n − n mod 4 of a product's n columns; the rest take the GEMV,
// dotQ4Kx8): the same exact integers, but converted and accumulated once
// per pair of 32-value sub-blocks instead of once per super-block,
// acc = fma(float(isum_pair), d_w·d_y, acc) and
// accMin = fma(float(imin_pair), dmin_w·d_y, accMin), four of each per
// super-block; the result is acc − accMin.
func dotQ4Kx8Gemm(a *qkRow, b q8Row) float32 {
	var acc, accMin float32
	for s, dw := range a.d {
		q := a.q[s*256 : s*256+256 : s*256+256]
		y := b.qs[s*256 : s*256+256 : s*256+256]
		sc := a.sc[s*16 : s*16+16 : s*16+16]
		mn := a.m[s*16 : s*16+16 : s*16+16]
		bs := b.bsums[s*16 : s*16+16 : s*16+16]
		dy := b.d[s]
		d, dmin := dw*dy, a.dmin[s]*dy
		for pair := range 4 {
			var isum, imin int32
			for sub := 2 * pair; sub < 2*pair+2; sub++ {
				is, im := q4KSubBlock(q, y, sc, mn, bs, sub)
				isum += is
				imin += im
			}
			acc = fma32(float32(isum), d, acc)
			accMin = fma32(float32(imin), dmin, accMin)
		}
	}
	return acc - accMin
}

// q4KSubBlock is sub-block sub (32 values) of a Q4_K super-block against
// the Q8_K activation: its scaled integer product sc·Σ x·y and its min
// term m·(the two 16-value activation sums); unpackQK repeats each
// sub-block's scale and min in both of its 16-value groups. Exact
// integers, so the callers' groupings give the same sums.
func q4KSubBlock(q, y []int8, sc, mn, bs []int32, sub int) (isum, imin int32) {
	x := q[sub*32 : sub*32+32 : sub*32+32]
	yy := y[sub*32 : sub*32+32 : sub*32+32]
	var p int32
	for i := range x {
		p += int32(x[i]) * int32(yy[i])
	}
	return sc[2*sub] * p, mn[2*sub] * (bs[2*sub] + bs[2*sub+1])
}
