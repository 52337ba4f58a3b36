package gguf

import (
	"math"
	"sync"
)

// F16ToF32 converts an IEEE 754 half-precision value to float32. The
// conversion is exact; NaN payloads are kept. It reads a 256 KiB table built
// on first use, several times faster than converting bit by bit.
func F16ToF32(h uint16) float32 { return f16Table()[h] }

// f16Table holds the float32 value of every half (256 KiB).
var f16Table = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for h := range t {
		t[h] = f16ToF32Bits(uint16(h))
	}
	return &t
})

// f16ToF32Bits converts by bit manipulation.
func f16ToF32Bits(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: mant × 2^-24, exact in float32.
		f := float32(mant) * (1.0 / (1 << 24))
		return math.Float32frombits(sign | math.Float32bits(f))
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// F32ToF16 converts a float32 to half precision with round-to-nearest-even,
// bit for bit as the x86 F16C instruction (VCVTPS2PH, imm 0) and numpy's
// astype(float16) do for finite values and infinities: overflow gives ±Inf,
// values below half the smallest subnormal give ±0. NaNs stay NaN with the
// quiet bit set and the top 10 payload bits kept, as F16C does.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00 | uint16(mant>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15 // biased half exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Half subnormal (or zero): the value is M × 2^(e-14) half-ulps,
		// M the 24-bit significand, so shift right by 14-e and round.
		if e < -10 {
			return sign // below half the smallest subnormal
		}
		m := mant | 0x800000
		shift := uint32(14 - e)
		q := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && q&1 == 1) {
			q++
		}
		return sign | uint16(q)
	}
	h := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry into the exponent is correct, up to Inf
	}
	return sign | uint16(h)
}

// BF16ToF32 converts a bfloat16 value to float32 (exact).
func BF16ToF32(h uint16) float32 {
	return math.Float32frombits(uint32(h) << 16)
}

// F32ToBF16 converts a float32 to bfloat16 with round-to-nearest-even, as
// ggml's ggml_compute_fp32_to_bf16 does (NaNs are made quiet).
func F32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 64
	}
	return uint16((u + (0x7fff + (u>>16)&1)) >> 16)
}
