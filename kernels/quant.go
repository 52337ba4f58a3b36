package kernels

import (
	"encoding/binary"
	"math"

	"github.com/irtool/irtool/gguf"
)

// q8Row is a row quantised to 8-bit integers in blocks, as an activation
// operand of ggml's integer dot products: qs holds the int8 values, d one
// float32 scale per block (for Q8_0 the scale is the F16 value ggml stores,
// widened), for Q8_K bsums the sums of each group of 16 values, and for
// Q8_0 sum the sum of each block of 32 values. neg is set when a value is
// -128 (only NaN, infinite or overflowing inputs produce it), where ggml's
// AVX2 sign trick differs from the exact product (see mulQuirk).
type q8Row struct {
	qs    []int8
	d     []float32
	bsums []int32
	sum   []int32
	s     []float32 // Q8_1 only: per block F16(d·Σq) (q8_1Sums)
	// Q8_K only, for the K-quant kernels (kquant.go): bsums as int16, and
	// the sums of each 32 values (q8KExtra).
	bs16, b32 []int16
	neg       bool
}

// quantizeQ8_0 quantises x (a multiple of 32 values) into qs/d as ggml's
// AVX2 quantize_row_q8_0 does, which is what llama.cpp's x86 CPU backend
// runs on activations, and reports whether a value came out as -128. It
// runs the assembly kernel where there is one (simd_amd64.s), else
// quantizeQ8_0Go; both give the same bits.
func quantizeQ8_0(x []float32, qs []int8, d []float32) bool {
	nb := len(x) / 32
	if nb == 0 {
		return false
	}
	if useAVX2 {
		_, _ = qs[nb*32-1], d[nb-1]
		return quantizeQ8_0AVX2(&x[0], &qs[0], &d[0], nb)
	}
	return quantizeQ8_0Go(x, qs, d)
}

// quantizeQ8_0Go is ggml's AVX2 quantize_row_q8_0 emulated lane by lane:
// amax is reduced with maxps semantics (maxps(a, b) = a > b ? a : b, so a
// NaN in the first operand is dropped) in the order of the AVX code (four
// 8-lane vectors, then the 128-bit halves, then pairs); d = amax/127 is
// stored as F16; id = 127/amax (0 when amax is 0); q = cvtps_epi32(
// round_half_even(x·id)) saturated to int8 by the two packs (NaN and values
// beyond int32, including x·Inf, become INT32_MIN and so -128). That is not
// x·(1/d) rounded away from zero, as the reference quantize_row_q8_0_ref
// does.
func quantizeQ8_0Go(x []float32, qs []int8, d []float32) bool {
	tab := f16tab()
	neg := false
	for b := range len(x) / 32 {
		blk := x[b*32 : b*32+32 : b*32+32]
		var m [8]float32
		for e := range m {
			m[e] = maxps(maxps(maxps(abs32(blk[e]), abs32(blk[8+e])), abs32(blk[16+e])), abs32(blk[24+e]))
		}
		amax := maxps(maxps(maxps(m[4], m[0]), maxps(m[6], m[2])), maxps(maxps(m[5], m[1]), maxps(m[7], m[3])))
		d[b] = tab[gguf.F32ToF16(amax/127)]
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		q := qs[b*32 : b*32+32 : b*32+32]
		for j, v := range blk {
			q[j] = cvtI8(v * id)
			if q[j] == -128 {
				neg = true
			}
		}
	}
	return neg
}

// maxps is x86's maxps on one lane: the second operand unless the first
// is greater (so a NaN in either operand yields the second).
func maxps(a, b float32) float32 {
	if a > b {
		return a
	}
	return b
}

// cvtI8 is round_ps(nearest), cvtps_epi32 and the saturating packs to int8:
// NaN and values outside int32 become INT32_MIN, hence -128.
func cvtI8(v float32) int8 {
	r := math.RoundToEven(float64(v))
	switch {
	case !(r >= -2147483648 && r < 2147483648):
		return -128
	case r > 127:
		return 127
	case r < -128:
		return -128
	}
	return int8(r)
}

