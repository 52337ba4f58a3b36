package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/floatbits"
)

// Each assembly kernel against its pure-Go twin: identical bits on random
// and edge inputs (NaN, ±Inf, subnormals, max-scale blocks, odd lengths,
// slices that start at odd addresses). NaN results count as equal when
// both are NaN: x86 propagates the payload of one operand, and which one
// depends on operand order, not on the arithmetic reproduced here.

func needSIMD(t *testing.T) {
	t.Helper()
	if !useAVX2 {
		t.Skip("no assembly kernels in this build (other architecture, -tags purego, or no AVX2/FMA/F16C)")
	}
}

// randF32 and sameBits are the shared helpers under the names this
// package's tests use: n normal values times a scale, and equal bits or
// both NaN.
var (
	randF32  = floatbits.Rand
	sameBits = floatbits.Same
)

// edgeF32 are the special values mixed into the activation tests.
var edgeF32 = []float32{
	0, float32(math.Copysign(0, -1)), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
	1e-40, -1e-45, math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32, 65504, 1e-8, 127, -128,
}

// edgeF16 are F16 block scales mixed into the weight tests: zero, the
// smallest subnormal, a subnormal, the largest finite, ±Inf, NaN.
var edgeF16 = []uint16{0x0000, 0x8000, 0x0001, 0x03ff, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00}

// activationCases returns rows of n values: random at several scales and
// rows with edge values at random positions.
func activationCases(r *rand.Rand, n int) [][]float32 {
	var rows [][]float32
	for _, s := range []float32{1, 1e-3, 1e4} {
		rows = append(rows, randF32(r, n, s))
	}
	for _, e := range edgeF32 {
		x := randF32(r, n, 1)
		for range 3 {
			x[r.IntN(n)] = e
		}
		rows = append(rows, x)
		y := make([]float32, n)
		for i := range y {
			if r.IntN(4) == 0 {
				y[i] = e
			}
		}
		rows = append(rows, y)
	}
	return rows
}

// offsetF32 copies x into a larger buffer at an odd element offset (so it
// is not 32-byte aligned).
func offsetF32(x []float32) []float32 {
	buf := make([]float32, len(x)+3)
	copy(buf[1:], x)
	return buf[1 : 1+len(x)]
}

func TestSIMDQuantizeQ8_0(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(3, 4))
	for _, nb := range []int{1, 2, 7, 28} {
		for ci, x := range activationCases(r, nb*32) {
			x = offsetF32(x)
			q1, q2 := make([]int8, nb*32), make([]int8, nb*32)
			d1, d2 := make([]float32, nb), make([]float32, nb)
			n1 := quantizeQ8_0AVX2(&x[0], &q1[0], &d1[0], nb)
			n2 := quantizeQ8_0Go(x, q2, d2)
			if n1 != n2 {
				t.Errorf("nb %d case %d: neg %v, Go %v", nb, ci, n1, n2)
			}
			for i := range q1 {
				if q1[i] != q2[i] {
					t.Fatalf("nb %d case %d: q[%d] = %d, Go %d (x = %g)", nb, ci, i, q1[i], q2[i], x[i])
				}
			}
			for i := range d1 {
				if !sameBits(d1[i], d2[i]) {
					t.Fatalf("nb %d case %d: d[%d] = %g, Go %g", nb, ci, i, d1[i], d2[i])
				}
			}
		}
	}
}

// randQ8Weights returns nb Q8_0 blocks with random values (including
// -128) and random or edge F16 scales, at an odd byte offset.
func randQ8Weights(r *rand.Rand, nb int, edge bool) []byte {
	buf := make([]byte, nb*34+3)
	w := buf[1 : 1+nb*34]
	for b := range nb {
		h := uint16(0x2000 + r.IntN(0x1800)) // about 2^-7 .. 2^-1
		if edge && r.IntN(3) == 0 {
			h = edgeF16[r.IntN(len(edgeF16))]
		}
		binary.LittleEndian.PutUint16(w[b*34:], h)
		for j := range 32 {
			w[b*34+2+j] = byte(r.IntN(256))
		}
	}
	return w
}

func randQ4Weights(r *rand.Rand, nb int, edge bool) []byte {
	buf := make([]byte, nb*18+5)
	w := buf[3 : 3+nb*18]
	for b := range nb {
		h := uint16(0x2000 + r.IntN(0x1800))
		if edge && r.IntN(3) == 0 {
			h = edgeF16[r.IntN(len(edgeF16))]
		}
		binary.LittleEndian.PutUint16(w[b*18:], h)
		for j := range 16 {
			w[b*18+2+j] = byte(r.IntN(256))
		}
	}
	return w
}

// quantCases quantises activation cases to Q8_0 rows (with their -128
// flags and block sums).
func quantCases(r *rand.Rand, nb int) []q8Row {
	var rows []q8Row
	for _, x := range activationCases(r, nb*32) {
		c := q8Row{qs: make([]int8, nb*32), d: make([]float32, nb), sum: make([]int32, nb)}
		c.neg = quantizeQ8_0Go(x, c.qs, c.d)
		blockSums32(c.qs, c.sum)
		rows = append(rows, c)
	}
	// Extreme values straight in: every -128 / 127 pattern.
	for _, v := range []int8{-128, 127} {
		c := q8Row{qs: make([]int8, nb*32), d: make([]float32, nb), sum: make([]int32, nb)}
		for i := range c.qs {
			c.qs[i] = v
			if r.IntN(2) == 0 {
				c.qs[i] = int8(r.IntN(256))
			}
			c.neg = c.neg || c.qs[i] == -128
		}
		for i := range c.d {
			c.d[i] = gguf.F16ToF32(uint16(0x2000 + r.IntN(0x1800)))
		}
		blockSums32(c.qs, c.sum)
		rows = append(rows, c)
	}
	return rows
}

