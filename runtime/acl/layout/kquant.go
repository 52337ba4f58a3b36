package layout

import (
	"encoding/binary"
	"fmt"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// The K-quant weights of the "ggml" QuantMatmul mode (quantMulMatK): each
// matrix is converted once at load into f32 integer operands laid out for
// the exact integer sums of ggml-cpu's x86 AVX2 dot products
// (ggml_vec_dot_q{2..6}_K_q8_K in ggml-cpu/arch/x86/quants.c and, for a
// repacked q4_K, ggml_gemv/gemm_q4_K_8x8_q8_K in ggml-cpu/arch/x86/repack.cpp).
//
// A super-block of 256 values is 16 groups of 16: value j of group g is
// d·sc[g]·q[j] − dmin·m[g] with integers q, sc, m (q4_K and q5_K repeat a
// 32-value sub-block's scale and min in its two groups). The AVX2 kernels
// multiply 32 consecutive values per 256-bit register, so int32 lane k
// (0..7) collects values 4k..4k+3 of each of the eight 32-value chunks:
// the "lane order" below puts those 32 values next to each other
// (position k·32 + c·4 + j for value c·32 + 4k + j), so that a lane sum is
// one contiguous dot of 32.

// KQTypes are the K-quant types whose 2-D mul_mat the "ggml" QuantMatmul
// mode computes with exact integer sums (layout KQ).
var KQTypes = map[ir.DType]bool{ir.Q2_K: true, ir.Q3_K: true, ir.Q4_K: true, ir.Q5_K: true, ir.Q6_K: true}

// KQVariant is the order of the integer sums of one K-quant matrix.
type KQVariant int

const (
	// KQLanes: eight lanes per super-block (ggml_vec_dot_q*_K_q8_K).
	KQLanes KQVariant = iota
	// KQQ6Bsums: q6_K with the -32 offset taken out of the lanes and
	// subtracted per lane from the activation's 16-value sums (llama.cpp
	// 3f545bec's ggml_vec_dot_q6_K_q8_K).
	KQQ6Bsums
	// KQX8: q4_K repacked to q4_K_8x8 (3f545bec, a multiple of 8 rows): one
	// integer per super-block (GEMV) or per pair of 32-value sub-blocks
	// (GEMM, groups of four activation columns), natural order.
	KQX8
)

// KQVariantOf is the variant llama.cpp build lb uses for a 2-D matrix of
// type t with N rows and f32 activations (kernels' qkDot and qkDotGemm).
func KQVariantOf(t ir.DType, N int64, lb kernels.LlamaBuild) KQVariant {
	switch {
	case t == ir.Q4_K && lb == kernels.LlamaCurrent && N%8 == 0:
		return KQX8
	case t == ir.Q6_K && lb == kernels.LlamaCurrent:
		return KQQ6Bsums
	}
	return KQLanes
}

// KQ locates the parts of a converted K-quant matrix (N rows of K)
// in its f32 copy, as offsets in elements; -1 when the variant has none.
//
//	W    [N, K]       the integers sc·q per value, lane order (natural for KQX8)
//	SCV  [N, K]       KQQ6Bsums: the scale sc of each value, lane order
//	D    [N, nsb]     the super-block scales d
//	DM   [N, nsb]     the super-block mins: -dmin (q2_K, q4_K, q5_K lanes),
//	                  dmin (KQX8)
//	MN   [N, nsb·16]  per group of 16: the mins m (q2_K, q4_K, q5_K), the
//	                  scales sc (KQQ6Bsums)
//
// T is the weight's type, V the variant, NSB = K/256 the super-blocks per
// row, Size the copy's length in f32 elements.
type KQ struct {
	T                       ir.DType
	V                       KQVariant
	K, N, NSB               int64
	W, SCV, D, DM, MN, Size int64
}

// NewKQ is the layout of an N×K matrix of K-quant type t in variant v.
func NewKQ(t ir.DType, K, N int64, v KQVariant) KQ {
	l := KQ{T: t, V: v, K: K, N: N, NSB: K / 256, SCV: -1, DM: -1, MN: -1}
	off := int64(0)
	take := func(n int64) int64 {
		o := off
		off += (n + 15) / 16 * 16 // 64-byte aligned parts
		return o
	}
	l.W = take(N * K)
	if v == KQQ6Bsums {
		l.SCV = take(N * K)
	}
	l.D = take(N * l.NSB)
	if t == ir.Q2_K || t == ir.Q4_K || t == ir.Q5_K {
		l.DM = take(N * l.NSB)
	}
	if t == ir.Q2_K || t == ir.Q4_K || t == ir.Q5_K || v == KQQ6Bsums {
		l.MN = take(N * l.NSB * 16)
	}
	l.Size = off
	return l
}

// lanePos is the position of value v (0..255) of a super-block in lane
// order.
func lanePos(v int) int {
	c, k, j := v/32, v%32/4, v%4
	return k*32 + c*4 + j
}

// kqSuper is one super-block unpacked: q per value, sc and m per group of
// 16, d and dmin.
type kqSuper struct {
	q       [256]int32
	sc, m   [16]int32
	d, dmin float32
}

// unpackKQ unpacks the super-block b of type t (the formats of ggml's
// block_q2_K … block_q6_K, ggml-common.h).
func unpackKQ(t ir.DType, b []byte, s *kqSuper) {
	half := func(p []byte) float32 { return gguf.F16ToF32(binary.LittleEndian.Uint16(p)) }
	*s = kqSuper{}
	switch t {
	case ir.Q2_K: // scales[16] (scale low nibble, min high), qs[64], d, dmin
		for g := range 16 {
			s.sc[g], s.m[g] = int32(b[g]&15), int32(b[g]>>4)
		}
		s.d, s.dmin = half(b[80:]), half(b[82:])
		for v := range 256 {
			n, r := v/128, v%128 // 128 values per 32 bytes of qs
			shift, l := uint(r/32*2), r%32
			s.q[v] = int32(b[16+n*32+l] >> shift & 3)
		}
	case ir.Q3_K: // hmask[32], qs[64], scales[12] (six-bit, biased by 32), d
		sb := b[96:108]
		for g := range 16 {
			var lo, hi uint8
			if g < 8 {
				lo = sb[g] & 15
			} else {
				lo = sb[g-8] >> 4
			}
			hi = sb[8+g%4] >> (2 * uint(g/4)) & 3
			s.sc[g] = int32(lo|hi<<4) - 32
		}
		s.d = half(b[108:])
		for v := range 256 {
			n, r := v/128, v%128
			shift, l := uint(r/32*2), r%32
			q := int32(b[32+n*32+l] >> shift & 3)
			if b[l]&(1<<uint(v/32)) == 0 {
				q -= 4
			}
			s.q[v] = q
		}
	case ir.Q4_K, ir.Q5_K: // d, dmin, scales[12] (six-bit scales and mins), [qh[32]], qs[128]
		s.d, s.dmin = half(b), half(b[2:])
		sc := b[4:16]
		for sub := range 8 {
			var c, m uint8
			if sub < 4 {
				c, m = sc[sub]&63, sc[sub+4]&63
			} else {
				c, m = sc[sub+4]&15|sc[sub-4]>>6<<4, sc[sub+4]>>4|sc[sub]>>6<<4
			}
			s.sc[2*sub], s.sc[2*sub+1] = int32(c), int32(c)
			s.m[2*sub], s.m[2*sub+1] = int32(m), int32(m)
		}
		qs, qh := b[16:144], []byte(nil)
		if t == ir.Q5_K {
			qh, qs = b[16:48], b[48:176]
		}
		for v := range 256 {
			j, hiNib, l := v/64, v%64/32, v%32
			q := int32(qs[j*32+l] >> (4 * uint(hiNib)) & 15)
			if qh != nil && qh[l]>>uint(2*j+hiNib)&1 != 0 {
				q += 16
			}
			s.q[v] = q
		}
	case ir.Q6_K: // ql[128], qh[64], scales[16] int8, d
		ql, qh := b[0:128], b[128:192]
		for g := range 16 {
			s.sc[g] = int32(int8(b[192+g]))
		}
		s.d = half(b[208:])
		for v := range 256 {
			n, r := v/128, v%128
			part, l := r/32, r%32
			lq := ql[n*64+l+32*(part%2)]
			lo := lq & 15
			if part >= 2 {
				lo = lq >> 4
			}
			hi := qh[n*32+l] >> (2 * uint(part)) & 3
			s.q[v] = int32(lo|hi<<4) - 32
		}
	}
}

// KQValues converts N rows of K values of K-quant type t (blocks) into the
// f32 copy of layout l.
func KQValues(l KQ, blocks []byte) ([]float32, error) {
	ts := l.T.TypeSize()
	if l.K%256 != 0 || int64(len(blocks)) != l.N*l.NSB*ts {
		return nil, fmt.Errorf("%s: %d bytes for a %d×%d matrix", l.T, len(blocks), l.N, l.K)
	}
	out := make([]float32, l.Size)
	var s kqSuper
	for n := range l.N {
		for sb := range l.NSB {
			i := n*l.NSB + sb
			unpackKQ(l.T, blocks[i*ts:(i+1)*ts], &s)
			base := n*l.K + sb*256
			for v := range 256 {
				p := int64(v)
				if l.V != KQX8 {
					p = int64(lanePos(v))
				}
				out[l.W+base+p] = float32(s.sc[v/16] * s.q[v])
				if l.SCV >= 0 {
					out[l.SCV+base+p] = float32(s.sc[v/16])
				}
			}
			out[l.D+i] = s.d
			if l.DM >= 0 {
				if l.V == KQX8 {
					out[l.DM+i] = s.dmin
				} else {
					out[l.DM+i] = -s.dmin
				}
			}
			if l.MN >= 0 {
				for g := range 16 {
					if l.V == KQQ6Bsums {
						out[l.MN+i*16+int64(g)] = float32(s.sc[g])
					} else {
						out[l.MN+i*16+int64(g)] = float32(s.m[g])
					}
				}
			}
		}
	}
	return out, nil
}

// KQStackValues converts E stacked matrices of layout l (blocks, expert
// after expert) into E copies of that layout, l.Size elements apart.
func KQStackValues(l KQ, E int64, blocks []byte) ([]float32, error) {
	per := l.N * l.NSB * l.T.TypeSize()
	if E <= 0 || int64(len(blocks)) != E*per {
		return nil, fmt.Errorf("%s: %d bytes for %d experts of %d×%d", l.T, len(blocks), E, l.N, l.K)
	}
	out := make([]float32, 0, E*l.Size)
	for e := range E {
		v, err := KQValues(l, blocks[e*per:(e+1)*per])
		if err != nil {
			return nil, err
		}
		out = append(out, v...)
	}
	return out, nil
}
