package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/irtool/irtool/gguf"
)

func TestParseLlamaBuild(t *testing.T) {
	for _, c := range []struct {
		in   string
		want LlamaBuild
		err  bool
	}{
		{"current", LlamaCurrent, false},
		{"3f545bec", LlamaCurrent, false},
		{"3f545beccee69d9975f466ec7e45fd9aacd8ba90", LlamaCurrent, false},
		{"c392e50", LlamaC392e50, false},
		{"C392E5094DEAF2D1A7C18683214F007FAD3FE42B", LlamaC392e50, false},
		{"c392e5", 0, true}, // too short to name a commit
		{"deadbeef", 0, true},
		{"", 0, true},
	} {
		got, err := ParseLlamaBuild(c.in)
		if (err != nil) != c.err || !c.err && got != c.want {
			t.Errorf("ParseLlamaBuild(%q) = %v, %v; want %v, error %v", c.in, got, err, c.want, c.err)
		}
		if !c.err {
			if back, err := ParseLlamaBuild(got.String()); err != nil || back != got {
				t.Errorf("%v does not round-trip through String: %v, %v", got, back, err)
			}
		}
	}
}

// TestQKDotChoice checks which dot product each build uses: q4_K_8x8 for a
// 2-D Q4_K matrix with a multiple of 8 rows and F32 activations in the
// current build only, the block-sum Q6_K dot in the current build only.
func TestQKDotChoice(t *testing.T) {
	f32 := Tensor{Type: gguf.TypeF32, Ne: [4]int64{256, 3, 1, 1}}
	f16 := Tensor{Type: gguf.TypeF16, Ne: [4]int64{256, 3, 1, 1}}
	w := func(typ gguf.GGMLType, ne1, ne2 int64) Tensor {
		return Tensor{Type: typ, Ne: [4]int64{256, ne1, ne2, 1}}
	}
	name := func(f func(*qkRow, q8Row) float32) string {
		switch reflect.ValueOf(f).Pointer() {
		case reflect.ValueOf(dotQ4Kx8).Pointer():
			return "dotQ4Kx8"
		case reflect.ValueOf(dotQ6KBsums).Pointer():
			return "dotQ6KBsums"
		case reflect.ValueOf(dotQK).Pointer():
			return "dotQK"
		}
		return "?"
	}
	cur, old := Options{}, Options{LlamaBuild: LlamaC392e50}
	for _, c := range []struct {
		o    Options
		a, b Tensor
		want string
	}{
		{cur, w(gguf.TypeQ4_K, 16, 1), f32, "dotQ4Kx8"},
		{cur, w(gguf.TypeQ4_K, 12, 1), f32, "dotQK"}, // ne1 % 8 != 0: not repacked
		{cur, w(gguf.TypeQ4_K, 16, 1), f16, "dotQK"}, // activations not F32
		{cur, w(gguf.TypeQ4_K, 16, 2), f32, "dotQK"}, // 3-D views are split per matrix first
		{old, w(gguf.TypeQ4_K, 16, 1), f32, "dotQK"}, // c392e50 repacks no K-quant
		{cur, w(gguf.TypeQ6_K, 16, 1), f32, "dotQ6KBsums"},
		{old, w(gguf.TypeQ6_K, 16, 1), f32, "dotQK"},
		{cur, w(gguf.TypeQ5_K, 16, 1), f32, "dotQK"},
		{cur, w(gguf.TypeQ2_K, 16, 1), f32, "dotQK"}, // q2_K_8x8 needs AVX-512
	} {
		if got := name(qkDot(c.o, c.a, c.b)); got != c.want {
			t.Errorf("%v %s[%d,%d] x %s: %s, want %s", c.o.LlamaBuild, c.a.Type, c.a.Ne[1], c.a.Ne[2], c.b.Type, got, c.want)
		}
		// The GEMM order exactly where the GEMV is q4_K_8x8's.
		if g := qkDotGemm(c.o, c.a, c.b); (g != nil) != (c.want == "dotQ4Kx8") {
			t.Errorf("%v %s[%d,%d] x %s: GEMM dot %v", c.o.LlamaBuild, c.a.Type, c.a.Ne[1], c.a.Ne[2], c.b.Type, g != nil)
		}
	}
}

// TestQKDotOrders compares the build-specific K-quant dots with the exact
// product of the dequantised row and the Q8_K activation (float64 sums):
// different float orders of the same integers, so within a few ulps of
// the magnitudes involved, on random blocks.
func TestQKDotOrders(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const k = 1024
	for _, c := range []struct {
		typ gguf.GGMLType
		dot func(*qkRow, q8Row) float32
	}{{gguf.TypeQ4_K, dotQ4Kx8}, {gguf.TypeQ4_K, dotQ4Kx8Gemm}, {gguf.TypeQ6_K, dotQ6KBsums}, {gguf.TypeQ4_K, dotQK}, {gguf.TypeQ6_K, dotQK}} {
		for trial := range 20 {
			ts := c.typ.TypeSize()
			raw := make([]byte, k/256*ts)
			for i := range raw {
				raw[i] = byte(rng.UintN(256))
			}
			for s := range k / 256 {
				b := raw[s*ts : (s+1)*ts]
				d := gguf.F32ToF16(float32(rng.Float64()*0.01 + 1e-4))
				if c.typ == gguf.TypeQ4_K {
					binary.LittleEndian.PutUint16(b, d)
					binary.LittleEndian.PutUint16(b[2:], gguf.F32ToF16(float32(rng.Float64()*0.01)))
				} else {
					binary.LittleEndian.PutUint16(b[208:], d)
				}
			}
			x := make([]float32, k)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			row := newQKRow(k)
			unpackQK(c.typ, raw, row)
			y := q8Row{qs: make([]int8, k), d: make([]float32, k/256), bsums: make([]int32, k/16)}
			quantizeQ8_K(x, y.qs, y.d, y.bsums)
			w := make([]float32, k)
			if err := gguf.Dequantize(c.typ, raw, w); err != nil {
				t.Fatal(err)
			}
			var exact, mag float64
			for i := range w {
				p := float64(w[i]) * float64(y.qs[i]) * float64(y.d[i/256])
				exact += p
				mag += math.Abs(p)
			}
			got := float64(c.dot(row, y))
			if math.Abs(got-exact) > 1e-5*mag {
				t.Errorf("%s trial %d: %g, exact %g (Σ|p| %g)", c.typ, trial, got, exact, mag)
			}
		}
	}
}
