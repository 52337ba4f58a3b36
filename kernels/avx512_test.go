package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAVX512DotF32x6x4 checks the six-row F16 prefill tile (dotF32x6x4FMA:
// the AVX-512 kernel where the CPU has it, its AVX2 and Go fallbacks
// otherwise) against dotF32FMAGo per output element: lengths with and
// without leftover products, edge values (activationCases: zeros, signed
// zeros, infinities, NaN, huge and tiny values), odd addresses.
func TestAVX512DotF32x6x4(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, n := range []int{1, 7, 8, 9, 16, 33, 64, 95, 896 + 5} {
		as := activationCases(r, n)
		bs := activationCases(r, n)
		for ci := range as {
			var a [6][]float32
			for e := range a {
				a[e] = as[(ci+e)%len(as)]
			}
			a[1] = offsetF32(a[1])
			a[4] = randF32(r, n, 1e-2)
			b := [4][]float32{bs[(ci*7)%len(bs)], offsetF32(bs[(ci*5+1)%len(bs)]), randF32(r, n, 1), bs[ci]}
			outs := map[string][24]float32{}
			var o [24]float32
			dotF32x6x4FMA(&a, &b, &o)
			outs["wrapper"] = o
			if n8 := n &^ 7; useAVX512 && n8 > 0 {
				// The kernel alone, leftover products added as the
				// wrapper adds them.
				var ap [6]*float32
				for e := range a {
					ap[e] = &a[e][0]
				}
				bp := [4]*float32{&b[0][0], &b[1][0], &b[2][0], &b[3][0]}
				dotF32x6x4FMAAVX512(&ap, &bp, n8, &o)
				for rr := range a {
					for c := range b {
						for i := n8; i < n; i++ {
							o[4*rr+c] = fma32(a[rr][i], b[c][i], o[4*rr+c])
						}
					}
				}
				outs["avx512"] = o
			}
			for name, got := range outs {
				for i, g := range got {
					want := dotF32FMAGo(a[i/4], b[i%4])
					if !sameBits(g, want) {
						t.Errorf("%s n %d case %d out %d: %g (%#x), Go %g (%#x)", name, n, ci, i, g, math.Float32bits(g), want, math.Float32bits(want))
					}
				}
			}
		}
	}
}

// TestAVX512DotQ8_0x4x4 checks the four-row Q8_0 prefill tile (q8x2x4.dot4:
// the AVX-512 VNNI kernel where the CPU has it, two two-row tiles
// otherwise) against dotQ8_0RawGo per output element: random and edge
// weight blocks (-128 values, edge scales), rows at a stride with gaps,
// odd addresses, every activation case (those holding -128 take the
// fallback), nb = 1 and more.
func TestAVX512DotQ8_0x4x4(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	for _, nb := range []int{1, 2, 3, 8, 28} {
		cols := quantCases(r, nb)
		for _, edge := range []bool{false, true} {
			stride := nb*34 + 5
			rows := make([]byte, 4*stride+1)[1:]
			for j := range 4 {
				copy(rows[j*stride:], randQ8Weights(r, nb, edge != (j%2 == 1)))
			}
			for ci := range cols {
				c4 := [4]q8Row{cols[ci], cols[(ci+1)%len(cols)], cols[(ci+5)%len(cols)], cols[(ci+7)%len(cols)]}
				dc := offsetF32(make([]float32, 4*nb))
				ns := make([]int32, 32*nb+1)[1:]
				for c := range 4 {
					for b := range nb {
						dc[4*b+c] = c4[c].d[b]
					}
					q8NegLaneSums(c4[c].qs, c, ns)
				}
				q := newQ8x2x4(&c4, dc)
				var got [16]float32
				q.dot4(rows, stride, ns, &got)
				for i, g := range got {
					c := c4[i%4]
					want := dotQ8_0RawGo(rows[i/4*stride:], c.qs, c.d, c.neg)
					if !sameBits(g, want) {
						t.Errorf("nb %d edge %v cols %d out %d (asm %v): %g (%#x), Go %g (%#x)", nb, edge, ci, i, useAVX512 && q.asm, g, math.Float32bits(g), want, math.Float32bits(want))
					}
				}
			}
		}
	}
}

// TestAVX512NegLaneSums checks the correction q8NegLaneSums writes
// against its definition, for every column slot of a group.
func TestAVX512NegLaneSums(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	for _, nb := range []int{1, 3} {
		for cc := range 4 {
			qs := make([]int8, 32*nb)
			for i := range qs {
				qs[i] = int8(r.IntN(256))
			}
			ns := make([]int32, 32*nb)
			q8NegLaneSums(qs, cc, ns)
			for b := range nb {
				for l := range 8 {
					var s int32
					for i := range 4 {
						s += int32(qs[32*b+4*l+i])
					}
					if got := ns[32*b+8*cc+l]; got != -128*s {
						t.Fatalf("nb %d slot %d block %d lane %d: %d, want %d", nb, cc, b, l, got, -128*s)
					}
				}
			}
		}
	}
}
