package kernels

import (
	"math"
	"testing"

	"github.com/irtool/irtool/gguf"
)

func TestAddMulBroadcast(t *testing.T) {
	a := []float32{1, 2, 3, 4, 5, 6} // [3, 2]
	for _, c := range []struct {
		name    string
		b       []float32
		bne     []int64
		add     []float64
		mul     []float64
		wantErr bool
	}{
		{"same shape", []float32{10, 20, 30, 40, 50, 60}, []int64{3, 2},
			[]float64{11, 22, 33, 44, 55, 66}, []float64{10, 40, 90, 160, 250, 360}, false},
		{"row vector over rows", []float32{10, 20, 30}, []int64{3},
			[]float64{11, 22, 33, 14, 25, 36}, []float64{10, 40, 90, 40, 100, 180}, false},
		{"scalar over everything", []float32{2}, []int64{1},
			[]float64{3, 4, 5, 6, 7, 8}, []float64{2, 4, 6, 8, 10, 12}, false},
		{"column over columns", []float32{10, 20}, []int64{1, 2},
			[]float64{11, 12, 13, 24, 25, 26}, []float64{10, 20, 30, 80, 100, 120}, false},
		{"not a divisor", []float32{1, 2}, []int64{2}, nil, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := f32t(t, a, 3, 2)
			y := f32t(t, c.b, c.bne...)
			sum, prod := newT(t, gguf.TypeF32, 3, 2), newT(t, gguf.TypeF32, 3, 2)
			errA, errM := Add(sum, x, y), Mul(prod, x, y)
			if c.wantErr {
				wantErr(t, "add", errA)
				wantErr(t, "mul", errM)
				return
			}
			if errA != nil || errM != nil {
				t.Fatal(errA, errM)
			}
			near(t, "add", vals(t, sum), c.add, 0)
			near(t, "mul", vals(t, prod), c.mul, 0)
		})
	}
}

func TestAddStridedAndInPlace(t *testing.T) {
	// a is the transpose of a contiguous [2, 3] matrix, so it is [3, 2] with
	// strides (8, 4); dst is F16; b broadcasts over rows.
	base := f32t(t, []float32{1, 4, 2, 5, 3, 6}, 2, 3)
	a := base.Transpose()
	b := f32t(t, []float32{0.5, 0.25, 0.125}, 3)
	dst := newT(t, gguf.TypeF16, 3, 2)
	if err := Add(dst, a, b); err != nil {
		t.Fatal(err)
	}
	near(t, "strided add", vals(t, dst), []float64{1.5, 2.25, 3.125, 4.5, 5.25, 6.125}, 0)
	// In place: dst aliases a.
	x := f32t(t, []float32{1, 2, 3}, 3)
	if err := Mul(x, x, f32t(t, []float32{2}, 1)); err != nil {
		t.Fatal(err)
	}
	near(t, "in place", vals(t, x), []float64{2, 4, 6}, 0)
	if err := Add(newT(t, gguf.TypeF32, 2), x, x); err == nil {
		t.Error("shape mismatch accepted")
	}
	if err := Add(x, x, i32t(t, []int32{1}, 1)); err == nil {
		t.Error("i32 operand accepted")
	}
}

func TestScaleSilu(t *testing.T) {
	in := make([]float32, 19) // 16 values take ggml's vector path, 3 the scalar tail
	for i := range in {
		in[i] = float32(i-9) * 0.75
	}
	x := f32t(t, in, 19)
	s := newT(t, gguf.TypeF32, 19)
	if err := Scale(s, x, -2); err != nil {
		t.Fatal(err)
	}
	want := make([]float64, len(in))
	for i, v := range in {
		want[i] = -2 * float64(v)
	}
	near(t, "scale", vals(t, s), want, 0)
	if err := Silu(s, x); err != nil {
		t.Fatal(err)
	}
	for i, v := range in {
		want[i] = float64(v) / (1 + math.Exp(-float64(v)))
	}
	near(t, "silu", vals(t, s), want, 3e-7)
	if v := vals(t, s); v[9] != 0 {
		t.Errorf("silu(0) = %v", v[9])
	}
}

func TestVexpf(t *testing.T) {
	// ggml's vectorised expf: error below 1.5 ulp + 0.5 ulp.
	for x := float32(-103); x < 88.5; x += 0.01234 {
		got := float64(vexpf(x))
		want := math.Exp(float64(x))
		if want < 1e-37 { // subnormal results: absolute error
			if math.Abs(got-want) > 1e-44 {
				t.Fatalf("vexpf(%v) = %g, want %g", x, got, want)
			}
			continue
		}
		ulp := float64(math.Nextafter32(float32(want), float32(math.Inf(1))) - float32(want))
		if math.Abs(got-want) > 2*ulp {
			t.Fatalf("vexpf(%v) = %.9g, want %.9g (%.2f ulp)", x, got, want, math.Abs(got-want)/ulp)
		}
	}
	for _, c := range []struct{ x, want float32 }{
		{0, 1}, {float32(math.Inf(-1)), 0}, {-200, 0}, {float32(math.Inf(1)), float32(math.Inf(1))}, {100, float32(math.Inf(1))},
	} {
		if got := vexpf(c.x); got != c.want {
			t.Errorf("vexpf(%v) = %v, want %v", c.x, got, c.want)
		}
	}
}

