package wqconv

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/irtool/irtool/gguf"
)

// A converter turns one ggml block into its values (vals, one per element
// in ggml's element order) and the scales (and offsets, when off is not
// nil) of its groups of Span elements. Block layouts and value formulas are
// ggml-common.h's block_* structs and ggml-quants.c's dequantize_row_*.
type converter func(blk []byte, vals []int8, scale, off []uint16) error

var converters = map[gguf.GGMLType]converter{
	gguf.TypeQ8_0: convQ8_0,
	gguf.TypeQ4_0: convQ4_0,
	gguf.TypeQ5_0: convQ5_0,
	gguf.TypeQ4_1: convQ4_1,
	gguf.TypeQ5_1: convQ5_1,
	gguf.TypeQ3_K: convQ3K,
	gguf.TypeQ4_K: convQ4K,
	gguf.TypeQ5_K: convQ5K,
	gguf.TypeQ6_K: convQ6K,
	gguf.TypeQ2_K: convQ2K,
}

func le16(b []byte) uint16 { return binary.LittleEndian.Uint16(b) }

// maxHighScale is the largest |d| whose 16·d an f16 holds (65504/16).
const maxHighScale = 65504.0 / 16

// q8_0 (34 bytes: d, qs[32] int8; y = d·q): the quants as they are, d as
// the scale. Exact.
func convQ8_0(b []byte, v []int8, s, _ []uint16) error {
	s[0] = le16(b)
	for j := range 32 {
		v[j] = int8(b[2+j])
	}
	return nil
}

// q4_0 (18 bytes: d, qs[16]; element j in the low nibble of qs[j], j+16 in
// the high one; y = d·(u − 8)): int4 u − 8, d as the scale. Exact.
func convQ4_0(b []byte, v []int8, s, _ []uint16) error {
	s[0] = le16(b)
	for j := range 16 {
		v[j] = int8(b[2+j]&0x0f) - 8
		v[j+16] = int8(b[2+j]>>4) - 8
	}
	return nil
}

// q5u unpacks the 32 five-bit quants u ∈ [0, 31] of a q5_0/q5_1 block: the
// nibbles as q4_0's, the fifth bit of element j in bit j of qh.
func q5u(qh uint32, qs []byte, u *[32]int) {
	for j := range 16 {
		u[j] = int(qs[j]&0x0f) | int(qh>>j&1)<<4
		u[j+16] = int(qs[j]>>4) | int(qh>>(j+16)&1)<<4
	}
}

// q5_0 (22 bytes: d, qh u32, qs[16]; y = d·(u − 16)): u − 16, d as the
// scale (the HighBits layout splits it into the low nibble minus 8 and the
// fifth bit: convertBlocks). The second matmul's scale is 16·d in f16, so
// a block whose |d| exceeds 65504/16 (or is not finite) is refused. Exact.
func convQ5_0(b []byte, v []int8, s, _ []uint16) error {
	s[0] = le16(b)
	if d := gguf.F16ToF32(s[0]); !(math.Abs(float64(d)) <= maxHighScale) {
		return fmt.Errorf("scale d = %g: 16·d is beyond f16 (the layout's high-bit matmul scales by 16·d)", d)
	}
	var u [32]int
	q5u(binary.LittleEndian.Uint32(b[2:]), b[6:22], &u)
	for j, x := range u {
		v[j] = int8(x - 16)
	}
	return nil
}

// q4_1 (20 bytes: d, m, qs[16]; y = d·u + m): int4 u − c with scale d and
// offset c + m/d (rounded to f16: the only loss), c centring the group.
func convQ4_1(b []byte, v []int8, s, o []uint16) error {
	d, m := gguf.F16ToF32(le16(b)), gguf.F16ToF32(le16(b[2:]))
	var u [32]int
	for j := range 16 {
		u[j], u[j+16] = int(b[4+j]&0x0f), int(b[4+j]>>4)
	}
	return affine(u[:], 7, float64(d), -float64(m), le16(b[2:]), 0x3c00, v, &s[0], &o[0])
}

// q5_1 (24 bytes: d, m, qh u32, qs[16]; y = d·u + m): int8 u − c with
// scale d and offset c + m/d (rounded to f16), c centring the group.
func convQ5_1(b []byte, v []int8, s, o []uint16) error {
	d, m := gguf.F16ToF32(le16(b)), gguf.F16ToF32(le16(b[2:]))
	var u [32]int
	q5u(binary.LittleEndian.Uint32(b[4:]), b[8:24], &u)
	return affine(u[:], 127, float64(d), -float64(m), le16(b[2:]), 0x3c00, v, &s[0], &o[0])
}

// q3K unpacks the sixteen 6-bit scales of a q3_K block (scales[12]: low
// nibbles in bytes 0..7, high 2-bit pairs in bytes 8..11).
func q3KScales(sb []byte) [16]int {
	var sc [16]int
	for i := range 16 {
		var lo int
		if i < 8 {
			lo = int(sb[i] & 0x0f)
		} else {
			lo = int(sb[i-8] >> 4)
		}
		hi := int(sb[8+i%4]>>(2*(i/4))) & 3
		sc[i] = lo | hi<<4
	}
	return sc
}

