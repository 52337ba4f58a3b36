package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
)

func randF32(r *rand.Rand, n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64()) * scale
	}
	return v
}

func benchMatMul(b *testing.B, ty gguf.GGMLType, k, m, n int64, opts Options) {
	r := rand.New(rand.NewPCG(1, 2))
	wv := randF32(r, int(k*m), 0.1)
	var a Tensor
	var err error
	switch ty {
	case gguf.TypeF32:
		a, err = FromF32(wv, k, m)
	case gguf.TypeF16:
		a, err = FromF16(wv, k, m)
	case gguf.TypeQ4_0:
		var q []byte
		if q, err = gguf.QuantizeQ4_0(wv); err == nil {
			a, err = FromBytes(ty, q, k, m)
		}
	case gguf.TypeQ8_0:
		var q []byte
		if q, err = gguf.QuantizeQ8_0(wv); err == nil {
			a, err = FromBytes(ty, q, k, m)
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	x, err := FromF32(randF32(r, int(k*n), 1), k, n)
	if err != nil {
		b.Fatal(err)
	}
	dst, err := NewTensor(gguf.TypeF32, m, n)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := opts.MulMat(dst, a, x); err != nil {
			b.Fatal(err)
		}
	}
	flops := 2 * float64(k*m*n) * float64(b.N)
	b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkMulMat covers the shapes of the brief: a 64x512 F32 weight
// (stories260K's output layer) times 64xN activations, the same in Q4_0,
// and a 896x4864 matrix-vector product (Qwen2.5-0.5B's FFN).
func BenchmarkMulMat(b *testing.B) {
	for _, n := range []int64{1, 5, 64} {
		b.Run(fmt.Sprintf("F32_64x512_N%d", n), func(b *testing.B) { benchMatMul(b, gguf.TypeF32, 64, 512, n, Options{}) })
	}
	for _, n := range []int64{1, 64} {
		b.Run(fmt.Sprintf("Q4_0_64x512_N%d/dequant", n), func(b *testing.B) { benchMatMul(b, gguf.TypeQ4_0, 64, 512, n, Options{Quant: QuantDequant}) })
		b.Run(fmt.Sprintf("Q4_0_64x512_N%d/ggml", n), func(b *testing.B) {
			benchMatMul(b, gguf.TypeQ4_0, 64, 512, n, Options{Quant: QuantGGML})
		})
	}
	b.Run("F32_896x4864_N1", func(b *testing.B) { benchMatMul(b, gguf.TypeF32, 896, 4864, 1, Options{}) })
	b.Run("F16_896x4864_N1", func(b *testing.B) { benchMatMul(b, gguf.TypeF16, 896, 4864, 1, Options{}) })
	b.Run("Q8_0_896x4864_N1/ggml", func(b *testing.B) { benchMatMul(b, gguf.TypeQ8_0, 896, 4864, 1, Options{Quant: QuantGGML}) })
	b.Run("Q4_0_896x4864_N1/ggml", func(b *testing.B) { benchMatMul(b, gguf.TypeQ4_0, 896, 4864, 1, Options{Quant: QuantGGML}) })
	b.Run("F32_896x4864_N64", func(b *testing.B) { benchMatMul(b, gguf.TypeF32, 896, 4864, 64, Options{}) })
}
