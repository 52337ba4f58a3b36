package kernels

import (
	"encoding/binary"
	"math"

	"github.com/irtool/irtool/gguf"
)

// q8Row is a row quantised to 8-bit integers in blocks, as an activation
// operand of ggml's integer dot products: qs holds the int8 values, d one
// float32 scale per block (for Q8_0 the scale is the F16 value ggml stores,
// widened), and for Q8_K bsums the sums of each group of 16 values.
type q8Row struct {
	qs    []int8
	d     []float32
	bsums []int32
}

// quantizeQ8_0 quantises x (a multiple of 32 values) into qs/d as ggml's
// AVX2 quantize_row_q8_0 does, which is what llama.cpp's x86 CPU backend
// runs on activations: d = amax/127 stored as F16, q = x * (127/amax)
// rounded to nearest even (not x * (1/d) rounded away from zero as the
// reference quantize_row_q8_0_ref does), saturated to int8.
func quantizeQ8_0(x []float32, qs []int8, d []float32) {
	tab := f16tab()
	for b := range len(x) / 32 {
		blk := x[b*32 : b*32+32]
		var amax float32
		for _, v := range blk {
			amax = max(amax, abs32(v))
		}
		dd := amax / 127
		d[b] = tab[gguf.F32ToF16(dd)]
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		q := qs[b*32 : b*32+32]
		for j, v := range blk {
			q[j] = satI8(math.RoundToEven(float64(v * id)))
		}
	}
}

// quantizeRowQ8_0Bytes writes x as Q8_0 blocks (34 bytes each) with the same
// arithmetic as quantizeQ8_0.
func quantizeRowQ8_0Bytes(x []float32, out []byte) {
	for b := range len(x) / 32 {
		blk := x[b*32 : b*32+32]
		var amax float32
		for _, v := range blk {
			amax = max(amax, abs32(v))
		}
		o := out[b*34 : b*34+34]
		binary.LittleEndian.PutUint16(o, gguf.F32ToF16(amax/127))
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		for j, v := range blk {
			o[2+j] = byte(satI8(math.RoundToEven(float64(v * id))))
		}
	}
}

// satI8 converts a rounded value to int8 as cvtps_epi32 + packs do: NaN
// and out-of-range values saturate.
func satI8(v float64) int8 {
	switch {
	case v != v:
		return -128
	case v > 127:
		return 127
	case v < -128:
		return -128
	}
	return int8(v)
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

// dotQ8_0 is ggml_vec_dot_q8_0_q8_0 (and q4_0/q5_0_q8_0 once the weights
// are unpacked to int8) as the AVX2 build computes it, and llamafile's
// tinyBLAS_Q0_AVX too: per block of 32 the products go to eight int32
// lanes (lane k: values 4k..4k+3), each converted to float and accumulated
// as acc[k] = fma(d_a·d_b, lane, acc[k]); the result is the 256-bit
// horizontal sum ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
func dotQ8_0(aq []int8, ad []float32, bq []int8, bd []float32) float32 {
	var acc [8]float32
	bd = bd[:len(ad)]
	for blk, da := range ad {
		x := aq[blk*32 : blk*32+32 : blk*32+32]
		y := bq[blk*32 : blk*32+32 : blk*32+32]
		d := float64(da * bd[blk]) // fma32 with the conversions hoisted (exact products)
		for k := range acc {
			x4, y4 := x[4*k:4*k+4:4*k+4], y[4*k:4*k+4:4*k+4]
			l := int32(x4[0])*int32(y4[0]) + int32(x4[1])*int32(y4[1]) +
				int32(x4[2])*int32(y4[2]) + int32(x4[3])*int32(y4[3])
			acc[k] = float32(d*float64(l) + float64(acc[k]))
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

// dotQ8_0Raw is dotQ8_0 reading the weight row straight from its Q8_0
// blocks (34 bytes: f16 d, 32 int8), bit for bit the same result.
func dotQ8_0Raw(src []byte, bq []int8, bd []float32) float32 {
	tab := f16tab()
	var acc [8]float32
	for blk, db := range bd {
		b := src[blk*34 : blk*34+34 : blk*34+34]
		da := tab[uint16(b[0])|uint16(b[1])<<8]
		x := b[2:34:34]
		y := bq[blk*32 : blk*32+32 : blk*32+32]
		// fma32(d, l, acc) with the conversions hoisted: the product of a
		// float32 and an int below 2^17 is exact in float64.
		d := float64(da * db)
		for k := range acc {
			w := binary.LittleEndian.Uint32(x[4*k:])
			y4 := y[4*k : 4*k+4 : 4*k+4]
			l := int32(int8(w))*int32(y4[0]) + int32(int8(w>>8))*int32(y4[1]) +
				int32(int8(w>>16))*int32(y4[2]) + int32(int8(w>>24))*int32(y4[3])
			acc[k] = float32(d*float64(l) + float64(acc[k]))
		}
	}
	return hsum8(&acc)
}

// dotQ4_0Raw is dotQ8_0 for a Q4_0 weight row read straight from its
// blocks (18 bytes: f16 d, 16 bytes of nibbles, value = nibble - 8; low
// nibbles are values 0..15, high nibbles 16..31), bit for bit the same as
// unpacking first.
func dotQ4_0Raw(src []byte, bq []int8, bd []float32) float32 {
	tab := f16tab()
	var acc [8]float32
	for blk, db := range bd {
		b := src[blk*18 : blk*18+18 : blk*18+18]
		da := tab[uint16(b[0])|uint16(b[1])<<8]
		x := b[2:18:18]
		y := bq[blk*32 : blk*32+32 : blk*32+32]
		d := float64(da * db) // fma32 with the conversions hoisted (exact products)
		for k := range 4 {
			w := binary.LittleEndian.Uint32(x[4*k:])
			ylo, yhi := y[4*k:4*k+4:4*k+4], y[16+4*k:16+4*k+4:16+4*k+4]
			lo := (int32(w&0x0f)-8)*int32(ylo[0]) + (int32(w>>8&0x0f)-8)*int32(ylo[1]) +
				(int32(w>>16&0x0f)-8)*int32(ylo[2]) + (int32(w>>24&0x0f)-8)*int32(ylo[3])
			hi := (int32(w>>4&0x0f)-8)*int32(yhi[0]) + (int32(w>>12&0x0f)-8)*int32(yhi[1]) +
				(int32(w>>20&0x0f)-8)*int32(yhi[2]) + (int32(w>>28)-8)*int32(yhi[3])
			acc[k] = float32(d*float64(lo) + float64(acc[k]))
			acc[k+4] = float32(d*float64(hi) + float64(acc[k+4]))
		}
	}
	return hsum8(&acc)
}
