package kernels

import (
	"math"
	"sync"

	"github.com/irtool/irtool/gguf"
)

// Constants of ggml's tanh approximation of GELU (ggml-cpu/vec.h).
const (
	geluCoefA     float32 = 0.044715
	sqrt2OverPi   float32 = 0.79788456080286535587989211986876
	geluTableSpan float32 = 10 // |x| >= 10 bypasses the table
)

var (
	geluOnce  sync.Once
	geluTable *[1 << 16]float32
)

// geluF32 is ggml_gelu_f32 as the x86 build computes it:
// 0.5x(1 + tanh(sqrt(2/pi) x (1 + 0.044715 x^2))), in float32, with
// 1 + a·x·x contracted to one fused multiply-add (gcc's default
// -ffp-contract=fast with FMA enabled).
func geluF32(x float32) float32 {
	inner := fma32(geluCoefA*x, x, 1)
	t := float32(math.Tanh(float64(sqrt2OverPi * x * inner)))
	return 0.5 * x * (1 + t)
}

// geluTab is ggml_table_gelu_f16 widened to float32: entry h is
// gelu(half h) rounded to a half, built as ggml_cpu_init builds it.
func geluTab() *[1 << 16]float32 {
	geluOnce.Do(func() {
		t := new([1 << 16]float32)
		for i := range t {
			t[i] = gguf.F16ToF32(gguf.F32ToF16(geluF32(gguf.F16ToF32(uint16(i)))))
		}
		geluTable = t
	})
	return geluTable
}

// geluRow is ggml_vec_gelu_f32 with GGML_GELU_FP16 (the default of
// llama.cpp's CPU backend): x <= -10 gives 0, x >= 10 gives x, otherwise
// x is rounded to a half and gelu is read from the half-precision table.
func geluRow(out, x []float32) {
	tab := geluTab()
	for i, v := range x {
		switch {
		case v <= -geluTableSpan:
			out[i] = 0
		case v >= geluTableSpan:
			out[i] = v
		default:
			out[i] = tab[gguf.F32ToF16(v)]
		}
	}
}

// Gelu computes dst = gelu(src) (ggml_gelu) with the numerics of ggml's
// CPU backend: the tanh approximation read from a half-precision table
// indexed by src rounded to a half (see geluRow). GEGLU (gemma's FFN,
// ggml_geglu_split) is Gelu of the gate followed by Mul with the up
// projection, bit for bit.
func Gelu(dst, src Tensor) error { return Options{}.Gelu(dst, src) }

// Gelu is the package's Gelu with o's pool and threads.
func (o Options) Gelu(dst, src Tensor) error {
	return o.unary("gelu", dst, src, geluRow)
}
