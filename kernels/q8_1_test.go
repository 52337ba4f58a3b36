package kernels

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
)

// TestQ8_1Dots compares the Q4_1/Q5_1 integer dots with the exact product
// of the dequantised row and the Q8_1 activation (float64 sums), and a
// QuantGGML MulMat with them, on random blocks.
func TestQ8_1Dots(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const k = 256
	for _, c := range []struct {
		typ gguf.GGMLType
		dot func([]byte, q8Row) float32
	}{{gguf.TypeQ4_1, dotQ4_1Raw}, {gguf.TypeQ5_1, dotQ5_1Raw}} {
		bs := c.typ.TypeSize()
		for trial := range 20 {
			raw := make([]byte, k/32*bs)
			for i := range raw {
				raw[i] = byte(rng.UintN(256))
			}
			for b := range k / 32 {
				d, m := gguf.F32ToF16(float32(rng.Float64()*0.1+1e-3)), gguf.F32ToF16(float32(rng.NormFloat64()*0.1))
				raw[b*bs], raw[b*bs+1], raw[b*bs+2], raw[b*bs+3] = byte(d), byte(d>>8), byte(m), byte(m>>8)
			}
			x := make([]float32, k)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			y := q8Row{qs: make([]int8, k), d: make([]float32, k/32), s: make([]float32, k/32)}
			quantizeQ8_0(x, y.qs, y.d)
			q8_1Sums(x, y.qs, y.s)
			w := make([]float32, k)
			if err := gguf.Dequantize(c.typ, raw, w); err != nil {
				t.Fatal(err)
			}
			var exact, mag float64
			for i := range w {
				p := float64(w[i]) * float64(y.qs[i]) * float64(y.d[i/32])
				exact += p
				mag += math.Abs(p)
			}
			// s is d·Σq rounded to F16: allow its rounding on the offsets.
			var offs float64
			for b := range y.s {
				offs += math.Abs(float64(y.s[b])) * 1e-3
			}
			got := float64(c.dot(raw, y))
			if math.Abs(got-exact) > 1e-5*mag+offs {
				t.Errorf("%s trial %d: %g, exact %g", c.typ, trial, got, exact)
			}
		}
	}
}
