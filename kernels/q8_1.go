package kernels

import (
	"github.com/irtool/irtool/gguf"
)

// q8_1 activations (the vec_dot_type of Q4_1 and Q5_1): ggml's AVX2
// quantize_row_q8_1 quantises each block of 32 exactly as quantize_row_q8_0
// (quantizeQ8_0: d = amax/127 stored as F16, q = round(x·127/amax)) and
// also stores s = F16(d·Σq) with the unrounded d; the dot products use
// the block's F16 d and s.

// q8_1Sums fills s (one per block of 32) for activations x quantised by
// quantizeQ8_0 into qs: F16(float32(amax/127) · float32(Σ qs)), as F32.
func q8_1Sums(x []float32, qs []int8, s []float32) {
	tab := f16tab()
	for b := range s {
		blk := x[b*32 : b*32+32 : b*32+32]
		var m [8]float32
		for e := range m {
			m[e] = maxps(maxps(maxps(abs32(blk[e]), abs32(blk[8+e])), abs32(blk[16+e])), abs32(blk[24+e]))
		}
		amax := maxps(maxps(maxps(m[4], m[0]), maxps(m[6], m[2])), maxps(maxps(m[5], m[1]), maxps(m[7], m[3])))
		var sum int32
		for _, v := range qs[b*32 : b*32+32 : b*32+32] {
			sum += int32(v)
		}
		s[b] = tab[gguf.F32ToF16(amax/127*float32(sum))]
	}
}

// dotQ4_1Raw is ggml_vec_dot_q4_1_q8_1 as the AVX2 build computes it, on a
// Q4_1 row read from its blocks (20 bytes: f16 d, f16 m, 16 bytes of
// nibbles, low nibbles values 0..15): per block the unsigned nibbles meet
// the activations in eight int32 lanes (values 4k..4k+3),
// acc[k] = fma(d_x·d_y, lane[k], acc[k]); the offsets go to a scalar,
// summs = fma(m_x, s_y, summs) (gcc contracts summs += m·s); the result is
// the 256-bit horizontal sum of acc plus summs.
func dotQ4_1Raw(src []byte, c q8Row) float32 {
	return dotQx1Raw(src, c, 20, false)
}

// dotQ5_1Raw is ggml_vec_dot_q5_1_q8_1 (AVX2) on a Q5_1 row (24-byte
// blocks: f16 d, f16 m, 32 high bits, 16 bytes of nibbles): dotQ4_1Raw's
// arithmetic with values nibble | high bit << 4, and the scale product
// taken as d_x·d_y all the same (acc = fma(lane, d_x·d_y, acc)).
func dotQ5_1Raw(src []byte, c q8Row) float32 {
	return dotQx1Raw(src, c, 24, true)
}

func dotQx1Raw(src []byte, c q8Row, bs int, five bool) float32 {
	tab := f16tab()
	var acc [8]float32
	var summs float32
	for blk, dy := range c.d {
		b := src[blk*bs : blk*bs+bs : blk*bs+bs]
		dx := tab[uint16(b[0])|uint16(b[1])<<8]
		mx := tab[uint16(b[2])|uint16(b[3])<<8]
		summs = fma32(mx, c.s[blk], summs)
		var qh uint32
		qs := b[4:20]
		if five {
			qh = uint32(b[4]) | uint32(b[5])<<8 | uint32(b[6])<<16 | uint32(b[7])<<24
			qs = b[8:24]
		}
		y := c.qs[blk*32 : blk*32+32 : blk*32+32]
		d := float64(dx * dy) // fma with the conversions hoisted (exact products)
		for k := range acc {
			var l int32
			for i := 4 * k; i < 4*k+4; i++ {
				var v int32
				if i < 16 {
					v = int32(qs[i] & 0x0f)
				} else {
					v = int32(qs[i-16] >> 4)
				}
				if five {
					v |= int32(qh>>uint(i)&1) << 4
				}
				l += v * int32(y[i])
			}
			acc[k] = fmaQ(d*float64(l), float64(acc[k]))
		}
	}
	return hsum8(&acc) + summs
}
