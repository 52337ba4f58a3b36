package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
)

// randIQ4Weights returns nb blocks of IQ4_NL or IQ4_XS with random bytes
// and random or edge F16 scales, at an odd byte offset.
func randIQ4Weights(r *rand.Rand, t gguf.GGMLType, nb int, edge bool) []byte {
	bs := t.TypeSize()
	buf := make([]byte, nb*bs+3)
	w := buf[1 : 1+nb*bs]
	for i := range w {
		w[i] = byte(r.IntN(256))
	}
	for b := range nb {
		h := uint16(0x1000 + r.IntN(0x1000))
		if edge && r.IntN(3) == 0 {
			h = edgeF16[r.IntN(len(edgeF16))]
		}
		binary.LittleEndian.PutUint16(w[b*bs:], h)
	}
	return w
}

// TestIQ4Dots compares the IQ4 dot products (both IQ4_NL orders, IQ4_XS)
// with the exact product of the dequantised row and the quantised
// activations (float64 sums), on random blocks.
func TestIQ4Dots(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	for _, typ := range []gguf.GGMLType{gguf.TypeIQ4_NL, gguf.TypeIQ4_XS} {
		for _, k := range []int{256, 768} {
			for trial := range 10 {
				const rows = 8
				w := randIQ4Weights(r, typ, rows*k/typ.BlockSize(), false)
				rowBytes := k / typ.BlockSize() * typ.TypeSize()
				x := randF32(r, k, 1)
				c := q8Row{qs: make([]int8, k)}
				if typ == gguf.TypeIQ4_NL {
					c.d = make([]float32, k/32)
					c.neg = quantizeQ8_0Go(x, c.qs, c.d)
				} else {
					c.d, c.bsums = make([]float32, k/256), make([]int32, k/16)
					quantizeQ8_K(x, c.qs, c.d, c.bsums)
				}
				var x8 [8]float32
				if typ == gguf.TypeIQ4_NL {
					dotIQ4NLx8Go(w, rowBytes, c.qs, c.d, c.neg, x8[:])
				}
				for j := range rows {
					deq := make([]float32, k)
					if err := gguf.Dequantize(typ, w[j*rowBytes:], deq); err != nil {
						t.Fatal(err)
					}
					bsz := 32
					if typ == gguf.TypeIQ4_XS {
						bsz = 256
					}
					var exact, mag float64
					for i, v := range deq {
						p := float64(v) * float64(c.qs[i]) * float64(c.d[i/bsz])
						exact += p
						mag += math.Abs(p)
					}
					got := []float64{}
					if typ == gguf.TypeIQ4_NL {
						got = append(got, float64(x8[j]), float64(dotIQ4NLVecGo(w[j*rowBytes:], c)))
					} else {
						got = append(got, float64(dotIQ4XSGo(w[j*rowBytes:], c)))
					}
					for gi, g := range got {
						if math.Abs(g-exact) > 1e-5*mag {
							t.Errorf("%s k %d trial %d row %d dot %d: %g, exact %g", typ, k, trial, j, gi, g, exact)
						}
					}
				}
			}
		}
	}
}

// TestSIMDIQ4NLx8 compares dotIQ4NLx8AVX2 with its Go twin bit for bit on
// random and edge blocks and activation rows.
func TestSIMDIQ4NLx8(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(53, 54))
	for _, nb := range []int{1, 3, 28} {
		cols := quantCases(r, nb)
		for _, edge := range []bool{false, true} {
			stride := nb*18 + 3
			rows := make([]byte, 8*stride+1)[1:]
			for j := range 8 {
				copy(rows[j*stride:], randIQ4Weights(r, gguf.TypeIQ4_NL, nb, edge))
			}
			for ci, c := range cols {
				if c.neg {
					continue // the Go twin runs for these
				}
				got := offsetF32(make([]float32, 8))
				dotIQ4NLx8AVX2(&rows[0], stride, &c.qs[0], &c.d[0], nb, &got[0])
				want := make([]float32, 8)
				dotIQ4NLx8Go(rows, stride, c.qs, c.d, c.neg, want)
				for j := range 8 {
					if !sameBits(got[j], want[j]) {
						t.Errorf("nb %d edge %v col %d row %d: %g, Go %g", nb, edge, ci, j, got[j], want[j])
					}
				}
			}
		}
	}
}