// q3_K (110 bytes: hmask[32], qs[64], scales[12], d; y = d·(sc − 32)·q with
// q = u2 − 4·(hmask bit clear) ∈ [−4, 3] per sub-block of 16): one group of
// 256 with scale −d and int8 −(sc − 32)·q ∈ [−128, 124] (the product
// (sc − 32)·q lies in [−124, 128]; negating it fits int8). d·(sc−32)·q is
// exact in float32 both ways. Exact.
func convQ3K(b []byte, v []int8, s, _ []uint16) error {
	hm, qs := b[0:32], b[32:96]
	sc := q3KScales(b[96:108])
	s[0] = le16(b[108:]) ^ 0x8000
	for half := range 2 {
		for j := range 4 {
			for l := range 32 {
				e := 128*half + 32*j + l
				q := int(qs[32*half+l]>>(2*j)) & 3
				if hm[l]>>(4*half+j)&1 == 0 {
					q -= 4
				}
				v[e] = int8(-(sc[e/16] - 32) * q)
			}
		}
	}
	return nil
}

// scaleMinK4 is ggml's get_scale_min_k4: the j-th 6-bit scale and min of a
// q4_K/q5_K block's scales[12].
func scaleMinK4(j int, q []byte) (sc, m int) {
	if j < 4 {
		return int(q[j] & 63), int(q[j+4] & 63)
	}
	return int(q[j+4]&0x0f | (q[j-4]>>6)<<4), int(q[j+4]>>4 | (q[j]>>6)<<4)
}

// kAffine maps the eight sub-blocks of 32 of a q4_K/q5_K block (y =
// d·sc·u − dmin·m) to values u − c (c centring the sub-block's quants in
// [−lim−1, lim]) with scale d·sc and offset c − dmin·m/(d·sc). A sub-block with d·sc = 0 holds −dmin·m only: values
// 0, scale dmin and offset −m, exactly.
func kAffine(b []byte, u *[256]int, lim int, v []int8, s, o []uint16) error {
	d, dmin := gguf.F16ToF32(le16(b)), gguf.F16ToF32(le16(b[2:]))
	for g := range 8 {
		sc, m := scaleMinK4(g, b[4:16])
		D := float32(d * float32(sc)) // exact: an 11-bit by a 6-bit significand
		M := float32(dmin * float32(m))
		if err := affine(u[32*g:32*g+32], lim, float64(D), float64(M), le16(b[2:]), gguf.F32ToF16(-float32(m)), v[32*g:32*g+32], &s[g], &o[g]); err != nil {
			return fmt.Errorf("sub-block %d: %w", g, err)
		}
	}
	return nil
}

// q4_K (144 bytes: d, dmin, scales[12], qs[128]; 64-element chunk c holds
// sub-block 2c in the low nibbles of qs[32c..32c+31] and 2c+1 in the high
// ones): int4 u − c, per 32 scale d·sc, offset c − dmin·m/(d·sc).
func convQ4K(b []byte, v []int8, s, o []uint16) error {
	var u [256]int
	qs := b[16:144]
	for c := range 4 {
		for l := range 32 {
			u[64*c+l] = int(qs[32*c+l] & 0x0f)
			u[64*c+32+l] = int(qs[32*c+l] >> 4)
		}
	}
	return kAffine(b, &u, 7, v, s, o)
}

// q5_K (176 bytes: d, dmin, scales[12], qh[32], qs[128]; q4_K's nibbles plus
// a fifth bit, bit 2c (low) or 2c+1 (high) of qh[l]): int8 u − c, per 32
// scale d·sc, offset c − dmin·m/(d·sc).
func convQ5K(b []byte, v []int8, s, o []uint16) error {
	var u [256]int
	qh, qs := b[16:48], b[48:176]
	for c := range 4 {
		for l := range 32 {
			u[64*c+l] = int(qs[32*c+l]&0x0f) | int(qh[l]>>(2*c)&1)<<4
			u[64*c+32+l] = int(qs[32*c+l]>>4) | int(qh[l]>>(2*c+1)&1)<<4
		}
	}
	return kAffine(b, &u, 127, v, s, o)
}

// q6_K (210 bytes: ql[128], qh[64], scales[16] int8, d; y = d·sc·q, q ∈
// [−32, 31], sc per sub-block of 16, sub-block = element/16): int8 per 32,
// symmetric. The candidate scale d·sc/4 of the sub-block with the larger
// |sc| keeps that half as 4·q; the other half is rounded to it. A plain
// amax/127 scale is the other candidate; the one with the smaller maximum
// error wins.
func convQ6K(b []byte, v []int8, s, _ []uint16) error {
	var y [256]float32
	if err := gguf.Dequantize(gguf.TypeQ6_K, b, y[:]); err != nil {
		return err
	}
	d := gguf.F16ToF32(le16(b[208:]))
	for g := range 8 {
		s1, s2 := int(int8(b[192+2*g])), int(int8(b[192+2*g+1]))
		big := s1
		if abs(s2) > abs(s1) {
			big = s2
		}
		cand := gguf.F32ToF16(float32(d*float32(big)) / 4)
		if err := symmetric(y[32*g:32*g+32], cand, v[32*g:32*g+32], &s[g]); err != nil {
			return fmt.Errorf("sub-blocks %d-%d: %w", 2*g, 2*g+1, err)
		}
	}
	return nil
}

// q2_K (84 bytes: scales[16] (sc low nibble, m high), qs[64], d, dmin; y =
// d·sc·u − dmin·m, u ∈ [0, 3], per sub-block of 16): int8 per 32,
// asymmetric (requant).
func convQ2K(b []byte, v []int8, s, o []uint16) error {
	var y [256]float32
	if err := gguf.Dequantize(gguf.TypeQ2_K, b, y[:]); err != nil {
		return err
	}
	for g := range 8 {
		if err := asymmetric(y[32*g:32*g+32], v[32*g:32*g+32], &s[g], &o[g]); err != nil {
			return fmt.Errorf("sub-blocks %d-%d: %w", 2*g, 2*g+1, err)
		}
	}
	return nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