func TestRMSNorm(t *testing.T) {
	const eps = 1e-5
	x := f32t(t, []float32{3, 4, 1, -1, 0, 0}, 2, 3)
	y := newT(t, gguf.TypeF32, 2, 3)
	if err := RMSNorm(y, x, eps); err != nil {
		t.Fatal(err)
	}
	r1 := 1 / math.Sqrt(12.5+eps)
	r2 := 1 / math.Sqrt(1+eps)
	near(t, "rms_norm", vals(t, y), []float64{3 * r1, 4 * r1, r2, -r2, 0, 0}, 1e-7)
	// The sum of squares is float64: 1e20 squared overflows float32 but not
	// the sum (ggml_float), and the mean is narrowed before the sqrt.
	big := f32t(t, []float32{1e18, 1e18}, 2)
	if err := RMSNorm(big, big, eps); err != nil {
		t.Fatal(err)
	}
	near(t, "rms_norm large", vals(t, big), []float64{1, 1}, 1e-7)
	if err := RMSNorm(newT(t, gguf.TypeF32, 3, 2), x, eps); err == nil {
		t.Error("shape mismatch accepted")
	}
}

func TestSoftMax(t *testing.T) {
	softmax := func(x []float64) []float64 {
		mx := math.Inf(-1)
		for _, v := range x {
			mx = max(mx, v)
		}
		var s float64
		out := make([]float64, len(x))
		for i, v := range x {
			out[i] = math.Exp(v - mx)
			s += out[i]
		}
		for i := range out {
			out[i] /= s
		}
		return out
	}
	t.Run("plain", func(t *testing.T) {
		x := f32t(t, []float32{1, 2, 3}, 3)
		y := newT(t, gguf.TypeF32, 3)
		if err := SoftMax(y, x, nil, 1, 0); err != nil {
			t.Fatal(err)
		}
		near(t, "softmax", vals(t, y), []float64{0.09003057317, 0.2447284711, 0.6652409558}, 1e-6)
	})
	t.Run("scale and broadcast mask", func(t *testing.T) {
		// x [10 keys, 2 rows, 3 heads]; the mask has 4 rows (padded), one
		// per query row, shared by every head; an F16 mask gives the same.
		const nk, nr, nh = 10, 2, 3
		xv := make([]float32, nk*nr*nh)
		for i := range xv {
			xv[i] = float32(math.Sin(float64(i)))
		}
		mv := make([]float32, nk*4)
		for r := range 4 {
			for j := range nk {
				if j > 5+r {
					mv[r*nk+j] = float32(math.Inf(-1))
				} else {
					mv[r*nk+j] = float32(j) * 0.125
				}
			}
		}
		x := f32t(t, xv, nk, nr, nh)
		for _, mask := range []Tensor{f32t(t, mv, nk, 4), f16t(t, mv, nk, 4)} {
			y := newT(t, gguf.TypeF32, nk, nr, nh)
			if err := SoftMax(y, x, &mask, 0.5, 0); err != nil {
				t.Fatal(err)
			}
			var want []float64
			for h := range nh {
				for r := range nr {
					row := make([]float64, nk)
					for j := range nk {
						row[j] = 0.5*float64(xv[(h*nr+r)*nk+j]) + float64(mv[r*nk+j])
					}
					want = append(want, softmax(row)...)
				}
			}
			near(t, "masked softmax "+mask.Type.String(), vals(t, y), want, 2e-7)
		}
	})
	t.Run("alibi", func(t *testing.T) {
		// max_bias 8, 4 heads: n_head_log2 = 4, m0 = 2^-2, slopes 1/4, 1/16, 1/64, 1/256.
		// 6 heads: n_head_log2 = 4, heads 4, 5 use m1 = 2^-1: slopes 1/2, 1/8.
		for _, c := range []struct {
			nh     int
			slopes []float64
		}{{4, []float64{0.25, 0.0625, 1.0 / 64, 1.0 / 256}}, {6, []float64{0.25, 0.0625, 1.0 / 64, 1.0 / 256, 0.5, 0.125}}} {
			const nk = 4
			xv := make([]float32, nk*c.nh)
			mv := []float32{-3, -2, -1, 0}
			x := f32t(t, xv, nk, 1, int64(c.nh))
			mask := f32t(t, mv, nk, 1)
			y := newT(t, gguf.TypeF32, nk, 1, int64(c.nh))
			if err := SoftMax(y, x, &mask, 1, 8); err != nil {
				t.Fatal(err)
			}
			var want []float64
			for _, s := range c.slopes {
				row := make([]float64, nk)
				for j := range row {
					row[j] = s * float64(mv[j])
				}
				want = append(want, softmax(row)...)
			}
			near(t, "alibi", vals(t, y), want, 2e-7)
		}
	})
	t.Run("errors", func(t *testing.T) {
		x := f32t(t, make([]float32, 6), 3, 2)
		short := f32t(t, make([]float32, 3), 3, 1)
		if err := SoftMax(x, x, &short, 1, 0); err == nil {
			t.Error("mask with too few rows accepted")
		}
		wide := f32t(t, make([]float32, 8), 4, 2)
		if err := SoftMax(x, x, &wide, 1, 0); err == nil {
			t.Error("mask of another width accepted")
		}
		idx := i32t(t, make([]int32, 6), 3, 2)
		if err := SoftMax(x, x, &idx, 1, 0); err == nil {
			t.Error("i32 mask accepted")
		}
	})
}
