//go:build amd64 && !purego

package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
)

// BenchmarkSIMDLegacy times Qwen2.5-0.5B's FFN product (4864 rows of 896,
// random blocks; 1792 for the 256-value types) times one activation
// column (decode) and four (a prefill tile) for the legacy, IQ4 and
// Q2_K/Q3_K types, on one thread, in assembly and in Go (for the K types
// the unpacked-row path), with Q4_0/Q8_0 in the same run for comparison.
func BenchmarkSIMDLegacy(b *testing.B) {
	if !useAVX2 {
		b.Skip("no assembly kernels in this build")
	}
	const m = 4864
	r := rand.New(rand.NewPCG(7, 8))
	for _, ty := range []gguf.GGMLType{gguf.TypeQ5_0, gguf.TypeQ4_1, gguf.TypeQ5_1, gguf.TypeIQ4_NL, gguf.TypeQ4_0, gguf.TypeQ8_0,
		gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeIQ4_XS} {
		k := int64(896)
		if ty.BlockSize() == 256 {
			k = 1792
		}
		raw := make([]byte, m*k/int64(ty.BlockSize())*int64(ty.TypeSize()))
		for i := range raw {
			raw[i] = byte(r.IntN(256))
		}
		for blk := 0; blk < len(raw)/ty.TypeSize(); blk++ {
			o := blk * ty.TypeSize()
			switch ty {
			case gguf.TypeQ2_K:
				raw[o+81], raw[o+83] = 0x20, 0x20
			case gguf.TypeQ3_K:
				raw[o+109] = 0x20
			default:
				raw[o+1] = 0x20 // modest F16 scales (and Q4_1/Q5_1 offsets)
			}
			if ty == gguf.TypeQ4_1 || ty == gguf.TypeQ5_1 {
				raw[o+3] = 0x20
			}
		}
		a, err := FromBytes(ty, raw, k, m)
		if err != nil {
			b.Fatal(err)
		}
		for _, n := range []int64{1, 4} {
			x, _ := FromF32(randF32(r, int(k*n), 1), k, n)
			dst, _ := NewTensor(gguf.TypeF32, m, n)
			for _, asm := range []bool{true, false} {
				name := fmt.Sprintf("%s/n%d/go", ty, n)
				if asm {
					name = fmt.Sprintf("%s/n%d/asm", ty, n)
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
}