func TestSIMDDotQ8_0(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(5, 6))
	for _, nb := range []int{1, 3, 28} {
		cols := quantCases(r, nb)
		for _, edge := range []bool{false, true} {
			w := randQ8Weights(r, nb, edge)
			for ci, c := range cols {
				// The assembly always runs ggml's sign trick; the twin
				// emulates it when the activations hold -128.
				got := dotQ8_0RawAVX2(&w[0], &c.qs[0], &c.d[0], nb)
				want := dotQ8_0RawGo(w, c.qs, c.d, c.neg)
				if !sameBits(got, want) {
					t.Errorf("nb %d edge %v col %d: %g (%#x), Go %g (%#x)", nb, edge, ci, got, math.Float32bits(got), want, math.Float32bits(want))
				}
				if u := unpackQ8(w, nb); !c.neg && !sameBits(u(c), want) {
					t.Errorf("nb %d col %d: unpacked %g, raw %g", nb, ci, u(c), want)
				}
			}
			for ci := 0; ci+4 <= len(cols); ci++ {
				c4 := [4]q8Row{cols[ci], cols[(ci+1)%len(cols)], cols[(ci+5)%len(cols)], cols[(ci+7)%len(cols)]}
				var got [4]float32
				ptrs := [4]*int8{&c4[0].qs[0], &c4[1].qs[0], &c4[2].qs[0], &c4[3].qs[0]}
				ds := [4]*float32{&c4[0].d[0], &c4[1].d[0], &c4[2].d[0], &c4[3].d[0]}
				dotQ8_0Rawx4AVX2(&w[0], &ptrs, &ds, nb, &got)
				for i := range c4 {
					if want := dotQ8_0RawGo(w, c4[i].qs, c4[i].d, c4[i].neg); !sameBits(got[i], want) {
						t.Errorf("x4 nb %d col %d+%d: %g, Go %g", nb, ci, i, got[i], want)
					}
				}
			}
		}
	}
}

// TestSIMDDotQ8_0x2x4 checks the two-row Q8_0 tile (prefill) against the
// twin per element: random and edge weight blocks (-128 values, edge
// scales), every activation case (those holding -128 take the fallback),
// odd addresses.
func TestSIMDDotQ8_0x2x4(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(27, 28))
	for _, nb := range []int{1, 3, 8, 28} {
		cols := quantCases(r, nb)
		for _, edge := range []bool{false, true} {
			w0, w1 := randQ8Weights(r, nb, edge), randQ8Weights(r, nb, !edge)
			for ci := range cols {
				c4 := [4]q8Row{cols[ci], cols[(ci+1)%len(cols)], cols[(ci+5)%len(cols)], cols[(ci+7)%len(cols)]}
				dc := offsetF32(make([]float32, 4*nb))
				for b := range nb {
					for c := range 4 {
						dc[4*b+c] = c4[c].d[b]
					}
				}
				var got [8]float32
				dotQ8_0x2x4(w0, w1, &c4, dc, &got)
				outs := map[string][8]float32{"wrapper": got}
				if !c4[0].neg && !c4[1].neg && !c4[2].neg && !c4[3].neg {
					// Both assembly kernels, whichever the wrapper takes.
					ptrs := [4]*int8{&c4[0].qs[0], &c4[1].qs[0], &c4[2].qs[0], &c4[3].qs[0]}
					var o [8]float32
					dotQ8_0x2x4AVX2(&w0[0], &w1[0], &ptrs, &dc[0], nb, &o)
					outs["avx2"] = o
					if useVNNI {
						dotQ8_0x2x4VNNI(&w0[0], &w1[0], &ptrs, &dc[0], nb, &o)
						outs["vnni"] = o
					}
				}
				for name, got := range outs {
					for i := range got {
						c := c4[i%4]
						want := dotQ8_0RawGo([2][]byte{w0, w1}[i/4], c.qs, c.d, c.neg)
						if !sameBits(got[i], want) {
							t.Errorf("%s nb %d edge %v cols %d out %d: %g (%#x), Go %g (%#x)", name, nb, edge, ci, i, got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
						}
					}
				}
			}
		}
	}
}

