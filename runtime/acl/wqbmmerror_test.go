//go:build cann

package acl

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/gguf/wqconv"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/kernels"
)

// TestWQBMMErrorPerMatmul measures, on every quantised matrix of the
// testdata copies (up to 512 rows each), how far the "wqbmm" mode's
// arithmetic (the weight converted by gguf/wqconv, f16 activations,
// wqconv.DequantF16's f16 weight, f32 accumulation, f16 output: what the
// emulator's aclnnWeightQuantBatchMatmulV2 computes) puts x·Wᵀ from the
// exact product of ggml's dequantised weight, and how far ggml-cpu's own
// product (kernels.MulMat: the activations quantised to q8_0/q8_1/q8_K)
// is from it, both over max|out|, for 4 rows of Gaussian x with 1 % of the
// values ×20. It holds the "wqbmm" error to 2e-3 for the exact and
// rounded-offset layouts and 8e-3 for the re-quantised ones (measured
// 2.4e-4..9.8e-4 and 3.4e-3..5.4e-3), and checks ggml's q8_K rounding is
// the larger of the two on every K-quant matrix (measured 2.0e-2..4.5e-2;
// q8_0/q8_1: 4.7e-3..2.2e-2).
func TestWQBMMErrorPerMatmul(t *testing.T) {
	for _, file := range []string{"synth-llama256-Q4_K", "synth-llama256-Q3_K_S", "synth-llama256-Q2_K", "synth-llama-Q4_0", "synth-llama-Q4_1", "synth-llama-Q5_1"} {
		f, err := gguf.Open(testref.Testdata(file + ".gguf"))
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for _, ti := range f.Tensors {
			l, err := wqconv.LayoutOf(ti.Type)
			if ti.NDims != 2 || err != nil {
				continue
			}
			cols, rows := int(ti.Ne[0]), min(int(ti.Ne[1]), 512)
			raw, err := f.TensorData(ti.Name)
			if err != nil {
				t.Fatal(err)
			}
			raw = raw[:int(ti.Size)/int(ti.Ne[1])*rows]
			wqbmm, ggml := wqbmmMatmulErrors(t, ti.Type, raw, rows, cols, rng)
			bound := 2e-3
			if l.Accuracy == wqconv.Requantised {
				bound = 8e-3
			}
			t.Logf("%s %s %s %dx%d: wqbmm %.2e, ggml's q8 activations %.2e of max|out| from the exact product", file, ti.Name, ti.Type, rows, cols, wqbmm, ggml)
			if wqbmm > bound {
				t.Errorf("%s %s (%s): wqbmm arithmetic %.2e of max|out| from the exact product, above %.0e", file, ti.Name, ti.Type, wqbmm, bound)
			}
			if ti.Type >= gguf.TypeQ2_K && ti.Type <= gguf.TypeQ6_K && ggml <= wqbmm {
				t.Errorf("%s %s (%s): ggml's product %.2e from the exact one, not above wqbmm's %.2e", file, ti.Name, ti.Type, ggml, wqbmm)
			}
		}
		f.Close()
	}
}

// wqbmmMatmulErrors returns max|y − exact| / max|exact| for the "wqbmm"
// arithmetic and for kernels.MulMat, y = x·Wᵀ over rows×cols blocks raw.
func wqbmmMatmulErrors(t *testing.T, typ gguf.GGMLType, raw []byte, rows, cols int, rng *rand.Rand) (wqbmm, ggml float64) {
	t.Helper()
	w, err := wqconv.Convert(typ, raw, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	ref := make([]float32, rows*cols)
	if err := gguf.Dequantize(typ, raw, ref); err != nil {
		t.Fatal(err)
	}
	w16 := wqconv.DequantF16(w)
	const M = 4
	x := make([]float32, M*cols)
	xb := make([]byte, 4*len(x))
	for i := range x {
		x[i] = float32(rng.NormFloat64())
		if rng.IntN(100) == 0 {
			x[i] *= 20
		}
		binary.LittleEndian.PutUint32(xb[4*i:], math.Float32bits(x[i]))
	}
	A := kernels.Tensor{Type: typ, Ne: [4]int64{int64(cols), int64(rows), 1, 1}, Data: raw}
	B := kernels.Tensor{Type: gguf.TypeF32, Ne: [4]int64{int64(cols), M, 1, 1}, Data: xb}
	D := kernels.Tensor{Type: gguf.TypeF32, Ne: [4]int64{int64(rows), M, 1, 1}, Data: make([]byte, 4*M*rows)}
	for _, tt := range []*kernels.Tensor{&A, &B, &D} {
		if tt.Nb, err = kernels.ContiguousStrides(tt.Type, tt.Ne); err != nil {
			t.Fatal(err)
		}
	}
	if err := kernels.MulMat(D, A, B); err != nil {
		t.Fatal(err)
	}
	r16 := func(v float32) float32 { return gguf.F16ToF32(gguf.F32ToF16(v)) }
	var maxY, eW, eG float64
	for m := range M {
		for n := range rows {
			var exact float64
			var acc float32
			for k := range cols {
				exact += float64(x[m*cols+k]) * float64(ref[n*cols+k])
				acc += r16(x[m*cols+k]) * w16[n*cols+k]
			}
			g := math.Float32frombits(binary.LittleEndian.Uint32(D.Data[4*(m*rows+n):]))
			maxY = math.Max(maxY, math.Abs(exact))
			eW = math.Max(eW, math.Abs(float64(r16(acc))-exact))
			eG = math.Max(eG, math.Abs(float64(g)-exact))
		}
	}
	return eW / maxY, eG / maxY
}
