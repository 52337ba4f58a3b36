package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
)

// randLegacyWeights returns nb blocks of type t (Q5_0, Q4_1, Q5_1) with
// random bytes and random or edge F16 scales (and Q4_1/Q5_1 offsets), at
// an odd byte offset.
func randLegacyWeights(r *rand.Rand, t gguf.GGMLType, nb int, edge bool) []byte {
	bs := t.TypeSize()
	buf := make([]byte, nb*bs+3)
	w := buf[1 : 1+nb*bs]
	for i := range w {
		w[i] = byte(r.IntN(256))
	}
	for b := range nb {
		h := uint16(0x2000 + r.IntN(0x1800))
		if edge && r.IntN(3) == 0 {
			h = edgeF16[r.IntN(len(edgeF16))]
		}
		binary.LittleEndian.PutUint16(w[b*bs:], h)
		if t != gguf.TypeQ5_0 {
			m := uint16(0x2000+r.IntN(0x1800)) | uint16(r.IntN(2))<<15
			if edge && r.IntN(3) == 0 {
				m = edgeF16[r.IntN(len(edgeF16))]
			}
			binary.LittleEndian.PutUint16(w[b*bs+2:], m)
		}
		if edge && r.IntN(4) == 0 {
			// all-zero or all-one high bits and nibbles
			v := byte(0)
			if r.IntN(2) == 0 {
				v = 0xff
			}
			for i := 2; i < bs; i++ {
				if t != gguf.TypeQ5_0 && i < 4 {
					continue
				}
				w[b*bs+i] = v
			}
		}
	}
	return w
}

// legacyCases are quantCases with the Q8_1 sums of each row.
func legacyCases(r *rand.Rand, nb int) []q8Row {
	cols := quantCases(r, nb)
	tab := f16tab()
	for i := range cols {
		c := &cols[i]
		c.s = make([]float32, nb)
		for b := range c.s {
			// any F16 value: the kernels only multiply by it
			c.s[b] = tab[uint16(r.IntN(0x7c00))|uint16(r.IntN(2))<<15]
			if r.IntN(7) == 0 {
				c.s[b] = tab[edgeF16[r.IntN(len(edgeF16))]]
			}
		}
	}
	return cols
}

var legacyTypes = []gguf.GGMLType{gguf.TypeQ5_0, gguf.TypeQ4_1, gguf.TypeQ5_1}

// TestLegacyTwin checks the Q5_0 twin against unpackQ5_0 + dotQ8_0 (the
// Q4_1/Q5_1 twin, dotQx1Raw, is checked against exact products by
// TestQ8_1Dots).
func TestLegacyTwin(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, nb := range []int{1, 3, 28} {
		cols := legacyCases(r, nb)
		for _, edge := range []bool{false, true} {
			w := randLegacyWeights(r, gguf.TypeQ5_0, nb, edge)
			q, d := make([]int8, nb*32), make([]float32, nb)
			unpackQ5_0(w, q, d)
			for ci, c := range cols {
				got := dotQ5_0RawGo(w, c.qs, c.d, c.neg)
				if want := dotQ8_0(q, d, c.qs, c.d, c.neg); !sameBits(got, want) {
					t.Errorf("q5_0 nb %d edge %v col %d: %g, unpacked %g", nb, edge, ci, got, want)
				}
			}
		}
	}
}