// TestIQ4MulMat runs MulMat (QuantGGML) on IQ4_NL (rows a multiple of 8:
// the repacked order; 7 rows: vec_dot's) and IQ4_XS weights with 1..5
// columns and compares every element with the Go twin.
func TestIQ4MulMat(t *testing.T) {
	r := rand.New(rand.NewPCG(55, 56))
	for _, c := range []struct {
		typ     gguf.GGMLType
		k, m, n int64
	}{{gguf.TypeIQ4_NL, 96, 16, 1}, {gguf.TypeIQ4_NL, 256, 40, 5}, {gguf.TypeIQ4_NL, 96, 7, 3},
		{gguf.TypeIQ4_XS, 256, 8, 1}, {gguf.TypeIQ4_XS, 512, 13, 5}} {
		t.Run(fmt.Sprintf("%s_%dx%dx%d", c.typ, c.k, c.m, c.n), func(t *testing.T) {
			k, m, n := c.k, c.m, c.n
			w := randIQ4Weights(r, c.typ, int(k/int64(c.typ.BlockSize())*m), false)
			a, err := FromBytes(c.typ, w, k, m)
			if err != nil {
				t.Fatal(err)
			}
			xv := randF32(r, int(k*n), 1)
			x, _ := FromF32(xv, k, n)
			dst, _ := NewTensor(gguf.TypeF32, m, n)
			if err := MulMat(dst, a, x); err != nil {
				t.Fatal(err)
			}
			got := vals(t, dst)
			rowBytes := int(a.Nb[1])
			for j := range int(n) {
				xj := xv[j*int(k) : (j+1)*int(k)]
				q := q8Row{qs: make([]int8, k)}
				if c.typ == gguf.TypeIQ4_NL {
					q.d = make([]float32, k/32)
					q.neg = quantizeQ8_0Go(xj, q.qs, q.d)
				} else {
					q.d, q.bsums = make([]float32, k/256), make([]int32, k/16)
					quantizeQ8_K(xj, q.qs, q.d, q.bsums)
				}
				for i := range int(m) {
					var want float32
					switch {
					case c.typ == gguf.TypeIQ4_XS:
						want = dotIQ4XSGo(a.Data[i*rowBytes:], q)
					case m%8 == 0:
						o := make([]float32, 8)
						dotIQ4NLx8Go(a.Data[(i&^7)*rowBytes:], rowBytes, q.qs, q.d, q.neg, o)
						want = o[i&7]
					default:
						want = dotIQ4NLVecGo(a.Data[i*rowBytes:], q)
					}
					if g := got[j*int(m)+i]; !sameBits(g, want) {
						t.Fatalf("[%d,%d] = %g, Go twin %g", i, j, g, want)
					}
				}
			}
		})
	}
}

// TestSIMDIQ4XS compares dotIQ4XSRowsAVX2 with dotIQ4XSGo bit for bit on
// random and edge blocks and activation rows.
func TestSIMDIQ4XS(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(57, 58))
	for _, nb := range []int{1, 2, 5} {
		k := nb * 256
		var cols []q8Row
		for _, x := range activationCases(r, k) {
			c := q8Row{qs: make([]int8, k), d: make([]float32, nb), bsums: make([]int32, nb*16)}
			quantizeQ8_K(x, c.qs, c.d, c.bsums)
			cols = append(cols, c)
		}
		c := q8Row{qs: make([]int8, k), d: make([]float32, nb), bsums: make([]int32, nb*16)}
		for i := range c.qs {
			c.qs[i] = int8(r.IntN(256)) // -128 included: the sign trick's product
		}
		for i := range c.d {
			c.d[i] = gguf.F16ToF32(uint16(0x2000 + r.IntN(0x1800)))
		}
		cols = append(cols, c)
		for _, nr := range []int{1, 3, 8} {
			for _, edge := range []bool{false, true} {
				stride := nb*136 + 5
				rows := make([]byte, nr*stride+1)[1:]
				for j := range nr {
					copy(rows[j*stride:], randIQ4Weights(r, gguf.TypeIQ4_XS, nb, edge))
				}
				for ci, c := range cols {
					got := offsetF32(make([]float32, nr))
					dotIQ4XSRowsAVX2(&rows[0], stride, &c.qs[0], &c.d[0], nb, nr, &got[0])
					for j := range nr {
						if want := dotIQ4XSGo(rows[j*stride:], c); !sameBits(got[j], want) {
							t.Errorf("nb %d nr %d edge %v col %d row %d: %g, Go %g", nb, nr, edge, ci, j, got[j], want)
						}
					}
				}
			}
		}
	}
}
