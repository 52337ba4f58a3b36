//go:build amd64 && !purego

package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
)

// BenchmarkSIMDQK times a K-quant matrix-vector product (Q4_K and Q6_K,
// 4864×896 with random blocks) with the integer lanes in assembly
// (qkLanesAVX2) and in Go; the row unpacking and the float combination are
// Go either way.
func BenchmarkSIMDQK(b *testing.B) {
	if !useAVX2 {
		b.Skip("no assembly kernels in this build")
	}
	const k, m = 896 * 2, 4864 // k a multiple of 256
	r := rand.New(rand.NewPCG(3, 4))
	for _, ty := range []gguf.GGMLType{gguf.TypeQ4_K, gguf.TypeQ6_K} {
		raw := make([]byte, m*k/256*ty.TypeSize())
		for i := range raw {
			raw[i] = byte(r.IntN(256))
		}
		// Finite, modest F16 super-scales.
		for sb := 0; sb < len(raw)/ty.TypeSize(); sb++ {
			o := sb * ty.TypeSize()
			for _, at := range qkScaleOffsets(ty) {
				raw[o+at], raw[o+at+1] = byte(r.IntN(256)), 0x20
			}
		}
		a, err := FromBytes(ty, raw, k, m)
		if err != nil {
			b.Fatal(err)
		}
		x, _ := FromF32(randF32(r, k, 1), k, 1)
		dst, _ := NewTensor(gguf.TypeF32, m, 1)
		for _, asm := range []bool{true, false} {
			name := ty.String() + "/go"
			if asm {
				name = ty.String() + "/asm"
			}
			b.Run(name, func(b *testing.B) {
				useAVX2 = asm
				defer func() { useAVX2 = true }()
				benchCPU(b, func() {
					if err := (Options{Quant: QuantGGML, Threads: 1}).MulMat(dst, a, x); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}

// qkScaleOffsets returns the byte offsets of the F16 super-block scales
// (d, dmin) in a block of type t.
func qkScaleOffsets(t gguf.GGMLType) []int {
	switch t {
	case gguf.TypeQ4_K:
		return []int{0, 2}
	case gguf.TypeQ6_K:
		return []int{208}
	}
	return nil
}