// TestSIMDDotQ8_0x2x4Rows checks the many-pairs Q8_0 prefill tile
// (q8x2x4.rows) against dotQ8_0RawGo per output element: rows at a
// stride with gaps, random and edge weight blocks, every activation case
// (those holding -128 take the Go loop), one to four pairs, output columns
// at an offset with their neighbours left alone.
func TestSIMDDotQ8_0x2x4Rows(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	for _, nb := range []int{1, 2, 3, 28} {
		cols := quantCases(r, nb)
		for _, np := range []int{1, 4} {
			stride := nb*34 + 5
			src := make([]byte, 2*np*stride+1)[1:]
			for j := range 2 * np {
				copy(src[j*stride:], randQ8Weights(r, nb, j%3 == 1))
			}
			for ci := range cols {
				c4 := [4]q8Row{cols[ci], cols[(ci+1)%len(cols)], cols[(ci+5)%len(cols)], cols[(ci+7)%len(cols)]}
				dc := offsetF32(make([]float32, 4*nb))
				for b := range nb {
					for c := range 4 {
						dc[4*b+c] = c4[c].d[b]
					}
				}
				const i, sentinel = 1, float32(-7)
				var d [4][]float32
				for c := range d {
					d[c] = offsetF32(make([]float32, i+2*np+1))
					for j := range d[c] {
						d[c][j] = sentinel
					}
				}
				q := newQ8x2x4(&c4, dc)
				q.rows(src, stride, np, &d, i)
				for c := range d {
					for j, got := range d[c] {
						want := sentinel
						if row := j - i; row >= 0 && row < 2*np {
							want = dotQ8_0RawGo(src[row*stride:], c4[c].qs, c4[c].d, c4[c].neg)
						}
						if !sameBits(got, want) {
							t.Errorf("nb %d np %d cols %d col %d out %d: %g (%#x), want %g (%#x)", nb, np, ci, c, j, got, math.Float32bits(got), want, math.Float32bits(want))
						}
					}
				}
			}
		}
	}
}

// TestSIMDDotQ8_0Rows checks the many-rows Q8_0 kernel (decode tiles)
// against the twin row by row, rows at a stride with gaps, odd addresses.
func TestSIMDDotQ8_0Rows(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, nb := range []int{1, 3, 8, 28} {
		cols := quantCases(r, nb)
		for _, nr := range []int{1, 5, 64} {
			for _, edge := range []bool{false, true} {
				stride := nb*34 + 7
				rows := make([]byte, nr*stride+1)[1:]
				for j := range nr {
					copy(rows[j*stride:], randQ8Weights(r, nb, edge))
				}
				for ci, c := range cols {
					got := offsetF32(make([]float32, nr))
					if useAVX2 && !c.neg {
						dotQ8_0RowsAVX2(&rows[0], stride, &c.qs[0], &c.d[0], nb, nr, &got[0])
						for j := range nr {
							if want := dotQ8_0RawGo(rows[j*stride:], c.qs, c.d, c.neg); !sameBits(got[j], want) {
								t.Errorf("asm nb %d nr %d edge %v col %d row %d: %g, Go %g", nb, nr, edge, ci, j, got[j], want)
							}
						}
					}
					clear(got)
					dotQ8_0Rows(rows, stride, nr, c, got)
					for j := range nr {
						if want := dotQ8_0RawGo(rows[j*stride:], c.qs, c.d, c.neg); !sameBits(got[j], want) {
							t.Errorf("dispatch nb %d nr %d col %d row %d: %g, Go %g", nb, nr, ci, j, got[j], want)
						}
					}
				}
			}
		}
	}
}

// unpackQ8 returns the unpacked-row dot (the tile path) of Q8_0 weights.
func unpackQ8(w []byte, nb int) func(c q8Row) float32 {
	q, d := make([]int8, nb*32), make([]float32, nb)
	unpackQ8_0(w, q, d)
	return func(c q8Row) float32 { return dotQ8_0(q, d, c.qs, c.d, c.neg) }
}

func TestSIMDDotQ4_0(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(7, 8))
	for _, nb := range []int{1, 3, 28} {
		cols := quantCases(r, nb)
		for _, edge := range []bool{false, true} {
			w := randQ4Weights(r, nb, edge)
			for ci, c := range cols {
				got := dotQ4_0RawAVX2(&w[0], &c.qs[0], &c.d[0], nb)
				want := dotQ4_0RawGo(w, c.qs, c.d, c.neg)
				if !sameBits(got, want) {
					t.Errorf("nb %d edge %v col %d: %g, Go %g", nb, edge, ci, got, want)
				}
			}
		}
	}
}

func TestSIMDDotQ4_0x8(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(9, 10))
	for _, nb := range []int{1, 2, 28} {
		cols := quantCases(r, nb)
		for _, gap := range []int{0, 5} {
			for _, edge := range []bool{false, true} {
				stride := nb*18 + gap
				rows := make([]byte, 8*stride+1)[1:]
				for j := range 8 {
					copy(rows[j*stride:], randQ4Weights(r, nb, edge))
				}
				for ci, c := range cols {
					var got, want [8]float32
					dotQ4_0x8Go(rows, stride, c.qs, c.d, c.neg, &want)
					if !c.neg {
						// The assembly sums nibble·y - 8·sum(y), equal to
						// the exact products but not to the sign trick.
						dotQ4_0x8AVX2(&rows[0], stride, &c.qs[0], &c.d[0], &c.sum[0], nb, &got)
						for j := range got {
							if !sameBits(got[j], want[j]) {
								t.Errorf("nb %d gap %d edge %v col %d row %d: %g, Go %g", nb, gap, edge, ci, j, got[j], want[j])
							}
						}
					}
					// Through the dispatcher, which routes -128 to the twin.
					dotQ4_0x8(rows, stride, c, &got)
					if got != want && !nanSame8(got, want) {
						t.Errorf("dispatch nb %d col %d: %v, Go %v", nb, ci, got, want)
					}
				}
				var ok []q8Row
				for _, c := range cols {
					if !c.neg {
						ok = append(ok, c)
					}
				}
				packed := make([]byte, nb*packedQ4Block+1)[1:]
				packQ4_0x8(packed, rows, stride, nb)
				for ci := 0; ci+4 <= len(ok); ci += 2 {
					c4 := [4]q8Row{ok[ci], ok[ci+1], ok[ci+2], ok[ci+3]}
					var got, gp [4][8]float32
					dotQ4_0x8x4(rows, stride, &c4, &got)
					gemmQ4_0x8Packed(packed, &c4, &gp)
					for i := range c4 {
						if !nanSame8(got[i], gp[i]) {
							t.Errorf("packed nb %d gap %d col %d+%d: %v, unpacked %v", nb, gap, ci, i, gp[i], got[i])
						}
					}
					for i := range c4 {
						var want [8]float32
						dotQ4_0x8Go(rows, stride, c4[i].qs, c4[i].d, false, &want)
						if !nanSame8(got[i], want) {
							t.Errorf("x4 nb %d gap %d col %d+%d: %v, Go %v", nb, gap, ci, i, got[i], want)
						}
					}
				}
			}
		}
	}
}

