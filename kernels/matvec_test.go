package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/irtool/irtool/gguf"
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

// TestF16Rows checks the many-row F16 widening against the F16 table
// (identical bits; NaN for NaN) on random halves and every special one
// (±0, subnormals, ±max, ±Inf, NaNs), with row strides and unaligned
// starts, for lengths with and without a multiple of 8.
func TestF16Rows(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	tab := f16tab()
	for _, n := range []int{1, 7, 8, 16, 24, 33} {
		for _, rows := range []int{1, 3, 32} {
			stride := 2*n + 2*r.IntN(3) + 1 // odd: unaligned rows
			src := make([]byte, 1+rows*stride)[1:]
			for i := range src {
				src[i] = byte(r.Uint32())
			}
			for i, h := range edgeF16 {
				o := (i % rows) * stride
				k := 2 * (i % n)
				src[o+k], src[o+k+1] = byte(h), byte(h>>8)
			}
			dst := make([]float32, rows*n)
			f16Rows(dst, src, stride, rows, n)
			for row := range rows {
				for i := range n {
					h := uint16(src[row*stride+2*i]) | uint16(src[row*stride+2*i+1])<<8
					if got, want := dst[row*n+i], tab[h]; !sameBits(got, want) {
						t.Fatalf("n %d rows %d [%d,%d] %#04x: %g, table %g", n, rows, row, i, h, got, want)
					}
				}
			}
		}
	}
}

// TestDotRows8F16 checks the unrolled head_dim-8 ggml_vec_dot_f16
// (float64 leftovers) against the plain loop, on F16-rounded random and
// edge rows and on halves of every magnitude (where the order of the
// float64 additions shows), including all-negative-zero products (the
// sum starts at +0).
func TestDotRows8F16(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	rows := activationCases(r, 8*16)
	// Halves from random bits (finite): products over 80 binades, where
	// the float64 sum depends on the order of the additions.
	for range 40 {
		x := make([]float32, 8*16)
		for i := range x {
			h := uint16(r.Uint32())
			if h&0x7c00 == 0x7c00 {
				h &^= 0x4000
			}
			x[i] = gguf.F16ToF32(h)
		}
		rows = append(rows, x)
	}
	// Huge and tiny products that cancel: (big + tiny) - big is 0, but
	// (big - big) + tiny is not.
	pick := []float32{65504, -65504, 0x1p-24, -0x1p-24, 1, -1, 65504, -65504}
	for range 40 {
		x := make([]float32, 8*16)
		for i := range x {
			x[i] = pick[r.IntN(len(pick))]
		}
		rows = append(rows, x)
	}
	for ci, a := range rows {
		q := append([]float32(nil), rows[(ci*3+1)%len(rows)][:8]...)
		if ci >= len(rows)-40 {
			q = append(q[:0], rows[len(rows)-1-(ci*7)%40][:8]...) // huge and tiny
		}
		a = append([]float32(nil), a...)
		for i := range a {
			a[i] = roundF16(a[i])
		}
		for i := range q {
			q[i] = roundF16(q[i])
		}
		if ci == 0 {
			for i := range 8 {
				a[i], q[i] = float32(math.Copysign(0, -1)), 1
			}
		}
		got := make([]float32, 16)
		dotRowsFor(gguf.TypeF16, true)(got, a, q)
		for j := range got {
			var sum float64
			for i := range 8 {
				sum += float64(a[j*8+i] * q[i])
			}
			if want := float32(sum); !sameBits(got[j], want) {
				t.Fatalf("case %d row %d: %g (%#x), loop %g (%#x)", ci, j, got[j], math.Float32bits(got[j]), want, math.Float32bits(want))
			}
		}
	}
}

// softmaxRowRef is softmaxRow's loop without the SIMD first passes.
func softmaxRowRef(w, m []float32, scale, slope float32) {
	for i := range w {
		w[i] *= scale
	}
	if m != nil {
		for i := range w {
			w[i] += slope * m[i]
		}
	}
	mx := float32(math.Inf(-1))
	for _, v := range w {
		mx = max(mx, v)
	}
	softmaxNorm(w, mx)
}

