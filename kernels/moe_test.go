package kernels

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/irtool/irtool/gguf"
)

func TestTopK(t *testing.T) {
	for _, c := range []struct {
		name string
		x    []float32
		n    int64
		k    int
		want []int32
	}{
		{"descending", []float32{0.1, 0.7, 0.2, 0.0}, 4, 2, []int32{1, 2}},
		{"ties keep the lower index", []float32{0.5, 0.5, 0.9, 0.5}, 4, 3, []int32{2, 0, 1}},
		{"two rows", []float32{1, 2, 3, 3, 2, 1}, 3, 1, []int32{2, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := f32t(t, c.x, c.n, int64(len(c.x))/c.n)
			dst := newT(t, gguf.TypeI32, int64(c.k), int64(len(c.x))/c.n)
			if err := TopK(dst, x, c.k); err != nil {
				t.Fatal(err)
			}
			for i, w := range c.want {
				if got := int32(binary.LittleEndian.Uint32(dst.Data[4*i:])); got != w {
					t.Fatalf("index %d: got %d, want %d", i, got, w)
				}
			}
		})
	}
	wantErr(t, "k too large", TopK(newT(t, gguf.TypeI32, 5), f32t(t, []float32{1, 2, 3, 4}, 4), 5))
	wantErr(t, "dst not i32", TopK(newT(t, gguf.TypeF32, 2), f32t(t, []float32{1, 2, 3, 4}, 4), 2))
}

func TestSumRowsDiv(t *testing.T) {
	x := f32t(t, []float32{0.25, 0.5, 1, 3}, 2, 2)
	s := newT(t, gguf.TypeF32, 1, 2)
	if err := SumRows(s, x); err != nil {
		t.Fatal(err)
	}
	same(t, "sum_rows", vals(t, s), []float32{0.75, 4})
	d := newT(t, gguf.TypeF32, 2, 2)
	if err := Div(d, x, s); err != nil {
		t.Fatal(err)
	}
	same(t, "div", vals(t, d), []float32{0.25 / 0.75, 0.5 / 0.75, 0.25, 0.75})
	wantErr(t, "sum_rows shape", SumRows(newT(t, gguf.TypeF32, 2, 2), x))
}

// TestMulMatID checks the expert product against per-expert MulMat calls
// and the broadcast of a single activation row over the chosen slots.
func TestMulMatID(t *testing.T) {
	const k, n, nExp, nTok, nUsed = 32, 3, 4, 2, 2
	w := make([]float32, k*n*nExp)
	for i := range w {
		w[i] = float32(math.Sin(float64(i)))
	}
	as := f32t(t, w, k, n, nExp)
	xs := make([]float32, k*nTok)
	for i := range xs {
		xs[i] = float32(math.Cos(float64(3 * i)))
	}
	b := f32t(t, xs, k, 1, nTok)
	ids := i32t(t, []int32{3, 0, 1, 3}, nUsed, nTok)
	dst := newT(t, gguf.TypeF32, n, nUsed, nTok)
	if err := (Options{}).MulMatID(dst, as, b, ids); err != nil {
		t.Fatal(err)
	}
	got := vals(t, dst)
	for tok := range nTok {
		for e := range nUsed {
			x := []int32{3, 0, 1, 3}[tok*nUsed+e]
			a := f32t(t, w[int(x)*k*n:int(x+1)*k*n], k, n)
			col := f32t(t, xs[tok*k:(tok+1)*k], k, 1)
			want := newT(t, gguf.TypeF32, n, 1)
			if err := MulMat(want, a, col); err != nil {
				t.Fatal(err)
			}
			same(t, "slot", got[(tok*nUsed+e)*n:(tok*nUsed+e+1)*n], vals(t, want))
		}
	}
	wantErr(t, "expert out of range", (Options{}).MulMatID(dst, as, b, i32t(t, []int32{4, 0, 1, 3}, nUsed, nTok)))
}

func TestSWAMask(t *testing.T) {
	inf := float32(math.Inf(-1))
	// 4 cells, 2 token rows at positions 2 and 3, padded to 3 rows; window 2.
	mask := f32t(t, []float32{0, 0, 0, inf, 0, 0, 0, 0, inf, inf, inf, inf}, 4, 3)
	pos := i32t(t, []int32{2, 3}, 2)
	dst := newT(t, gguf.TypeF32, 4, 3)
	if err := SWAMask(dst, mask, pos, 2); err != nil {
		t.Fatal(err)
	}
	same(t, "swa", vals(t, dst), []float32{inf, 0, 0, inf, inf, inf, 0, 0, inf, inf, inf, inf})
	wantErr(t, "window 0", SWAMask(dst, mask, pos, 0))
}

func TestGelu(t *testing.T) {
	xs := []float32{-12, -10, -3.3, -0.5, 0, 0.25, 1, 2.7, 9.99, 10, 15}
	x := f32t(t, xs, int64(len(xs)))
	dst := newT(t, gguf.TypeF32, int64(len(xs)))
	if err := Gelu(dst, x); err != nil {
		t.Fatal(err)
	}
	got := vals(t, dst)
	for i, v := range xs {
		switch {
		case v <= -10:
			if got[i] != 0 {
				t.Errorf("gelu(%v) = %v, want 0", v, got[i])
			}
		case v >= 10:
			if got[i] != v {
				t.Errorf("gelu(%v) = %v, want %v", v, got[i], v)
			}
		default:
			// The table holds halves: within half an F16 ulp of the exact
			// tanh formula at the half-rounded input.
			h := float64(gguf.F16ToF32(gguf.F32ToF16(v)))
			want := 0.5 * h * (1 + math.Tanh(math.Sqrt(2/math.Pi)*h*(1+0.044715*h*h)))
			if d := math.Abs(float64(got[i]) - want); d > math.Max(math.Abs(want)*1e-3, 1e-7) {
				t.Errorf("gelu(%v) = %v, want %v", v, got[i], want)
			}
			if gguf.F16ToF32(gguf.F32ToF16(got[i])) != got[i] {
				t.Errorf("gelu(%v) = %v is not a half", v, got[i])
			}
		}
	}
}
