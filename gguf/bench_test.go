package gguf

import (
	"math/rand/v2"
	"testing"
)

// randomBlocks returns n random blocks of type t whose f16 scales are
// finite, so the benchmark measures ordinary arithmetic.
func randomBlocks(t GGMLType, n int) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n*t.TypeSize())
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	if t == TypeF16 { // realistic weights, not random bit patterns
		for i := 0; i < len(b); i += 2 {
			h := F32ToF16(float32(r.NormFloat64() * 0.02))
			b[i], b[i+1] = byte(h), byte(h>>8)
		}
		return b
	}
	for i := 0; i < len(b); i += t.TypeSize() {
		blk := b[i : i+t.TypeSize()]
		s := F32ToF16(0.01)
		switch t {
		case TypeQ4_0, TypeQ8_0:
			blk[0], blk[1] = byte(s), byte(s>>8)
		case TypeQ4_K, TypeQ5_K:
			blk[0], blk[1], blk[2], blk[3] = byte(s), byte(s>>8), byte(s), byte(s>>8)
		}
	}
	return b
}

// BenchmarkDequantize reports throughput in MB/s of float32 output for a
// 1M-element tensor.
func BenchmarkDequantize(b *testing.B) {
	for _, t := range []GGMLType{TypeQ4_0, TypeQ8_0, TypeQ4_K, TypeQ6_K, TypeF16} {
		b.Run(t.String(), func(b *testing.B) {
			const n = 1 << 20
			src := randomBlocks(t, n/t.BlockSize())
			dst := make([]float32, n)
			b.SetBytes(4 * n)
			for b.Loop() {
				if err := Dequantize(t, src, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkQuantizeQ4_0(b *testing.B) {
	x := make([]float32, 1<<20)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	b.SetBytes(4 << 20)
	for b.Loop() {
		if _, err := QuantizeQ4_0(x); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseStories(b *testing.B) {
	f := openT(b, "../testdata/stories260K.gguf")
	data := f.data
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Parse(data, "stories"); err != nil {
			b.Fatal(err)
		}
	}
}
