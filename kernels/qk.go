package kernels

import (
	"encoding/binary"

	"github.com/irtool/irtool/gguf"
)

// qkRow is a K-quant weight row (Q2_K … Q6_K) unpacked for integer dot
// products with a Q8_K activation row. Each super-block of 256 values is
// described by groups of 16: value j of group g is
// d*sc[g]*q[j] - dmin*m[g], with q, sc and m integers. Types with 32-value
// sub-blocks (Q4_K, Q5_K) repeat the sub-block's scale and min in both of
// its groups, which leaves the integer sums unchanged.
type qkRow struct {
	t     gguf.GGMLType // set by unpackQK; selects dotQK's float combination
	q     []int8
	sc, m []int32
	d     []float32 // per super-block: the f16 super-scale
	dmin  []float32 // per super-block: the f16 super-min (0 for Q3_K, Q6_K)
}

func newQKRow(k int) *qkRow {
	nsb := k / 256
	return &qkRow{q: make([]int8, k), sc: make([]int32, nsb*16), m: make([]int32, nsb*16),
		d: make([]float32, nsb), dmin: make([]float32, nsb)}
}

// qkSupported reports whether unpackQK handles t.
func qkSupported(t gguf.GGMLType) bool {
	switch t {
	case gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K:
		return true
	}
	return false
}

// unpackQK unpacks one row of type t (len(r.d) super-blocks) from src.
func unpackQK(t gguf.GGMLType, src []byte, r *qkRow) {
	ts := t.TypeSize()
	r.t = t
	for s := range r.d {
		b := src[s*ts : (s+1)*ts]
		q := r.q[s*256 : s*256+256]
		sc := r.sc[s*16 : s*16+16]
		m := r.m[s*16 : s*16+16]
		switch t {
		case gguf.TypeQ2_K:
			r.d[s], r.dmin[s] = unpackQ2KBlock(b, q, sc, m)
		case gguf.TypeQ3_K:
			r.d[s], r.dmin[s] = unpackQ3KBlock(b, q, sc, m)
		case gguf.TypeQ4_K, gguf.TypeQ5_K:
			r.d[s], r.dmin[s] = unpackQ45KBlock(t, b, q, sc, m)
		case gguf.TypeQ6_K:
			r.d[s], r.dmin[s] = unpackQ6KBlock(b, q, sc, m)
		}
	}
}

// f16At is the F16 value stored little-endian at b.
func f16At(b []byte) float32 { return f16tab()[binary.LittleEndian.Uint16(b)] }

// unpackQ2KBlock unpacks one Q2_K super-block b (scales[16]: low nibble
// scale, high nibble min; qs[64]; d; dmin) into q, sc, m and returns d and
// dmin.
func unpackQ2KBlock(b []byte, q []int8, sc, m []int32) (d, dmin float32) {
	scales, qs := b[0:16], b[16:80]
	for g := range 16 {
		sc[g] = int32(scales[g] & 0x0f)
		m[g] = int32(scales[g] >> 4)
	}
	k := 0
	for n := 0; n < 2; n++ {
		qq := qs[n*32 : n*32+32]
		for shift := uint(0); shift < 8; shift += 2 {
			for l := range 32 {
				q[k+l] = int8((qq[l] >> shift) & 3)
			}
			k += 32
		}
	}
	return f16At(b[80:]), f16At(b[82:])
}

