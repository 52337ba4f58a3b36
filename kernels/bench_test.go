package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
)

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

// attnCase builds the operands of one attention call as the set_rows KV
// layout presents them: K and V caches [hd*nhkv, nctx] of type cache, k
// the view [hd, nkv, nhkv], v the strided view [nkv, hd, nhkv] (read
// transposed), q the permuted view of a [hd, nh, nt] tensor, a causal mask
// padded to 64 rows, and dst the permuted view of a [hd, nh, nt] result.
func attnCase(b testing.TB, cache gguf.GGMLType, hd, nh, nhkv, nt, nkv int64) (dst, q, k, v, mask Tensor) {
	b.Helper()
	r := rand.New(rand.NewPCG(3, 4))
	const nctx = 512
	kc := newT(b, cache, hd*nhkv, nctx)
	vc := newT(b, cache, hd*nhkv, nctx)
	if err := Cpy(kc, f32t(b, randF32(r, int(hd*nhkv*nctx), 1), hd*nhkv, nctx)); err != nil {
		b.Fatal(err)
	}
	if err := Cpy(vc, f32t(b, randF32(r, int(hd*nhkv*nctx), 1), hd*nhkv, nctx)); err != nil {
		b.Fatal(err)
	}
	es, row := int64(cache.TypeSize()), kc.Nb[1]
	var err error
	if k, err = kc.View([4]int64{hd, nkv, nhkv, 1}, [4]int64{es, row, hd * es, row * nkv}, 0); err != nil {
		b.Fatal(err)
	}
	if v, err = vc.View([4]int64{nkv, hd, nhkv, 1}, [4]int64{row, es, hd * es, row * nkv}, 0); err != nil {
		b.Fatal(err)
	}
	if q, err = f32t(b, randF32(r, int(hd*nh*nt), 1), hd, nh, nt).Permute([4]int{0, 2, 1, 3}); err != nil {
		b.Fatal(err)
	}
	rows := (nt + 63) / 64 * 64
	mv := make([]float32, nkv*rows)
	for i := range rows {
		for j := range nkv {
			if i >= nt || j > nkv-nt-8+i {
				mv[i*nkv+j] = float32(math.Inf(-1))
			}
		}
	}
	mask = f32t(b, mv, nkv, rows)
	if dst, err = newT(b, gguf.TypeF32, hd, nh, nt).Permute([4]int{0, 2, 1, 3}); err != nil {
		b.Fatal(err)
	}
	return dst, q, k, v, mask
}

// BenchmarkAttention times the fused Attention kernel against the unfused
// chain it replaces (mul_mat(k, q), soft_max, mul_mat(v, kq)) on the decode
// and prefill shapes of stories260K (8 heads over 4 KV heads of 8) and
// synth-llama (4 over 2 of 16), F16 cache.
func BenchmarkAttention(b *testing.B) {
	for _, c := range []struct {
		name                string
		hd, nh, nhkv, nt, n int64
	}{
		{"stories260K/decode_nkv128", 8, 8, 4, 1, 128},
		{"synth-llama/decode_nkv128", 16, 4, 2, 1, 128},
		{"synth-llama256/decode_nkv256", 64, 4, 2, 1, 256},
		{"stories260K/prefill64", 8, 8, 4, 64, 64},
	} {
		dst, q, k, v, mask := attnCase(b, gguf.TypeF16, c.hd, c.nh, c.nhkv, c.nt, c.n)
		scale := float32(1 / math.Sqrt(float64(c.hd)))
		b.Run(c.name+"/fused", func(b *testing.B) {
			for b.Loop() {
				if err := Attention(dst, q, k, v, &mask, scale, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/unfused", func(b *testing.B) {
			kq := newT(b, gguf.TypeF32, c.n, c.nt, c.nh)
			kqv := newT(b, gguf.TypeF32, c.hd, c.nt, c.nh)
			for b.Loop() {
				if err := MulMat(kq, k, q); err != nil {
					b.Fatal(err)
				}
				if err := SoftMax(kq, kq, &mask, scale, 0); err != nil {
					b.Fatal(err)
				}
				if err := MulMat(kqv, v, kq); err != nil {
					b.Fatal(err)
				}
				if err := Cpy(dst, kqv); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