func nanSame8(a, b [8]float32) bool {
	for i := range a {
		if !sameBits(a[i], b[i]) {
			return false
		}
	}
	return true
}

func TestSIMDDotF16(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{1, 7, 8, 9, 16, 31, 32, 33, 40, 64, 95, 896, 4864 + 7} {
		for ci, bv := range activationCases(r, n) {
			for i := range bv {
				bv[i] = roundF16(bv[i])
			}
			bv = offsetF32(bv)
			wv := randF32(r, n, 0.1)
			if ci%3 == 1 {
				for range 4 {
					wv[r.IntN(n)] = edgeF32[r.IntN(len(edgeF32))]
				}
			}
			wt, err := FromF16(wv, int64(n))
			if err != nil {
				t.Fatal(err)
			}
			a := append(make([]byte, 1, 2*n+1), wt.Data...)[1:]
			got, want := dotVecF16Raw(a, bv), dotVecF16RawGo(a, bv)
			if !sameBits(got, want) {
				t.Errorf("n %d case %d: %g, Go %g", n, ci, got, want)
			}
			// tinyBLAS order, four columns.
			aw := make([]float32, n)
			for i := range aw {
				aw[i] = f16tab()[binary.LittleEndian.Uint16(a[2*i:])]
			}
			b1, b2, b3 := offsetF32(bv[1:]), randF16Row(r, n), randF16Row(r, n)
			b1 = append(b1, 0.5)
			g0, g1, g2, g3 := dotF32x4(aw, bv, b1, b2, b3)
			w0, w1, w2, w3 := dotF32x4Go(aw, bv, b1, b2, b3)
			for i, p := range [][2]float32{{g0, w0}, {g1, w1}, {g2, w2}, {g3, w3}} {
				if !sameBits(p[0], p[1]) {
					t.Errorf("x4 n %d case %d col %d: %g, Go %g", n, ci, i, p[0], p[1])
				}
			}
		}
	}
}

func randF16Row(r *rand.Rand, n int) []float32 {
	v := randF32(r, n, 1)
	for i := range v {
		v[i] = roundF16(v[i])
	}
	return v
}

// TestSIMDMatMulSame runs whole matmuls through the dispatching kernels and
// through the Go twins alone (useAVX2 cannot be switched off at run time,
// so the twins are called through a purego-like path: quantizing and
// multiplying column by column) and requires the same bits.
func TestSIMDMatMulSame(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(13, 14))
	for _, ty := range []gguf.GGMLType{gguf.TypeQ8_0, gguf.TypeQ4_0} {
		// Odd row counts and column counts around the four-column tiles.
		for _, sh := range [][3]int64{{64, 16, 1}, {96, 24, 5}, {64, 12, 3}, {256, 40, 9}, {64, 13, 8}, {96, 7, 4}, {32, 5, 6}} {
			k, m, n := sh[0], sh[1], sh[2]
			t.Run(fmt.Sprintf("%s_%dx%dx%d", ty, k, m, n), func(t *testing.T) {
				wv := randF32(r, int(k*m), 0.1)
				var q []byte
				var err error
				if ty == gguf.TypeQ8_0 {
					q, err = gguf.QuantizeQ8_0(wv)
				} else {
					q, err = gguf.QuantizeQ4_0(wv)
				}
				if err != nil {
					t.Fatal(err)
				}
				a, err := FromBytes(ty, q, k, m)
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
					c := q8Row{qs: make([]int8, k), d: make([]float32, k/32), sum: make([]int32, k/32)}
					c.neg = quantizeQ8_0Go(xv[j*int(k):(j+1)*int(k)], c.qs, c.d)
					for i := 0; i < int(m); i++ {
						var want float32
						switch {
						case ty == gguf.TypeQ8_0:
							want = dotQ8_0RawGo(a.Data[i*rowBytes:], c.qs, c.d, c.neg)
						case m%8 == 0:
							var o [8]float32
							dotQ4_0x8Go(a.Data[(i&^7)*rowBytes:], rowBytes, c.qs, c.d, c.neg, &o)
							want = o[i&7]
						default:
							want = dotQ4_0RawGo(a.Data[i*rowBytes:], c.qs, c.d, c.neg)
						}
						if g := got[j*int(m)+i]; !sameBits(g, want) {
							t.Fatalf("[%d,%d] = %g, Go twin %g", i, j, g, want)
						}
					}
				}
			})
		}
	}
}

