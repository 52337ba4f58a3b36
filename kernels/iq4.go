package kernels

import (
	"encoding/binary"

	"github.com/irtool/irtool/gguf"
)

// IQ4_NL and IQ4_XS weights: 4-bit indices into the non-linear codebook
// gguf.KValuesIQ4NL. llama-quantize makes them without an importance
// matrix.
//
// IQ4_NL (blocks of 32, one F16 scale) is multiplied with Q8_0
// activations. llama.cpp 3f545bec repacks a 2-D IQ4_NL matrix with a
// multiple of 8 rows to iq4_nl_8x8 on AVX2 (ggml-cpu/repack.cpp), whose
// kernels follow q4_0_8x8's order: per block the 32 products are summed
// exactly as integers and each row keeps one float accumulator,
// acc = fma(float(sum), d_w·d_a, acc) (dotIQ4NLx8Go). Other IQ4_NL
// products take ggml_vec_dot_iq4_nl_q8_0's AVX2 order (dotIQ4NLVecGo).
//
// IQ4_XS (super-blocks of 256: F16 d, eight 6-bit sub-block scales) is
// multiplied with Q8_K activations in ggml_vec_dot_iq4_xs_q8_K's AVX2
// order (dotIQ4XSGo); llama.cpp does not repack it.

// iq4nlRepack reports whether llama.cpp repacks the IQ4_NL weight a to
// iq4_nl_8x8 for a product with b under o.
func iq4nlRepack(o Options, a, b Tensor) bool {
	return o.LlamaBuild == LlamaCurrent && o.Quant == QuantGGML && a.Type == gguf.TypeIQ4_NL &&
		a.Ne[1]%8 == 0 && a.Ne[2] == 1 && a.Ne[3] == 1 && b.Type == gguf.TypeF32
}

// iq4Raw reports whether the kernels of this file multiply a (QuantGGML).
func iq4Raw(t gguf.GGMLType) bool { return t == gguf.TypeIQ4_NL || t == gguf.TypeIQ4_XS }

// iq4nlVal returns value i (0..31) of an IQ4_NL block's 16 nibble bytes.
func iq4nlVal(x []byte, i int) int32 {
	if i < 16 {
		return int32(gguf.KValuesIQ4NL[x[i]&0x0f])
	}
	return int32(gguf.KValuesIQ4NL[x[i-16]>>4])
}

// dotIQ4NLx8Go computes the dot products of the eight IQ4_NL rows at
// src[j·stride:] (18-byte blocks: F16 d, 16 bytes of nibbles) with one
// Q8_0 activation row in iq4_nl_8x8's order (see above). neg selects the
// sign-trick product for activations holding -128 (mulQuirk). The twin of
// dotIQ4NLx8AVX2.
func dotIQ4NLx8Go(src []byte, stride int, qs []int8, d []float32, neg bool, out []float32) {
	tab := f16tab()
	for j := range 8 {
		row := src[j*stride:]
		var acc float32
		for blk, db := range d {
			b := row[blk*18 : blk*18+18 : blk*18+18]
			dw := tab[uint16(b[0])|uint16(b[1])<<8]
			x := b[2:18:18]
			y := qs[blk*32 : blk*32+32 : blk*32+32]
			var s int32
			if neg {
				for i := range 32 {
					s += mulQuirk(iq4nlVal(x, i), int32(y[i]))
				}
			} else {
				for i, v := range x {
					s += int32(gguf.KValuesIQ4NL[v&0x0f])*int32(y[i]) + int32(gguf.KValuesIQ4NL[v>>4])*int32(y[16+i])
				}
			}
			acc = fmaQ(float64(dw*db)*float64(s), float64(acc))
		}
		out[j] = acc
	}
}

// dotIQ4NLRows8 sets out[r] for the ng·8 repacked IQ4_NL rows at
// src[r·stride:] and one activation row, eight rows per kernel call.
func dotIQ4NLRows8(src []byte, stride, ng int, c q8Row, out []float32) {
	nb := len(c.d)
	for g := range ng {
		s := src[g*8*stride:]
		if useAVX2 && !c.neg && nb > 0 {
			_, _, _ = s[7*stride+nb*18-1], c.qs[nb*32-1], out[8*g+7]
			dotIQ4NLx8AVX2(&s[0], stride, &c.qs[0], &c.d[0], nb, &out[8*g])
			continue
		}
		dotIQ4NLx8Go(s, stride, c.qs, c.d, c.neg, out[8*g:8*g+8])
	}
}