// unpackQ3KBlock unpacks one Q3_K super-block b (hmask[32], qs[64],
// scales[12]: sixteen 6-bit scales biased by 32; d) into q, sc, m (zero)
// and returns d and a zero dmin.
func unpackQ3KBlock(b []byte, q []int8, sc, m []int32) (d, dmin float32) {
	hm, qs, sb := b[0:32], b[32:96], b[96:108]
	const kmask1, kmask2 = 0x03030303, 0x0f0f0f0f
	a0 := binary.LittleEndian.Uint32(sb[0:])
	a1 := binary.LittleEndian.Uint32(sb[4:])
	tmp := binary.LittleEndian.Uint32(sb[8:])
	aux := [4]uint32{
		(a0 & kmask2) | (((tmp >> 0) & kmask1) << 4),
		(a1 & kmask2) | (((tmp >> 2) & kmask1) << 4),
		((a0 >> 4) & kmask2) | (((tmp >> 4) & kmask1) << 4),
		((a1 >> 4) & kmask2) | (((tmp >> 6) & kmask1) << 4),
	}
	for g := range 16 {
		sc[g] = int32(int8(aux[g/4]>>(8*(g%4)))) - 32
		m[g] = 0
	}
	k := 0
	mask := uint8(1)
	for n := 0; n < 2; n++ {
		qq := qs[n*32 : n*32+32]
		for shift := uint(0); shift < 8; shift += 2 {
			for l := range 32 {
				v := int8((qq[l] >> shift) & 3)
				if hm[l]&mask == 0 {
					v -= 4
				}
				q[k+l] = v
			}
			k += 32
			mask <<= 1
		}
	}
	return f16At(b[108:]), 0
}

// unpackQ45KBlock unpacks one Q4_K or Q5_K super-block b (d, dmin,
// scales[12]: eight 6-bit scales and mins; Q5_K's qh[32]; qs[128]) into q,
// sc, m (each sub-block's scale and min in both of its groups of 16) and
// returns d and dmin.
func unpackQ45KBlock(t gguf.GGMLType, b []byte, q []int8, sc, m []int32) (d, dmin float32) {
	scales := b[4:16]
	var qh, ql []byte
	if t == gguf.TypeQ4_K {
		ql = b[16:144]
	} else {
		qh, ql = b[16:48], b[48:176]
	}
	for sub := range 8 {
		c, mn := scaleMinK4(sub, scales)
		sc[2*sub], sc[2*sub+1] = int32(c), int32(c)
		m[2*sub], m[2*sub+1] = int32(mn), int32(mn)
	}
	u1, u2 := uint8(1), uint8(2)
	for j := range 4 {
		qq := ql[j*32 : j*32+32]
		for l := range 32 {
			lo, hi := int8(qq[l]&0x0f), int8(qq[l]>>4)
			if qh != nil {
				if qh[l]&u1 != 0 {
					lo += 16
				}
				if qh[l]&u2 != 0 {
					hi += 16
				}
			}
			q[j*64+l] = lo
			q[j*64+32+l] = hi
		}
		u1 <<= 2
		u2 <<= 2
	}
	return f16At(b), f16At(b[2:])
}

// unpackQ6KBlock unpacks one Q6_K super-block b (ql[128], qh[64],
// scales[16] int8, d) into q (values − 32), sc, m (zero) and returns d and
// a zero dmin.
func unpackQ6KBlock(b []byte, q []int8, sc, m []int32) (d, dmin float32) {
	ql, qh, scs := b[0:128], b[128:192], b[192:208]
	for g := range 16 {
		sc[g] = int32(int8(scs[g]))
		m[g] = 0
	}
	for n := 0; n < 2; n++ {
		l4, h2 := ql[n*64:n*64+64], qh[n*32:n*32+32]
		y := q[n*128 : n*128+128]
		for l := range 32 {
			y[l] = int8((l4[l]&0x0f)|((h2[l]>>0)&3)<<4) - 32
			y[l+32] = int8((l4[l+32]&0x0f)|((h2[l]>>2)&3)<<4) - 32
			y[l+64] = int8((l4[l]>>4)|((h2[l]>>4)&3)<<4) - 32
			y[l+96] = int8((l4[l+32]>>4)|((h2[l]>>6)&3)<<4) - 32
		}
	}
	return f16At(b[208:]), 0
}

// scaleMinK4 is get_scale_min_k4: the j-th 6-bit scale and min of a
// Q4_K/Q5_K block.
func scaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return (q[j+4] & 0x0f) | ((q[j-4] >> 6) << 4), (q[j+4] >> 4) | ((q[j] >> 6) << 4)
}