func TestSIMDSilu(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(15, 16))
	for _, n := range []int{8, 13, 64, 4864 + 5} {
		cases := activationCases(r, n)
		// Large arguments take vexpf's special path (|n| > 126, > 192).
		big := randF32(r, n, 100)
		for i := range big {
			if i%3 == 0 {
				big[i] *= 3
			}
		}
		cases = append(cases, big, randF32(r, n, 1e-30))
		for ci, x := range cases {
			x = offsetF32(x)
			got, want := make([]float32, n), make([]float32, n)
			siluRow(got, x)
			siluRowGo(want, x)
			for i := range got {
				if !sameBits(got[i], want[i]) {
					t.Fatalf("n %d case %d: silu(%g) = %g, Go %g", n, ci, x[i], got[i], want[i])
				}
			}
			// in place
			y := append([]float32(nil), x...)
			siluRow(y, y)
			for i := range y {
				if !sameBits(y[i], want[i]) {
					t.Fatalf("n %d case %d: in place silu(%g) = %g, Go %g", n, ci, x[i], y[i], want[i])
				}
			}
		}
	}
}

func TestSIMDF16Rows(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(17, 18))
	for _, n := range []int{8, 17, 896, 4864 + 3} {
		raw := make([]byte, 2*n+1)[1:]
		for i := range raw {
			raw[i] = byte(r.IntN(256))
		}
		for i := range 8 { // every special class of half
			binary.LittleEndian.PutUint16(raw[2*r.IntN(n):], edgeF16[i])
		}
		got := make([]float32, n)
		f16ToF32AVX2(&got[0], &raw[0], n&^7)
		tab := f16tab()
		for i := range n &^ 7 {
			if want := tab[binary.LittleEndian.Uint16(raw[2*i:])]; !sameBits(got[i], want) {
				t.Fatalf("n %d: half %#x -> %g, table %g", n, binary.LittleEndian.Uint16(raw[2*i:]), got[i], want)
			}
		}
		// dotF16x4 against dotF16F32 (tinyBLAS order) per column, on
		// finite halves.
		for i := range n {
			binary.LittleEndian.PutUint16(raw[2*i:], uint16(r.IntN(0x7800)))
		}
		cols := [4][]float32{randF16Row(r, n), offsetF32(randF16Row(r, n)), randF16Row(r, n), randF16Row(r, n)}
		var o [4]float32
		dotF16x4(raw, cols[0], cols[1], cols[2], cols[3], &o)
		for c := range cols {
			if want := dotF16F32(raw, cols[c]); !sameBits(o[c], want) {
				t.Errorf("n %d col %d: %g, Go %g", n, c, o[c], want)
			}
		}
		raw2 := make([]byte, 2*n)
		for i := range n {
			binary.LittleEndian.PutUint16(raw2[2*i:], uint16(r.IntN(0x7800))|0x8000)
		}
		var o8 [8]float32
		dotF16x2x4(raw, raw2, cols[0], cols[1], cols[2], cols[3], &o8)
		for c := range 8 {
			row := [2][]byte{raw, raw2}[c/4]
			if want := dotF16F32(row, cols[c%4]); !sameBits(o8[c], want) {
				t.Errorf("2x4 n %d out %d: %g, Go %g", n, c, o8[c], want)
			}
		}
	}
}

func TestSIMDSoftmaxExp(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(19, 20))
	for _, n := range []int{8, 13, 64, 257} {
		cases := activationCases(r, n)
		masked := randF32(r, n, 3)
		for i := range masked {
			if i%3 == 0 {
				masked[i] = negInf32
			}
		}
		cases = append(cases, masked, randF32(r, n, 200))
		for ci, x := range cases {
			for _, mx := range []float32{0, 3.5, -2, float32(math.Inf(1))} {
				a, b := offsetF32(x), append([]float32(nil), x...)
				sa, sb := softmaxExpSum(a, mx), softmaxExpSumGo(b, mx)
				if math.Float64bits(sa) != math.Float64bits(sb) && !(sa != sa && sb != sb) {
					t.Fatalf("n %d case %d mx %g: sum %g, Go %g", n, ci, mx, sa, sb)
				}
				for i := range a {
					if !sameBits(a[i], b[i]) {
						t.Fatalf("n %d case %d mx %g: exp(%g) = %g, Go %g", n, ci, mx, x[i]-mx, a[i], b[i])
					}
				}
			}
		}
	}
}

func TestSIMDF16Round(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(21, 22))
	for _, n := range []int{8, 21, 4864 + 7} {
		for ci, x := range append(activationCases(r, n), randF32(r, n, 7e4), randF32(r, n, 6e-8)) {
			x = offsetF32(x)
			got := append([]float32(nil), x...)
			roundF16Row(got)
			h := make([]byte, 2*n+1)[1:]
			f32ToF16Row(h, x)
			for i, v := range x {
				want := roundF16(v)
				if !sameBits(got[i], want) {
					t.Fatalf("n %d case %d: round(%g) = %g, Go %g", n, ci, v, got[i], want)
				}
				hw := gguf.F32ToF16(v)
				if hg := binary.LittleEndian.Uint16(h[2*i:]); hg != hw {
					t.Fatalf("n %d case %d: F16(%g) = %#x, gguf %#x", n, ci, v, hg, hw)
				}
			}
		}
	}
}

