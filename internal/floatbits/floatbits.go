// Package floatbits converts float32 values to and from the little-endian
// bytes that tensors hold, makes random float32 data and compares values bit
// for bit. The tests of several packages share it.
package floatbits

import (
	"encoding/binary"
	"math"
)

// Bytes returns v as little-endian IEEE 754 bytes.
func Bytes(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// Floats reads little-endian IEEE 754 bytes (a trailing partial value is
// ignored).
func Floats(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// Normal is a source of normally distributed values: a *rand.Rand of
// math/rand or of math/rand/v2.
type Normal interface{ NormFloat64() float64 }

// Rand returns n values float32(r.NormFloat64()) * scale, in the order r
// draws them.
func Rand(r Normal, n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64()) * scale
	}
	return v
}

// Equal reports whether a and b have the same bits (so +0 and -0 differ,
// and a NaN equals only a NaN with the same payload).
func Equal(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }

// Same reports whether a and b have the same bits or are both NaN (which
// NaN payload an operation propagates is not part of its arithmetic).
func Same(a, b float32) bool { return Equal(a, b) || a != a && b != b }

// Mismatch returns the index of the first element where a and b are not
// Same, len of the shorter one if one is a prefix of the other, or -1 if
// they are Same throughout.
func Mismatch(a, b []float32) int {
	for i := range min(len(a), len(b)) {
		if !Same(a[i], b[i]) {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}
