package kernels

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
)

// randK23Weights returns nb super-blocks of Q2_K or Q3_K with random bytes
// and random or edge F16 scales (d, and Q2_K's dmin).
func randK23Weights(r *rand.Rand, t gguf.GGMLType, nb int, edge bool) []byte {
	bs := t.TypeSize()
	buf := make([]byte, nb*bs+3)
	w := buf[1 : 1+nb*bs]
	for i := range w {
		w[i] = byte(r.IntN(256))
	}
	for b := range nb {
		offs := []int{108}
		if t == gguf.TypeQ2_K {
			offs = []int{80, 82}
		}
		for _, o := range offs {
			h := uint16(0x1000 + r.IntN(0x1800))
			if edge && r.IntN(3) == 0 {
				h = edgeF16[r.IntN(len(edgeF16))]
			}
			binary.LittleEndian.PutUint16(w[b*bs+o:], h)
		}
	}
	return w
}

// TestSIMDK23 compares the Q2_K/Q3_K kernels (rows read from their blocks)
// with dotQK on unpackQK's rows bit for bit, on random and edge blocks and
// activation rows.
func TestSIMDK23(t *testing.T) {
	needSIMD(t)
	r := rand.New(rand.NewPCG(61, 62))
	for _, typ := range []gguf.GGMLType{gguf.TypeQ2_K, gguf.TypeQ3_K} {
		for _, nb := range []int{1, 2, 7} {
			k := nb * 256
			var cols []q8Row
			for _, x := range activationCases(r, k) {
				c := q8Row{qs: make([]int8, k), d: make([]float32, nb), bsums: make([]int32, nb*16)}
				quantizeQ8_K(x, c.qs, c.d, c.bsums)
				cols = append(cols, c)
			}
			// extreme activations straight in
			c := q8Row{qs: make([]int8, k), d: make([]float32, nb), bsums: make([]int32, nb*16)}
			for i := range c.qs {
				c.qs[i] = int8(127 - 254*r.IntN(2))
			}
			for i := range c.d {
				c.d[i] = gguf.F16ToF32(uint16(0x2000 + r.IntN(0x1800)))
			}
			for g := range c.bsums {
				for _, v := range c.qs[16*g : 16*g+16] {
					c.bsums[g] += int32(v)
				}
			}
			cols = append(cols, c)
			for _, nr := range []int{1, 3, 8} {
				for _, edge := range []bool{false, true} {
					stride := nb*typ.TypeSize() + 3
					rows := make([]byte, nr*stride+1)[1:]
					for j := range nr {
						copy(rows[j*stride:], randK23Weights(r, typ, nb, edge))
					}
					qr := newQKRow(k)
					for ci, c := range cols {
						got := offsetF32(make([]float32, nr))
						dotK23Rows(typ, rows, stride, nr, c, got)
						for j := range nr {
							unpackQK(typ, rows[j*stride:], qr)
							if want := dotQK(qr, c); !sameBits(got[j], want) {
								t.Errorf("%s nb %d nr %d edge %v col %d row %d: %g, dotQK %g", typ, nb, nr, edge, ci, j, got[j], want)
							}
						}
					}
				}
			}
		}
	}
}
