package gguf

import (
	"fmt"
	"math"
)

// QuantizeQ8_0 quantises src (a multiple of 32 values) to Q8_0 blocks,
// byte for byte as ggml's quantize_row_q8_0_ref: per block d = amax/127
// stored as f16, q = roundf(x * (1/d)) with ties away from zero.
// Non-finite input is refused.
func QuantizeQ8_0(src []float32) ([]byte, error) {
	nb, err := quantBlocks("q8_0", src)
	if err != nil {
		return nil, err
	}
	out := make([]byte, nb*34)
	for i := range nb {
		x := src[i*32 : i*32+32]
		var amax float32
		for _, v := range x {
			amax = max(amax, abs32(v))
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		b := out[i*34 : i*34+34]
		h := F32ToF16(d)
		b[0], b[1] = byte(h), byte(h>>8)
		for j, v := range x {
			q := math.Round(float64(float32(v * id)))
			b[2+j] = byte(int8(min(max(q, -128), 127)))
		}
	}
	return out, nil
}

// QuantizeQ4_0 quantises src (a multiple of 32 values) to Q4_0 blocks,
// byte for byte as ggml's quantize_row_q4_0_ref: per block d = max/-8 where
// max is the first value of largest magnitude, stored as f16, and
// q = min(15, trunc(x*(1/d) + 8.5)) with the product rounded to float32
// before the add (no fused multiply-add). Non-finite input is refused.
func QuantizeQ4_0(src []float32) ([]byte, error) {
	nb, err := quantBlocks("q4_0", src)
	if err != nil {
		return nil, err
	}
	out := make([]byte, nb*18)
	for i := range nb {
		x := src[i*32 : i*32+32]
		var amax, vmax float32
		for _, v := range x {
			if amax < abs32(v) {
				amax = abs32(v)
				vmax = v
			}
		}
		d := vmax / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		b := out[i*18 : i*18+18]
		h := F32ToF16(d)
		b[0], b[1] = byte(h), byte(h>>8)
		for j := range 16 {
			x0 := float32(x[j] * id)
			x1 := float32(x[j+16] * id)
			q0 := min(15, int8(float32(x0+8.5)))
			q1 := min(15, int8(float32(x1+8.5)))
			b[2+j] = uint8(q0) | uint8(q1)<<4
		}
	}
	return out, nil
}

func quantBlocks(name string, src []float32) (int, error) {
	if len(src)%32 != 0 {
		return 0, fmt.Errorf("gguf: quantize %s: %d values is not a multiple of the block size 32", name, len(src))
	}
	for i, v := range src {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return 0, fmt.Errorf("gguf: quantize %s: value %d is %v; only finite values can be quantised", name, i, v)
		}
	}
	return len(src) / 32, nil
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }
