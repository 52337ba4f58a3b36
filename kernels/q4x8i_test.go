package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
)

// runJobSerial runs every phase of j in chunks on one worker.
func runJobSerial(j Job) {
	for p := range j.Phases() {
		n, chunk := j.Size(p)
		for lo := 0; lo < n; lo += chunk {
			j.Run(p, 0, lo, min(n, lo+chunk))
		}
	}
}

// TestMulMatJobPacks runs Q4_0 matmul jobs that read the interleaved copy
// (Options.Packs) against plain MulMat, which reads the rows in place:
// decode (1–3 columns), the GEMM (4+ columns), activations that quantise
// to -128 (NaN), and a destination that is not dense along dim 0.
func TestMulMatJobPacks(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	packs := NewWeightPacks()
	for _, sh := range [][3]int64{{64, 16, 1}, {96, 24, 3}, {256, 40, 4}, {64, 64, 9}, {64, 1048, 2}} {
		k, m, n := sh[0], sh[1], sh[2]
		for _, nan := range []bool{false, true} {
			for _, strided := range []bool{false, true} {
				t.Run(fmt.Sprintf("%dx%dx%d_nan%v_strided%v", k, m, n, nan, strided), func(t *testing.T) {
					q, err := gguf.QuantizeQ4_0(randF32(r, int(k*m), 0.1))
					if err != nil {
						t.Fatal(err)
					}
					a, err := FromBytes(gguf.TypeQ4_0, q, k, m)
					if err != nil {
						t.Fatal(err)
					}
					xv := randF32(r, int(k*n), 1)
					if nan {
						xv[int(k*(n-1))+5] = float32(math.NaN())
					}
					x, _ := FromF32(xv, k, n)
					want, _ := NewTensor(gguf.TypeF32, m, n)
					if err := MulMat(want, a, x); err != nil {
						t.Fatal(err)
					}
					dst, _ := NewTensor(gguf.TypeF32, m, n)
					got := dst
					if strided {
						// dst[i, j] at element j + n·i: dim 0 is not dense.
						got, err = dst.View([4]int64{m, n, 1, 1}, [4]int64{4 * n, 4, 4 * n * m, 4 * n * m}, 0)
						if err != nil {
							t.Fatal(err)
						}
					}
					j, err := Options{Packs: packs}.MulMatJob(got, a, x, nil, 1)
					if err != nil {
						t.Fatal(err)
					}
					runJobSerial(j)
					wv := vals(t, want)
					gv := vals(t, dst)
					for i := range m {
						for c := range n {
							g := gv[c*m+i]
							if strided {
								g = gv[i*n+c]
							}
							if w := wv[c*m+i]; !sameBits(g, w) {
								t.Fatalf("[%d,%d] = %g, in place %g", i, c, g, w)
							}
						}
					}
				})
			}
		}
	}
	if useAVX2 && packs.Bytes() == 0 {
		t.Errorf("packs hold no bytes: the jobs did not use the interleaved copy")
	}
	if !useAVX2 && packs.Bytes() != 0 {
		t.Errorf("packs hold %d bytes without the assembly kernels", packs.Bytes())
	}
}

// TestMulMatJobQ8_0Decode runs Q8_0 matmul jobs with few columns (the
// decode path: a tile's rows in one kernel call) into dense and strided
// destinations against the Go twin, element by element.
func TestMulMatJobQ8_0Decode(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 28))
	for _, sh := range [][3]int64{{64, 16, 1}, {96, 200, 3}, {256, 70, 2}} {
		k, m, n := sh[0], sh[1], sh[2]
		for _, strided := range []bool{false, true} {
			q, err := gguf.QuantizeQ8_0(randF32(r, int(k*m), 0.1))
			if err != nil {
				t.Fatal(err)
			}
			a, _ := FromBytes(gguf.TypeQ8_0, q, k, m)
			xv := randF32(r, int(k*n), 1)
			x, _ := FromF32(xv, k, n)
			dst, _ := NewTensor(gguf.TypeF32, m, n)
			got := dst
			if strided {
				got, err = dst.View([4]int64{m, n, 1, 1}, [4]int64{4 * n, 4, 4 * n * m, 4 * n * m}, 0)
				if err != nil {
					t.Fatal(err)
				}
			}
			j, err := Options{}.MulMatJob(got, a, x, nil, 1)
			if err != nil {
				t.Fatal(err)
			}
			runJobSerial(j)
			gv := vals(t, dst)
			for c := range n {
				cq := q8Row{qs: make([]int8, k), d: make([]float32, k/32)}
				cq.neg = quantizeQ8_0Go(xv[c*k:(c+1)*k], cq.qs, cq.d)
				for i := range m {
					g := gv[c*m+i]
					if strided {
						g = gv[i*n+c]
					}
					if w := dotQ8_0RawGo(a.Data[i*a.Nb[1]:], cq.qs, cq.d, cq.neg); !sameBits(g, w) {
						t.Fatalf("%dx%dx%d strided %v: [%d,%d] = %g, Go twin %g", k, m, n, strided, i, c, g, w)
					}
				}
			}
		}
	}
}