// TestSoftmaxRowFirstPasses checks softmaxRow (whose scale, mask and
// maximum passes run in softmaxScaleMaxAVX2 for rows of a multiple of 8)
// against softmaxRowRef: identical bits on random rows, rows with edge
// values (NaN, ±Inf, ±0, subnormals, max), all-masked rows, zero maxima
// and ALiBi slopes, with and without a mask.
func TestSoftmaxRowFirstPasses(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	negInf := float32(math.Inf(-1))
	for _, n := range []int{1, 7, 8, 16, 24, 32, 40, 256} {
		rows := activationCases(r, n)
		rows = append(rows, make([]float32, n)) // all zero: a zero maximum
		negz := make([]float32, n)
		for i := range negz {
			negz[i] = float32(math.Copysign(0, -1))
		}
		rows = append(rows, negz)
		masks := [][]float32{nil, make([]float32, n), make([]float32, n), make([]float32, n)}
		for i := range n {
			if i > n/3 {
				masks[2][i] = negInf // causal-style
			}
			masks[3][i] = negInf // everything masked
		}
		masks = append(masks, activationCases(r, n)[3:6]...)
		for ci, row := range rows {
			for mi, m := range masks {
				for _, p := range [][2]float32{{1, 1}, {0.125, 1}, {0.35355339, 0.5}, {-2, 3}} {
					got := append([]float32(nil), row...)
					want := append([]float32(nil), row...)
					softmaxRow(got, m, p[0], p[1])
					softmaxRowRef(want, m, p[0], p[1])
					for i := range got {
						if !sameBits(got[i], want[i]) {
							t.Fatalf("n %d row %d mask %d scale %g slope %g: [%d] %g (%#x), ref %g (%#x)",
								n, ci, mi, p[0], p[1], i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
						}
					}
				}
			}
		}
	}
}

// TestF16RowsT checks the transposed widening (8x8 register transposes
// for groups of 8 rows) against the F16 table, for row counts with and
// without a multiple of 8, strided unaligned rows and every kind of half.
func TestF16RowsT(t *testing.T) {
	r := rand.New(rand.NewPCG(49, 50))
	tab := f16tab()
	for _, n := range []int{1, 7, 8, 16, 64} {
		for _, rows := range []int{1, 5, 8, 13, 32, 40} {
			stride := 2*n + 2*r.IntN(3) + 1
			src := make([]byte, 1+rows*stride)[1:]
			for i := range src {
				src[i] = byte(r.Uint32())
			}
			for i, h := range edgeF16 {
				o := (i % rows) * stride
				k := 2 * (i % n)
				src[o+k], src[o+k+1] = byte(h), byte(h>>8)
			}
			for _, trLen := range []int{n, 3 * n} {
				dst := make([]float32, rows*n)
				f16RowsT(dst, src, stride, rows, n, make([]float32, trLen))
				for j := range rows {
					for i := range n {
						h := uint16(src[j*stride+2*i]) | uint16(src[j*stride+2*i+1])<<8
						if got, want := dst[i*rows+j], tab[h]; !sameBits(got, want) {
							t.Fatalf("n %d rows %d tr %d: value %d of row %d (%#04x): %g, table %g", n, rows, trLen, i, j, h, got, want)
						}
					}
				}
			}
		}
	}
}

// TestSoftmaxExpMaskedTail checks softmaxExpSum, which stores rather than
// evaluates trailing blocks of 8 masked (-Inf) entries, against its Go
// twin on causal-mask rows (every prefix length), fully masked rows and
// maxima that are finite, ±Inf or NaN: identical sums and values.
func TestSoftmaxExpMaskedTail(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	for _, n := range []int{8, 16, 32, 40, 64, 257} {
		for p := 0; p <= n; p += 1 + n/16 {
			x := randF32(r, n, 3)
			for i := p; i < n; i++ {
				x[i] = negInf32
			}
			if p > 2 {
				x[p/2] = negInf32 // a masked entry inside
			}
			for _, mx := range []float32{0, 3.5, -2, float32(math.Inf(1)), negInf32, float32(math.NaN())} {
				a, b := append([]float32(nil), x...), append([]float32(nil), x...)
				sa, sb := softmaxExpSum(a, mx), softmaxExpSumGo(b, mx)
				if math.Float64bits(sa) != math.Float64bits(sb) && !(sa != sa && sb != sb) {
					t.Fatalf("n %d prefix %d mx %g: sum %g, Go %g", n, p, mx, sa, sb)
				}
				for i := range a {
					if !sameBits(a[i], b[i]) {
						t.Fatalf("n %d prefix %d mx %g: [%d] %g, Go %g", n, p, mx, i, a[i], b[i])
					}
				}
			}
		}
	}
}

// TestMulMatVecPathStrided runs F32 matmuls that take the many-row
// matVecF32 path (one activation column per batch, or an inner dimension
// that is not a multiple of 8) on strided views with broadcast batches
// (r2 = 2, r3 = 1) and checks every element against dotVecGo of its row
// and column: the path reads rows in place at their strides and writes
// each dst column directly.
func TestMulMatVecPathStrided(t *testing.T) {
	r := rand.New(rand.NewPCG(53, 54))
	for _, c := range []struct{ k, m, n int64 }{{64, 8, 1}, {172, 13, 1}, {12, 9, 3}, {33, 40, 2}} {
		// a: [k, m, 2, 3] inside a larger buffer: row stride k+5 floats.
		rs := c.k + 5
		buf := randF32(r, int(rs*c.m*2*3+7), 1)
		base := f32t(t, buf, int64(len(buf)))
		a, err := base.View([MaxDims]int64{c.k, c.m, 2, 3}, [MaxDims]int64{4, 4 * rs, 4 * rs * c.m, 4 * rs * c.m * 2}, 4)
		if err != nil {
			t.Fatal(err)
		}
		b := f32t(t, randF32(r, int(c.k*c.n*4*3), 1), c.k, c.n, 4, 3)
		dst := f32t(t, make([]float32, c.m*c.n*4*3), c.m, c.n, 4, 3)
		if err := MulMat(dst, a, b); err != nil {
			t.Fatal(err)
		}
		got := vals(t, dst)
		av, bv := vals(t, clone(t, a)), vals(t, b)
		for i3 := range int64(3) {
			for i2 := range int64(4) {
				for j := range c.n {
					col := bv[((i3*4+i2)*c.n+j)*c.k:][:c.k]
					for i := range c.m {
						row := av[((i3*2+i2/2)*c.m+i)*c.k:][:c.k]
						want := dotVecGo(row, col, false)
						if g := got[((i3*4+i2)*c.n+j)*c.m+i]; !sameBits(g, want) {
							t.Fatalf("k %d m %d n %d: dst[%d,%d,%d,%d] = %g, dotVecGo %g", c.k, c.m, c.n, i, j, i2, i3, g, want)
						}
					}
				}
			}
		}
	}
}

// TestMulMatVecF16PathStrided is TestMulMatVecPathStrided for F16
// weights, read raw: matmuls whose products are ggml_vec_dot_f16's (one
// activation column per batch, or an inner dimension that is not a
// multiple of 8) on strided views with broadcast batches, through MulMat
// and through a job run in its own chunks (the rows of a chunk's tasks go
// to one matVecF16 call per column) and one task per chunk over two
// workers. Every element is checked
// against dotVecF16RawGo of its row's bytes and its column rounded to
// F16.
func TestMulMatVecF16PathStrided(t *testing.T) {
	r := rand.New(rand.NewPCG(55, 56))
	for _, c := range []struct{ k, m, n int64 }{{64, 8, 1}, {896, 37, 1}, {172, 13, 1}, {12, 9, 3}, {33, 40, 2}, {96, 130, 1}} {
		// a: [k, m, 2, 3] inside a larger buffer: row stride k+5 halves.
		rs := c.k + 5
		buf := randF32(r, int(rs*c.m*2*3+7), 1)
		base := f16t(t, buf, int64(len(buf)))
		a, err := base.View([MaxDims]int64{c.k, c.m, 2, 3}, [MaxDims]int64{2, 2 * rs, 2 * rs * c.m, 2 * rs * c.m * 2}, 2)
		if err != nil {
			t.Fatal(err)
		}
		b := f32t(t, randF32(r, int(c.k*c.n*4*3), 1), c.k, c.n, 4, 3)
		bv := vals(t, b)
		check := func(how string, dst Tensor) {
			t.Helper()
			got := vals(t, dst)
			for i3 := range int64(3) {
				for i2 := range int64(4) {
					for j := range c.n {
						col := append([]float32(nil), bv[((i3*4+i2)*c.n+j)*c.k:][:c.k]...)
						for e := range col {
							col[e] = roundF16(col[e])
						}
						for i := range c.m {
							off := 2 + 2*(((i3*2+i2/2)*c.m+i)*rs)
							want := dotVecF16RawGo(base.Data[off:off+2*c.k], col)
							if g := got[((i3*4+i2)*c.n+j)*c.m+i]; !sameBits(g, want) {
								t.Fatalf("%s: k %d m %d n %d: dst[%d,%d,%d,%d] = %g, dotVecF16RawGo %g", how, c.k, c.m, c.n, i, j, i2, i3, g, want)
							}
						}
					}
				}
			}
		}
		dst := f32t(t, make([]float32, c.m*c.n*4*3), c.m, c.n, 4, 3)
		if err := MulMat(dst, a, b); err != nil {
			t.Fatal(err)
		}
		check("MulMat", dst)
		for _, chunked := range []bool{false, true} {
			dst := f32t(t, make([]float32, c.m*c.n*4*3), c.m, c.n, 4, 3)
			j, err := Options{}.MulMatJob(dst, a, b, nil, 2)
			if err != nil {
				t.Fatal(err)
			}
			if chunked {
				runJobChunked(j, 2)
			} else {
				runJobSerial(j)
			}
			check(fmt.Sprintf("job (one task per chunk %v)", chunked), dst)
		}
	}
}