// blockSums32 sets sum[b] to the sum of the 32 values of block b of qs.
func blockSums32(qs []int8, sum []int32) {
	for b := range sum {
		var s int32
		for _, v := range qs[b*32 : b*32+32 : b*32+32] {
			s += int32(v)
		}
		sum[b] = s
	}
}

// mulQuirk is one product of ggml's AVX2 int8 dot products, which multiply
// |x| (unsigned) by sign(y, x) (_mm256_sign_epi8): sign(-128, x<0) wraps to
// -128, so for x < 0 and y = -128 the product comes out negated. x is the
// weight, y the activation.
func mulQuirk(x, y int32) int32 {
	if x < 0 && y == -128 {
		return -x * y
	}
	return x * y
}

// quantizeRowQ8_0Bytes writes x as Q8_0 blocks (34 bytes each) with the same
// arithmetic as quantizeQ8_0.
func quantizeRowQ8_0Bytes(x []float32, out []byte) {
	var qs [32]int8
	var d [1]float32
	for b := range len(x) / 32 {
		quantizeQ8_0(x[b*32:b*32+32], qs[:], d[:])
		o := out[b*34 : b*34+34]
		binary.LittleEndian.PutUint16(o, gguf.F32ToF16(d[0]))
		for j, v := range qs {
			o[2+j] = byte(v)
		}
	}
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// nearestInt is ggml's nearest_int: round to nearest even through the
// 1.5·2^23 trick (valid for |v| < 2^22).
func nearestInt(v float32) int32 {
	f := v + 12582912
	return int32(math.Float32bits(f)&0x007fffff) - 0x00400000
}

// quantizeQ8_K quantises x (a multiple of 256 values) as ggml's
// quantize_row_q8_K_ref (the one llama.cpp's x86 CPU backend uses at
// c392e50): per block of 256, iscale = -127/max where max is the value of
// largest magnitude, q = min(127, nearest_int(iscale*x)), d = 1/iscale,
// plus the sums of each 16 values.
func quantizeQ8_K(x []float32, qs []int8, d []float32, bsums []int32) {
	for b := range len(x) / 256 {
		blk := x[b*256 : b*256+256]
		q := qs[b*256 : b*256+256]
		var mx, amax float32
		for _, v := range blk {
			if a := abs32(v); a > amax {
				amax, mx = a, v
			}
		}
		bs := bsums[b*16 : b*16+16]
		if amax == 0 {
			d[b] = 0
			clear(q)
			clear(bs)
			continue
		}
		iscale := -127 / mx
		for j, v := range blk {
			q[j] = int8(min(127, nearestInt(iscale*v)))
		}
		for j := range 16 {
			var s int32
			for _, v := range q[j*16 : j*16+16] {
				s += int32(v)
			}
			bs[j] = s
		}
		d[b] = 1 / iscale
	}
}

// dotQ8_0 is ggml_vec_dot_q8_0_q8_0 (and q5_0_q8_0 once the weights are
// unpacked to int8) as the AVX2 build computes it, and llamafile's
// tinyBLAS_Q0_AVX too: per block of 32 the products go to eight int32
// lanes (lane k: values 4k..4k+3), each converted to float and accumulated
// as acc[k] = fma(d_a·d_b, lane, acc[k]); the result is the 256-bit
// horizontal sum ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)). neg selects the
// emulation of the sign trick for activations holding -128 (mulQuirk).
func dotQ8_0(aq []int8, ad []float32, bq []int8, bd []float32, neg bool) float32 {
	var acc [8]float32
	bd = bd[:len(ad)]
	for blk, da := range ad {
		x := aq[blk*32 : blk*32+32 : blk*32+32]
		y := bq[blk*32 : blk*32+32 : blk*32+32]
		d := float64(da * bd[blk]) // fma with the conversions hoisted (exact products)
		for k := range acc {
			x4, y4 := x[4*k:4*k+4:4*k+4], y[4*k:4*k+4:4*k+4]
			var l int32
			if neg {
				l = mulQuirk(int32(x4[0]), int32(y4[0])) + mulQuirk(int32(x4[1]), int32(y4[1])) +
					mulQuirk(int32(x4[2]), int32(y4[2])) + mulQuirk(int32(x4[3]), int32(y4[3]))
			} else {
				l = int32(x4[0])*int32(y4[0]) + int32(x4[1])*int32(y4[1]) +
					int32(x4[2])*int32(y4[2]) + int32(x4[3])*int32(y4[3])
			}
			acc[k] = fmaQ(d*float64(l), float64(acc[k]))
		}
	}
	return hsum8(&acc)
}

// hsum8 is the AVX horizontal sum of eight lanes (hsum_float_8).
func hsum8(a *[8]float32) float32 {
	t0, t1, t2, t3 := a[0]+a[4], a[1]+a[5], a[2]+a[6], a[3]+a[7]
	return (t0 + t2) + (t1 + t3)
}

// unpackQ8_0 reads a Q8_0 row (34-byte blocks) into int8 values and scales.
func unpackQ8_0(src []byte, qs []int8, d []float32) {
	tab := f16tab()
	for b := range d {
		blk := src[b*34 : b*34+34]
		d[b] = tab[binary.LittleEndian.Uint16(blk)]
		q := qs[b*32 : b*32+32]
		for j := range q {
			q[j] = int8(blk[2+j])
		}
	}
}

// unpackQ4_0 reads a Q4_0 row (18-byte blocks: f16 scale, 16 bytes of
// nibbles, low nibbles first) into int8 values nibble-8 and scales.
func unpackQ4_0(src []byte, qs []int8, d []float32) {
	tab := f16tab()
	for b := range d {
		blk := src[b*18 : b*18+18]
		d[b] = tab[binary.LittleEndian.Uint16(blk)]
		q := qs[b*32 : b*32+32]
		for j := range 16 {
			v := blk[2+j]
			q[j] = int8(v&0x0f) - 8
			q[j+16] = int8(v>>4) - 8
		}
	}
}

// dotQ8_0RawGo is dotQ8_0 reading the weight row straight from its Q8_0
// blocks (34 bytes: f16 d, 32 int8), bit for bit the same result; the
// pure-Go twin of dotQ8_0RawAVX2.
func dotQ8_0RawGo(src []byte, bq []int8, bd []float32, neg bool) float32 {
	tab := f16tab()
	var acc [8]float32
	for blk, db := range bd {
		b := src[blk*34 : blk*34+34 : blk*34+34]
		da := tab[uint16(b[0])|uint16(b[1])<<8]
		x := b[2:34:34]
		y := bq[blk*32 : blk*32+32 : blk*32+32]
		// fma(d, l, acc) with the conversions hoisted: the product of a
		// float32 and an int below 2^17 is exact in float64.
		d := float64(da * db)
		for k := range acc {
			w := binary.LittleEndian.Uint32(x[4*k:])
			y4 := y[4*k : 4*k+4 : 4*k+4]
			var l int32
			if neg {
				l = mulQuirk(int32(int8(w)), int32(y4[0])) + mulQuirk(int32(int8(w>>8)), int32(y4[1])) +
					mulQuirk(int32(int8(w>>16)), int32(y4[2])) + mulQuirk(int32(int8(w>>24)), int32(y4[3]))
			} else {
				l = int32(int8(w))*int32(y4[0]) + int32(int8(w>>8))*int32(y4[1]) +
					int32(int8(w>>16))*int32(y4[2]) + int32(int8(w>>24))*int32(y4[3])
			}
			acc[k] = fmaQ(d*float64(l), float64(acc[k]))
		}
	}
	return hsum8(&acc)
}

// q4val returns value i (0..31) of a Q4_0 block's 16 nibble bytes, nibble-8.
func q4val(x []byte, i int) int32 {
	if i < 16 {
		return int32(x[i]&0x0f) - 8
	}
	return int32(x[i-16]>>4) - 8
}

// dotQ4_0RawGo is dotQ8_0 for a Q4_0 weight row read straight from its
// blocks (18 bytes: f16 d, 16 bytes of nibbles, value = nibble - 8; low
// nibbles are values 0..15, high nibbles 16..31), bit for bit the same as
// unpacking first: ggml_vec_dot_q4_0_q8_0's AVX2 order. The pure-Go twin
// of dotQ4_0RawAVX2.
func dotQ4_0RawGo(src []byte, bq []int8, bd []float32, neg bool) float32 {
	tab := f16tab()
	var acc [8]float32
	for blk, db := range bd {
		b := src[blk*18 : blk*18+18 : blk*18+18]
		da := tab[uint16(b[0])|uint16(b[1])<<8]
		x := b[2:18:18]
		y := bq[blk*32 : blk*32+32 : blk*32+32]
		d := float64(da * db) // fma with the conversions hoisted (exact products)
		for k := range 4 {
			var lo, hi int32
			if neg {
				for i := 4 * k; i < 4*k+4; i++ {
					lo += mulQuirk(q4val(x, i), int32(y[i]))
					hi += mulQuirk(q4val(x, 16+i), int32(y[16+i]))
				}
			} else {
				w := binary.LittleEndian.Uint32(x[4*k:])
				ylo, yhi := y[4*k:4*k+4:4*k+4], y[16+4*k:16+4*k+4:16+4*k+4]
				lo = (int32(w&0x0f)-8)*int32(ylo[0]) + (int32(w>>8&0x0f)-8)*int32(ylo[1]) +
					(int32(w>>16&0x0f)-8)*int32(ylo[2]) + (int32(w>>24&0x0f)-8)*int32(ylo[3])
				hi = (int32(w>>4&0x0f)-8)*int32(yhi[0]) + (int32(w>>12&0x0f)-8)*int32(yhi[1]) +
					(int32(w>>20&0x0f)-8)*int32(yhi[2]) + (int32(w>>28)-8)*int32(yhi[3])
			}
			acc[k] = fmaQ(d*float64(lo), float64(acc[k]))
			acc[k+4] = fmaQ(d*float64(hi), float64(acc[k+4]))
		}
	}
	return hsum8(&acc)
}

// dotQ4_0x8Go computes the dot products of the eight Q4_0 rows starting at
// src[0], src[stride], …, src[7·stride] with one Q8_0 activation row, in
// the order of llama.cpp's repacked q4_0_8x8 kernels on AVX2
// (ggml_gemv_q4_0_8x8_q8_0 and ggml_gemm_q4_0_8x8_q8_0 in
// ggml-cpu/arch/x86/repack.cpp), which llama.cpp uses for every Q4_0
// matrix with a multiple of 8 rows: per block the 32 products are summed
// exactly as integers, and each row keeps one float accumulator,
// acc = fma(float(sum), d_w·d_a, acc). It is the pure-Go twin of
// dotQ4_0x8AVX2.
func dotQ4_0x8Go(src []byte, stride int, bq []int8, bd []float32, neg bool, out *[8]float32) {
	tab := f16tab()
	for j := range out {
		row := src[j*stride:]
		var acc float32
		for blk, db := range bd {
			b := row[blk*18 : blk*18+18 : blk*18+18]
			dw := tab[uint16(b[0])|uint16(b[1])<<8]
			x := b[2:18:18]
			y := bq[blk*32 : blk*32+32 : blk*32+32]
			var s int32
			if neg {
				for i := range 32 {
					s += mulQuirk(q4val(x, i), int32(y[i]))
				}
			} else {
				for i, v := range x {
					s += (int32(v&0x0f)-8)*int32(y[i]) + (int32(v>>4)-8)*int32(y[16+i])
				}
			}
			acc = fmaQ(float64(dw*db)*float64(s), float64(acc))
		}
		out[j] = acc
	}
}