// dotIQ4NLVecGo is ggml_vec_dot_iq4_nl_q8_0 as the AVX2 build computes it:
// pairs of blocks, the first of each pair into accumulator 1 and the
// second into accumulator 2 (eight int32 lanes each, values 4k..4k+3,
// acc = fma(d_y·d_x, lanes, acc)), then hsum_float_8(acc1 + acc2); a last
// odd block is added in scalar code, sumf += d·(Σ low + Σ high) (gcc
// contracts it to an FMA).
func dotIQ4NLVecGo(src []byte, c q8Row) float32 {
	tab := f16tab()
	var acc [2][8]float32
	nb := len(c.d)
	ib := 0
	for ; ib+1 < nb; ib += 2 {
		for h := range 2 {
			b := src[(ib+h)*18 : (ib+h)*18+18 : (ib+h)*18+18]
			dd := float64(c.d[ib+h] * tab[uint16(b[0])|uint16(b[1])<<8])
			x := b[2:18:18]
			y := c.qs[(ib+h)*32 : (ib+h)*32+32 : (ib+h)*32+32]
			for k := range 8 {
				var l int32
				for i := 4 * k; i < 4*k+4; i++ {
					if c.neg {
						l += mulQuirk(iq4nlVal(x, i), int32(y[i]))
					} else {
						l += iq4nlVal(x, i) * int32(y[i])
					}
				}
				acc[h][k] = fmaQ(dd*float64(l), float64(acc[h][k]))
			}
		}
	}
	var sum [8]float32
	for k := range sum {
		sum[k] = acc[0][k] + acc[1][k]
	}
	sumf := hsum8(&sum)
	for ; ib < nb; ib++ {
		b := src[ib*18 : ib*18+18 : ib*18+18]
		d := c.d[ib] * tab[uint16(b[0])|uint16(b[1])<<8]
		x := b[2:18:18]
		y := c.qs[ib*32 : ib*32+32 : ib*32+32]
		var s1, s2 int32
		for j := range 16 {
			s1 += int32(y[j]) * int32(gguf.KValuesIQ4NL[x[j]&0x0f])
			s2 += int32(y[j+16]) * int32(gguf.KValuesIQ4NL[x[j]>>4])
		}
		sumf = fma32(d, float32(s1+s2), sumf)
	}
	return sumf
}

// dotIQ4XSGo is ggml_vec_dot_iq4_xs_q8_K as the AVX2 build computes it on
// an IQ4_XS row (136-byte super-blocks: F16 d, scales_h, scales_l[4],
// qs[128]) and a Q8_K activation row: per super-block the products of each
// 32-value sub-block go to eight int32 lanes (values 4k..4k+3), times the
// sub-block's scale ls-32, summed exactly over the super-block; then
// acc = fma(d·d_y, float(lanes), acc) and hsum_float_8 at the end.
func dotIQ4XSGo(src []byte, c q8Row) float32 {
	tab := f16tab()
	var acc [8]float32
	for sb, dy := range c.d {
		b := src[sb*136 : sb*136+136 : sb*136+136]
		d := tab[uint16(b[0])|uint16(b[1])<<8]
		sh := binary.LittleEndian.Uint16(b[2:])
		var lanes [8]int32
		for ib := range 8 {
			ls := int32(b[4+ib/2]>>(4*(ib%2)))&0xf | int32(sh>>(2*ib))&3<<4 - 32
			x := b[8+16*ib : 8+16*ib+16 : 8+16*ib+16]
			y := c.qs[sb*256+32*ib : sb*256+32*ib+32 : sb*256+32*ib+32]
			for k := range 8 {
				var l int32
				for i := 4 * k; i < 4*k+4; i++ {
					l += mulQuirk(iq4nlVal(x, i), int32(y[i]))
				}
				lanes[k] += ls * l
			}
		}
		dd := d * dy
		for k := range acc {
			acc[k] = fma32(dd, float32(lanes[k]), acc[k])
		}
	}
	return hsum8(&acc)
}

// mulIQ4 is tile.mulRaw for IQ4_NL and IQ4_XS weights.
func (t *tile) mulIQ4(m *matmul, out *dstWriter, r0 int64, nr int, base, i12, i13 int64) {
	stride := int(m.a.Nb[1])
	for j := range m.n {
		c := m.q8col(base + j)
		if m.iq4x8 {
			if d := out.col(j, i12, i13); d != nil {
				dotIQ4NLRows8(t.raw[0], stride, nr/8, c, d[r0:r0+int64(nr)])
				continue
			}
			dotIQ4NLRows8(t.raw[0], stride, nr/8, c, t.out[:nr])
			for r, v := range t.out[:nr] {
				out.put(r0+int64(r), j, i12, i13, v)
			}
			continue
		}
		if m.a.Type == gguf.TypeIQ4_XS {
			if d := out.col(j, i12, i13); d != nil {
				dotIQ4XSRows(t.raw[0], stride, nr, c, d[r0:r0+int64(nr)])
				continue
			}
			dotIQ4XSRows(t.raw[0], stride, nr, c, t.out[:nr])
			for r, v := range t.out[:nr] {
				out.put(r0+int64(r), j, i12, i13, v)
			}
			continue
		}
		for r, row := range t.raw[:nr] {
			out.put(r0+int64(r), j, i12, i13, dotIQ4NLVecGo(row, c))
		}
	}
}

// dotIQ4XSRows sets out[r] to dotIQ4XSGo of the IQ4_XS row at
// src[r·stride:] and c for r < nr, in one assembly call where there is one.
func dotIQ4XSRows(src []byte, stride, nr int, c q8Row, out []float32) {
	nb := len(c.d)
	if useAVX2 && nb > 0 && nr > 0 {
		_, _, _ = src[(nr-1)*stride+nb*136-1], c.qs[nb*256-1], out[nr-1]
		dotIQ4XSRowsAVX2(&src[0], stride, &c.qs[0], &c.d[0], nb, nr, &out[0])
		return
	}
	for r := range nr {
		out[r] = dotIQ4XSGo(src[r*stride:], c)
	}
}