func TestSIMDQKLanes(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(23, 24))
	for _, ty := range []gguf.GGMLType{gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K} {
		for _, nsb := range []int{1, 3} {
			k := 256 * nsb
			raw := make([]byte, nsb*ty.TypeSize())
			for i := range raw {
				raw[i] = byte(r.IntN(256))
			}
			row := newQKRow(k)
			unpackQK(ty, raw, row)
			for ci, x := range activationCases(r, k) {
				c := q8Row{qs: make([]int8, k), d: make([]float32, nsb), bsums: make([]int32, k/16)}
				quantizeQ8_K(x, c.qs, c.d, c.bsums)
				lanes := make([]int32, 8*nsb)
				qkLanesAVX2(&row.q[0], &c.qs[0], &row.sc[0], nsb, ty == gguf.TypeQ3_K || ty == gguf.TypeQ6_K, &lanes[0])
				for s := range nsb {
					if want := qkLanesGo(row, c, s); [8]int32(lanes[8*s:8*s+8]) != want {
						t.Fatalf("%s nsb %d case %d sb %d: lanes %v, Go %v", ty, nsb, ci, s, lanes[8*s:8*s+8], want)
					}
				}
			}
		}
	}
}

// TestSIMDDotVec checks dotVec (dotVecF32AVX2 and the Go tail) against
// dotVecGo: F32 operands with fused lanes, and F16-rounded operands, on
// lengths below 32, not multiples of 8 and long rows, with edge values in
// either operand and slices that start off 32-byte alignment.
func TestSIMDDotVec(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(21, 22))
	for _, n := range []int{1, 7, 8, 31, 32, 33, 39, 64, 95, 100, 288, 896, 4864 + 7} {
		as := activationCases(r, n)
		bs := activationCases(r, n)
		for ci := range as {
			for _, f16 := range []bool{false, true} {
				a, b := offsetF32(as[ci]), bs[(ci*7)%len(bs)]
				if ci%2 == 1 {
					b = offsetF32(b)
				}
				if f16 {
					a, b = append([]float32(nil), a...), append([]float32(nil), b...)
					for i := range a {
						a[i], b[i] = roundF16(a[i]), roundF16(b[i])
					}
				}
				got, want := dotVec(a, b, f16), dotVecGo(a, b, f16)
				if !sameBits(got, want) {
					t.Errorf("n %d case %d f16 %v: %g (%#x), Go %g (%#x)", n, ci, f16, got, math.Float32bits(got), want, math.Float32bits(want))
				}
				// b may be longer than a.
				bl := append(append([]float32(nil), b...), 3)
				if got, want := dotVec(a, bl, f16), dotVecGo(a, bl, f16); !sameBits(got, want) {
					t.Errorf("n %d case %d f16 %v long b: %g, Go %g", n, ci, f16, got, want)
				}
			}
		}
	}
}

// TestSIMDDotF32FMA checks tinyBLAS's fused F32 lanes (dotF32FMA,
// dotF32x4FMA: assembly for the first len&^7 products, the tail in Go)
// against their twins on the same kinds of inputs as TestSIMDDotVec.
func TestSIMDDotF32FMA(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(23, 24))
	for _, n := range []int{1, 7, 8, 9, 31, 33, 64, 95, 896 + 5} {
		as := activationCases(r, n)
		bs := activationCases(r, n)
		for ci := range as {
			a := offsetF32(as[ci])
			b := [4][]float32{bs[(ci*7)%len(bs)], offsetF32(bs[(ci*5+1)%len(bs)]), randF32(r, n, 1), bs[ci]}
			b[2] = append(b[2], 2) // a longer column
			got, want := dotF32FMA(a, b[0]), dotF32FMAGo(a, b[0])
			if !sameBits(got, want) {
				t.Errorf("n %d case %d: %g (%#x), Go %g (%#x)", n, ci, got, math.Float32bits(got), want, math.Float32bits(want))
			}
			g0, g1, g2, g3 := dotF32x4FMA(a, b[0], b[1], b[2], b[3])
			w0, w1, w2, w3 := dotF32x4FMAGo(a, b[0], b[1], b[2], b[3])
			for i, p := range [][2]float32{{g0, w0}, {g1, w1}, {g2, w2}, {g3, w3}} {
				if !sameBits(p[0], p[1]) {
					t.Errorf("x4 n %d case %d col %d: %g, Go %g", n, ci, i, p[0], p[1])
				}
			}
			// Three rows: a, an edge case and a random row.
			a1, a2 := as[(ci+3)%len(as)], offsetF32(randF32(r, n, 1e-2))
			var g12, w12 [12]float32
			dotF32x3x4FMA(a, a1, a2, b[0], b[1], b[2], b[3], &g12)
			dotF32x3x4FMAGo(a, a1, a2, b[0], b[1], b[2], b[3], &w12)
			for i := range g12 {
				if !sameBits(g12[i], w12[i]) {
					t.Errorf("3x4 n %d case %d out %d: %g (%#x), Go %g (%#x)", n, ci, i, g12[i], math.Float32bits(g12[i]), w12[i], math.Float32bits(w12[i]))
				}
			}
			for rr, row := range [3][]float32{a, a1, a2} {
				for c := range 4 {
					if want := dotF32FMAGo(row, b[c]); !sameBits(w12[4*rr+c], want) {
						t.Errorf("3x4 twin n %d case %d row %d col %d: %g, dotF32FMAGo %g", n, ci, rr, c, w12[4*rr+c], want)
					}
				}
			}
		}
	}
}

