package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMatVecF32 checks the many-row F32 product (one assembly call for
// all rows when the SIMD kernels are in use) against dotVecGo row by row:
// identical bits on random and edge rows (NaN, ±Inf, subnormals, max
// values), lengths below, at and above the 32-value blocks with every
// kind of tail, strided rows and an unaligned start.
func TestMatVecF32(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, n := range []int{1, 7, 8, 31, 32, 33, 63, 64, 95, 172, 288, 896 + 5} {
		rows := activationCases(r, n)
		bs := activationCases(r, n)
		for _, pad := range []int{0, 3} {
			stride := n + pad
			a := make([]float32, 1+len(rows)*stride)[1:] // odd start
			for i, row := range rows {
				copy(a[i*stride:], row)
			}
			for bi := range bs {
				b := bs[bi]
				if bi%2 == 1 {
					b = offsetF32(b)
				}
				out := make([]float32, len(rows))
				for i := range out {
					out[i] = float32(math.NaN())
				}
				matVecF32(a, stride, b, out)
				for i, row := range rows {
					want := dotVecGo(row, b, false)
					if !sameBits(out[i], want) {
						t.Fatalf("n %d stride %d b %d row %d: %g (%#x), Go %g (%#x)", n, stride, bi, i,
							out[i], math.Float32bits(out[i]), want, math.Float32bits(want))
					}
					if got := dotVec(row, b, false); !sameBits(got, want) {
						t.Fatalf("n %d b %d row %d: dotVec %g, Go %g", n, bi, i, got, want)
					}
				}
				// A single row and a prefix of the rows.
				one := []float32{0}
				matVecF32(a[stride:], stride, b, one)
				if want := dotVecGo(rows[1], b, false); !sameBits(one[0], want) {
					t.Fatalf("n %d b %d one row: %g, Go %g", n, bi, one[0], want)
				}
			}
		}
	}
}