// TestSIMDLegacy compares the assembly kernels with their Go twins bit for
// bit: decode (several rows per call, at a stride) and prefill (four
// columns), on random and edge blocks and activation rows.
func TestSIMDLegacy(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	for _, typ := range legacyTypes {
		bs := typ.TypeSize()
		for _, nb := range []int{1, 3, 8, 28} {
			cols := legacyCases(r, nb)
			for _, nr := range []int{1, 5, 16} {
				for _, edge := range []bool{false, true} {
					stride := nb*bs + 5
					rows := make([]byte, nr*stride+1)[1:]
					for j := range nr {
						copy(rows[j*stride:], randLegacyWeights(r, typ, nb, edge))
					}
					for ci, c := range cols {
						got := offsetF32(make([]float32, nr))
						dotLegacyRows(typ, rows, stride, nr, c, got)
						for j := range nr {
							if want := dotLegacyGo(typ, rows[j*stride:], c); !sameBits(got[j], want) {
								t.Errorf("%s rows nb %d nr %d edge %v col %d row %d: %g, Go %g", typ, nb, nr, edge, ci, j, got[j], want)
							}
						}
					}
					for ci := 0; ci+4 <= len(cols); ci += 3 {
						c4 := [4]q8Row{cols[ci], cols[ci+1], cols[ci+2], cols[ci+3]}
						for j := range nr {
							var o [4]float32
							dotLegacyx4(typ, rows[j*stride:], &c4, &o)
							for c := range o {
								if want := dotLegacyGo(typ, rows[j*stride:], c4[c]); !sameBits(o[c], want) {
									t.Errorf("%s x4 nb %d edge %v cols %d+%d row %d: %g, Go %g", typ, nb, edge, ci, c, j, o[c], want)
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestLegacyMulMat runs MulMat (QuantGGML) on weights of each legacy type
// with 1..12 activation columns (decode rows, four-column tiles of odd and
// even row counts and their leftovers), random and edge weights (zero,
// subnormal, huge, Inf and NaN scales; all-zero and all-one bits), and
// activations of which one column holds an Inf (its Q8_0 values -128:
// the twin's path) in the largest shapes, and compares every element with
// the Go twin on the activations quantised by the Go quantiser.
func TestLegacyMulMat(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	for _, typ := range legacyTypes {
		for _, sh := range [][4]int64{{64, 16, 1, 0}, {96, 24, 5, 0}, {256, 40, 9, 0}, {32, 7, 4, 0},
			{96, 23, 12, 1}, {256, 130, 8, 1}, {64, 9, 7, 1}} {
			k, m, n, edge := sh[0], sh[1], sh[2], sh[3] == 1
			t.Run(fmt.Sprintf("%s_%dx%dx%d_edge%v", typ, k, m, n, edge), func(t *testing.T) {
				w := randLegacyWeights(r, typ, int(k/32*m), edge)
				a, err := FromBytes(typ, w, k, m)
				if err != nil {
					t.Fatal(err)
				}
				xv := randF32(r, int(k*n), 1)
				if edge {
					xv[5*int(k)+3] = float32(math.Inf(1))
				}
				x, _ := FromF32(xv, k, n)
				dst, _ := NewTensor(gguf.TypeF32, m, n)
				if err := MulMat(dst, a, x); err != nil {
					t.Fatal(err)
				}
				got := vals(t, dst)
				rowBytes := int(a.Nb[1])
				for j := range int(n) {
					xj := xv[j*int(k) : (j+1)*int(k)]
					c := q8Row{qs: make([]int8, k), d: make([]float32, k/32), s: make([]float32, k/32)}
					c.neg = quantizeQ8_0Go(xj, c.qs, c.d)
					q8_1Sums(xj, c.qs, c.s)
					for i := range int(m) {
						want := dotLegacyGo(typ, a.Data[i*rowBytes:], c)
						if g := got[j*int(m)+i]; !sameBits(g, want) {
							t.Fatalf("[%d,%d] = %g, Go twin %g", i, j, g, want)
						}
					}
				}
			})
		}
	}
}

// TestQ5_0ToQ8_0 checks the Q5_0 rows expanded to Q8_0 blocks (the prefill
// tiles' copy) against unpackQ5_0, on random and edge blocks.
func TestQ5_0ToQ8_0(t *testing.T) {
	r := rand.New(rand.NewPCG(47, 48))
	for _, edge := range []bool{false, true} {
		const nb = 37
		w := randLegacyWeights(r, gguf.TypeQ5_0, nb, edge)
		got := make([]byte, nb*34)
		q5_0ToQ8_0(w, got, nb)
		qs, d := make([]int8, nb*32), make([]float32, nb)
		unpackQ5_0(w, qs, d)
		tab := f16tab()
		for b := range nb {
			if h := binary.LittleEndian.Uint16(got[34*b:]); !sameBits(tab[h], d[b]) {
				t.Fatalf("edge %v block %d: d %g, want %g", edge, b, tab[h], d[b])
			}
			for i := range 32 {
				if g := int8(got[34*b+2+i]); g != qs[32*b+i] {
					t.Fatalf("edge %v block %d value %d: %d, want %d", edge, b, i, g, qs[32*b+i])
				}
			}
		}
	}
}