// TestSIMDDotF32x3x4FMARows checks the many-triples F16 prefill tile
// against dotF32FMAGo per output element: rows of edge values (NaN, Inf,
// subnormal, zero) and random rows, one to five triples, output columns
// at an offset with their neighbours left alone, odd addresses.
func TestSIMDDotF32x3x4FMARows(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, k := range []int{8, 16, 40, 896} {
		cases := activationCases(r, k)
		for _, nt := range []int{1, 2, 5} {
			a := offsetF32(make([]float32, 3*nt*k))
			for row := range 3 * nt {
				src := cases[(row*5+nt)%len(cases)]
				if row%2 == 1 {
					src = randF32(r, k, 1e-2)
				}
				copy(a[row*k:], src)
			}
			b := [4][]float32{offsetF32(cases[(nt+1)%len(cases)]), randF32(r, k, 1), cases[(nt+3)%len(cases)], randF32(r, k+3, 1)}
			const i, sentinel = 3, float32(-7)
			var d [4][]float32
			for c := range d {
				d[c] = offsetF32(make([]float32, i+3*nt+2))
				for j := range d[c] {
					d[c][j] = sentinel
				}
			}
			dotF32x3x4FMARows(a, k, nt, &b, &d, i)
			for c := range d {
				for j, got := range d[c] {
					want := sentinel
					if row := j - i; row >= 0 && row < 3*nt {
						want = dotF32FMAGo(a[row*k:(row+1)*k], b[c][:k])
					}
					if !sameBits(got, want) {
						t.Errorf("k %d nt %d col %d out %d: %g (%#x), want %g (%#x)", k, nt, c, j, got, math.Float32bits(got), want, math.Float32bits(want))
					}
				}
			}
		}
	}
}

// TestSIMDDotQ4_0x8i checks the interleaved Q4_0 layout: the repacked
// rows' Go twin against dotQ4_0x8Go on the original rows, the assembly
// against the twin (several groups, odd addresses), and the prefill
// packing from the interleaved copy against packQ4_0x8 from the rows.
func TestSIMDDotQ4_0x8i(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, nb := range []int{1, 2, 5, 28} {
		cols := quantCases(r, nb)
		for _, ng := range []int{1, 2, 3, 4} {
			for _, edge := range []bool{false, true} {
				stride := nb*18 + 3
				rows := make([]byte, 8*ng*stride+1)[1:]
				for j := range 8 * ng {
					copy(rows[j*stride:], randQ4Weights(r, nb, edge))
				}
				pk := make([]byte, ng*nb*q4x8iBlock+1)[1:]
				repackQ4_0x8i(pk, rows, stride, 8*ng, nb)
				pkFast := make([]byte, ng*nb*q4x8iBlock)
				repackQ4_0x8iFast(pkFast, rows, stride, 8*ng, nb)
				for i := range pk {
					if pk[i] != pkFast[i] {
						t.Fatalf("repack nb %d ng %d: byte %d = %#x, Go %#x", nb, ng, i, pkFast[i], pk[i])
					}
				}
				for ci, c := range cols {
					want := make([]float32, 8*ng)
					for g := range ng {
						var o [8]float32
						dotQ4_0x8Go(rows[8*g*stride:], stride, c.qs, c.d, c.neg, &o)
						copy(want[8*g:], o[:])
					}
					got := offsetF32(make([]float32, 8*ng))
					dotQ4_0x8iGo(pk, ng, c.qs, c.d, c.neg, got)
					for i := range got {
						if !sameBits(got[i], want[i]) {
							t.Fatalf("Go nb %d ng %d edge %v col %d row %d: %g, raw rows %g", nb, ng, edge, ci, i, got[i], want[i])
						}
					}
					if !useAVX2 {
						continue
					}
					if !c.neg {
						clear(got)
						dotQ4_0x8iAVX2(&pk[0], &c.qs[0], &c.d[0], &c.sum[0], nb, ng, &got[0])
						for i := range got {
							if !sameBits(got[i], want[i]) {
								t.Errorf("asm nb %d ng %d edge %v col %d row %d: %g, Go %g", nb, ng, edge, ci, i, got[i], want[i])
							}
						}
					}
					clear(got)
					dotQ4_0x8i(pk, ng, c, got)
					for i := range got {
						if !sameBits(got[i], want[i]) {
							t.Errorf("dispatch nb %d ng %d col %d row %d: %g, Go %g", nb, ng, ci, i, got[i], want[i])
						}
					}
				}
				if !useAVX2 {
					continue
				}
				for g := range ng {
					p1 := make([]byte, nb*packedQ4Block+1)[1:]
					p2 := make([]byte, nb*packedQ4Block)
					packQ4_0x8(p1, rows[8*g*stride:], stride, nb)
					packQ4_0x8i(p2, pk[g*nb*q4x8iBlock:], nb)
					for i := range p1 {
						if p1[i] != p2[i] {
							t.Fatalf("pack nb %d group %d: byte %d = %#x, from rows %#x", nb, g, i, p2[i], p1[i])
						}
					}
				}
			}
		}
	}
}

