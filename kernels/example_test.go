package kernels_test

import (
	"fmt"
	"math"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/kernels"
)

// A weight matrix of two rows times two activation columns: dst[m, n] is
// the dot product of weight row m with activation row n.
func ExampleMulMat() {
	w, _ := kernels.FromF32([]float32{1, 2, 3, 4, 5, 6}, 3, 2) // rows (1 2 3), (4 5 6)
	x, _ := kernels.FromF32([]float32{1, 0, 1, 0, 1, 0}, 3, 2) // rows (1 0 1), (0 1 0)
	dst, _ := kernels.NewTensor(gguf.TypeF32, 2, 2)
	if err := kernels.MulMat(dst, w, x); err != nil {
		fmt.Println(err)
		return
	}
	v, _ := kernels.ToF32(dst)
	fmt.Println(v)
	// Output: [4 10 2 5]
}

// Quantised weights: QuantGGML quantises the activations to Q8_0 and takes
// integer dot products, as llama.cpp's CPU backend does.
func ExampleOptions_MulMat() {
	row := make([]float32, 32)
	for i := range row {
		row[i] = float32(i%5) - 2
	}
	q, _ := gguf.QuantizeQ8_0(row)
	w, _ := kernels.FromBytes(gguf.TypeQ8_0, q, 32, 1)
	x, _ := kernels.FromF32(row, 32, 1)
	dst, _ := kernels.NewTensor(gguf.TypeF32, 1, 1)
	for _, mode := range []kernels.QuantMode{kernels.QuantDequant, kernels.QuantGGML} {
		if err := (kernels.Options{Quant: mode}).MulMat(dst, w, x); err != nil {
			fmt.Println(err)
			return
		}
		v, _ := kernels.ToF32(dst)
		fmt.Printf("%s: %.4f\n", mode, v[0])
	}
	// The exact product is 65; both modes see the weight's Q8_0 rounding,
	// QuantGGML also the activation's.

	// Output:
	// dequant: 65.0984
	// ggml: 65.1976
}

// RoPE in NORM mode rotates pairs (x0, x1) by pos·base^(-2i/n_dims).
func ExampleRope() {
	x, _ := kernels.FromF32([]float32{1, 0, 1, 0}, 4, 1, 1) // one head of 4 dims, one token
	pos, _ := kernels.FromI32([]int32{1}, 1)
	p := kernels.RopeParams{NDims: 4, Mode: kernels.RopeNorm, NCtxOrig: 2048, FreqBase: 100,
		FreqScale: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1}
	if err := kernels.Rope(x, x, pos, p); err != nil {
		fmt.Println(err)
		return
	}
	v, _ := kernels.ToF32(x)
	fmt.Printf("%.4f %.4f %.4f %.4f\n", v[0], v[1], v[2], v[3])
	fmt.Printf("%.4f %.4f\n", math.Cos(1), math.Cos(0.1))
	// Output:
	// 0.5403 0.8415 0.9950 0.0998
	// 0.5403 0.9950
}

// Soft max with a causal mask: -Inf hides the future key.
func ExampleSoftMax() {
	x, _ := kernels.FromF32([]float32{1, 1, 2, 2}, 2, 2)
	inf := float32(math.Inf(-1))
	mask, _ := kernels.FromF32([]float32{0, inf, 0, 0}, 2, 2)
	if err := kernels.SoftMax(x, x, &mask, 1, 0); err != nil {
		fmt.Println(err)
		return
	}
	v, _ := kernels.ToF32(x)
	fmt.Println(v)
	// Output: [1 0 0.5 0.5]
}
