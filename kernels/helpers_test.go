package kernels

import (
	"math"
	"testing"

	"github.com/irtool/irtool/gguf"
)

func f32t(t testing.TB, vals []float32, ne ...int64) Tensor {
	t.Helper()
	x, err := FromF32(vals, ne...)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func f16t(t testing.TB, vals []float32, ne ...int64) Tensor {
	t.Helper()
	x, err := FromF16(vals, ne...)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func i32t(t testing.TB, vals []int32, ne ...int64) Tensor {
	t.Helper()
	x, err := FromI32(vals, ne...)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func vals(t testing.TB, x Tensor) []float32 {
	t.Helper()
	v, err := ToF32(x)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func clone(t testing.TB, x Tensor) Tensor {
	t.Helper()
	c, err := x.Contiguous()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// near reports whether got and want agree within tol relative to max(|want|, 1e-30)... per element,
// failing the test with the first difference.
func near(t testing.TB, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		w := want[i]
		d := math.Abs(float64(got[i]) - w)
		if math.IsInf(w, 0) || math.IsNaN(w) {
			if float64(got[i]) != w && !(math.IsNaN(w) && math.IsNaN(float64(got[i]))) {
				t.Fatalf("%s[%d] = %v, want %v", what, i, got[i], w)
			}
			continue
		}
		if d > tol*max(math.Abs(w), 1) {
			t.Fatalf("%s[%d] = %.9g, want %.9g (diff %.3g, tol %.1g)", what, i, got[i], w, d, tol)
		}
	}
}

// same requires bit-identical float32 slices.
func same(t testing.TB, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v (%#x), want %v (%#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

func newT(t testing.TB, ty gguf.GGMLType, ne ...int64) Tensor {
	t.Helper()
	x, err := NewTensor(ty, ne...)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func wantErr(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
}

func f64s(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