// dotQK is ggml_vec_dot_q{2..6}_K_q8_K as llama.cpp's x86 AVX2 build
// computes it, bit for bit. The integer work is exact in any order; what
// matters is how it is split before it meets floats. Every AVX2 kernel
// multiplies 32 consecutive values per 256-bit register, so int32 lane k
// (0..7) of its accumulator collects the products of values 4k..4k+3 of
// every 32-value group, each times its 16-value scale. Per super-block the
// eight lane sums are converted to float and accumulated with an FMA,
// acc[k] = fma(d, lane[k], acc[k]) with d = d_y·d_x, and the result is
// the 256-bit horizontal sum of acc. The mins (Q2_K, Q4_K, Q5_K) go their
// own ways: Q2_K folds d_min·(m[2k]·bsum[2k] + m[2k+1]·bsum[2k+1]) into
// acc[k] first; Q4_K keeps four lanes (one per pair of 32-value sub-blocks)
// in a 128-bit accumulator reduced as (m0+m2)+(m1+m3) and added last; Q5_K
// adds d_min times the whole integer mins sum to a scalar (contracted to an
// FMA by gcc) added last. d_min enters negated (-d_y·d_min).
func dotQK(a *qkRow, b q8Row) float32 {
	var acc [8]float32
	var accM [4]float32
	var summs float32
	var lanesBuf [8 * 64]int32
	var lanes []int32
	if nsb := len(a.d); useAVX2 && nsb > 0 && nsb <= 64 {
		// The integer lanes of every super-block in assembly.
		_, _, _ = a.q[nsb*256-1], b.qs[nsb*256-1], a.sc[nsb*16-1]
		lanes = lanesBuf[:8*nsb]
		qkLanesAVX2(&a.q[0], &b.qs[0], &a.sc[0], nsb, a.t == gguf.TypeQ3_K || a.t == gguf.TypeQ6_K, &lanes[0])
	}
	for s, da := range a.d {
		var lane [8]int32
		if lanes != nil {
			copy(lane[:], lanes[8*s:8*s+8])
		} else {
			lane = qkLanesGo(a, b, s)
		}
		yd := b.d[s]
		d := yd * da
		dmin := -yd * a.dmin[s]
		m := a.m[s*16 : s*16+16]
		bs := b.bsums[s*16 : s*16+16]
		switch a.t {
		case gguf.TypeQ2_K:
			for k := range 8 {
				acc[k] = fma32(dmin, float32(m[2*k]*bs[2*k]+m[2*k+1]*bs[2*k+1]), acc[k])
			}
		case gguf.TypeQ4_K:
			for l := range 4 {
				p := m[4*l]*bs[4*l] + m[4*l+1]*bs[4*l+1] + m[4*l+2]*bs[4*l+2] + m[4*l+3]*bs[4*l+3]
				accM[l] = fma32(dmin, float32(p), accM[l])
			}
		case gguf.TypeQ5_K:
			var p int32
			for g := range 16 {
				p += m[g] * bs[g]
			}
			summs = fma32(dmin, float32(p), summs)
		}
		for k := range 8 {
			acc[k] = fma32(d, float32(lane[k]), acc[k])
		}
	}
	sum := hsum8(&acc)
	switch a.t {
	case gguf.TypeQ4_K:
		sum += (accM[0] + accM[2]) + (accM[1] + accM[3])
	case gguf.TypeQ5_K:
		sum += summs
	}
	return sum
}

// qkLanesGo returns dotQK's eight integer lanes of super-block s: the
// pure-Go twin of qkLanesAVX2.
func qkLanesGo(a *qkRow, b q8Row, s int) (lane [8]int32) {
	for g := range 16 {
		o := s*256 + g*16
		x := a.q[o : o+16 : o+16]
		y := b.qs[o : o+16 : o+16]
		sc := a.sc[s*16+g]
		// Values 16(g%2)..16(g%2)+15 of their 32-value group: lanes
		// 4(g%2)..4(g%2)+3.
		l0 := 4 * (g % 2)
		for k := range 4 {
			p := int32(x[4*k])*int32(y[4*k]) + int32(x[4*k+1])*int32(y[4*k+1]) +
				int32(x[4*k+2])*int32(y[4*k+2]) + int32(x[4*k+3])*int32(y[4*k+3])
			lane[l0+k] += sc * p
		}
	}
	return lane
}