// TestSIMDMatMulTiles checks the prefill register tiles (F16: 3 rows x 4
// columns of widened rows, or 6 x 4 with AVX-512; Q8_0: 2 x 4, or 4 x 4)
// through MulMat against the twins
// per element: row counts that leave partial tiles, column counts around
// 4, and batched operands (b's batches broadcast over a's, n columns per
// batch not a multiple of 4).
func TestSIMDMatMulTiles(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(29, 30))
	for _, ty := range []gguf.GGMLType{gguf.TypeF16, gguf.TypeQ8_0} {
		for _, sh := range [][5]int64{{64, 3, 4, 1, 1}, {96, 7, 5, 1, 1}, {256, 13, 8, 1, 1}, {32, 64, 9, 1, 1}, {64, 5, 5, 2, 4}, {96, 6, 4, 2, 2}, {128, 96, 6, 2, 4}, {64, 100, 12, 1, 1}, {64, 200, 7, 1, 1}} {
			k, m, n, na, nbt := sh[0], sh[1], sh[2], sh[3], sh[4]
			t.Run(fmt.Sprintf("%s_%dx%dx%d_%d_%d", ty, k, m, n, na, nbt), func(t *testing.T) {
				wv := randF32(r, int(k*m*na), 0.1)
				var a Tensor
				var err error
				if ty == gguf.TypeF16 {
					a, err = FromF16(wv, k, m, na)
				} else {
					var q []byte
					if q, err = gguf.QuantizeQ8_0(wv); err == nil {
						a, err = FromBytes(ty, q, k, m, na)
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				xv := randF32(r, int(k*n*nbt), 1)
				x, _ := FromF32(xv, k, n, nbt)
				dst, _ := NewTensor(gguf.TypeF32, m, n, nbt)
				if err := MulMat(dst, a, x); err != nil {
					t.Fatal(err)
				}
				got := vals(t, dst)
				rowBytes, batchBytes := int(a.Nb[1]), int(a.Nb[2])
				for j := range int(n * nbt) {
					col := xv[j*int(k) : (j+1)*int(k)]
					ab := j / int(n) / int(nbt/na)
					for i := range int(m) {
						row := a.Data[ab*batchBytes+i*rowBytes:]
						var want float32
						if ty == gguf.TypeF16 {
							rc := append([]float32(nil), col...)
							for e := range rc {
								rc[e] = roundF16(rc[e])
							}
							want = dotF16F32(row, rc)
						} else {
							c := q8Row{qs: make([]int8, k), d: make([]float32, k/32)}
							c.neg = quantizeQ8_0Go(col, c.qs, c.d)
							want = dotQ8_0RawGo(row, c.qs, c.d, c.neg)
						}
						if g := got[j*int(m)+i]; !sameBits(g, want) {
							t.Fatalf("[%d,%d] = %g, twin %g", i, j, g, want)
						}
					}
				}
			})
		}
	}
}

// TestSIMDMatVecF16 checks the many-row F16 decode kernels against the
// twin row by row: the dispatching matVecF16 and the assembly kernel
// itself, on row counts that are and are not multiples of 2, rows at a stride with gaps, odd
// addresses, edge values, lengths with and without leftover products.
func TestSIMDMatVecF16(t *testing.T) {
	needSIMD(t)
	type kernel struct {
		name string
		fn   func(a []byte, stride int, b, out []float32)
	}
	ks := []kernel{{"matVecF16", matVecF16}, {"avx2", func(a []byte, stride int, b, out []float32) {
		matVecF16AVX2(&a[0], stride, len(out), &b[0], len(b), &out[0])
	}}, {"avx2-rows1", func(a []byte, stride int, b, out []float32) {
		matVecF16R1AVX2(&a[0], stride, len(out), &b[0], len(b), &out[0])
	}}}
	r := rand.New(rand.NewPCG(31, 32))
	for _, n := range []int{32, 64, 96, 96 + 7, 160, 896, 4864} {
		for _, rows := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 13} {
			stride := 2*n + 6
			buf := make([]byte, rows*stride+1)
			a := buf[1:]
			for i := range rows * stride / 2 {
				h := uint16(r.IntN(0x7c00)) | uint16(r.IntN(2))<<15
				if r.IntN(50) == 0 {
					h = edgeF16[r.IntN(len(edgeF16))]
				}
				binary.LittleEndian.PutUint16(a[2*i:], h)
			}
			for ci, b := range activationCases(r, n) {
				for i := range b {
					b[i] = roundF16(b[i])
				}
				b = offsetF32(b)
				for _, k := range ks {
					if k.name != "matVecF16" && n%32 != 0 {
						continue // the assembly kernels take whole steps of 32
					}
					out := make([]float32, rows)
					k.fn(a, stride, b, out)
					for i := range rows {
						if want := dotVecF16RawGo(a[i*stride:i*stride+2*n], b); !sameBits(out[i], want) {
							t.Errorf("%s: n %d rows %d case %d row %d: %g (%#x), Go %g (%#x)", k.name, n, rows, ci, i, out[i], math.Float32bits(out[i]), want, math.Float32bits(want))
						}
					}
				}
			}
		}
	}
}
