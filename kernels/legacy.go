package kernels

import "github.com/irtool/irtool/gguf"

// Legacy quantised weights read straight from their blocks: Q5_0 against
// Q8_0 activations (ggml_vec_dot_q5_0_q8_0, and llamafile's tinyBLAS_Q0
// for prefill, which forms the same lanes), Q4_1 and Q5_1 against Q8_1
// activations (ggml_vec_dot_q{4,5}_1_q8_1). llama.cpp repacks none of
// them, so one order serves decode and prefill. The AVX2 kernels
// (legacy_amd64.s) take several rows per call (decode: a tile of rows into
// dst) or one row with four activation columns (prefill); the Go twins
// below give the same bits.

// legacyRaw reports whether weights of type t are multiplied from their
// bytes by the kernels of this file.
func legacyRaw(t gguf.GGMLType) bool {
	return t == gguf.TypeQ5_0 || t == gguf.TypeQ4_1 || t == gguf.TypeQ5_1
}

// q5_0Values expands a Q5_0 block (22 bytes: f16 d, 32 high bits, 16
// bytes of nibbles; value j < 16 the low nibble of byte j, value j >= 16
// the high nibble of byte j-16, bit j of qh its fifth bit) into
// (nibble | high << 4) - 16.
func q5_0Values(b []byte, x *[32]int8) {
	qh := uint32(b[2]) | uint32(b[3])<<8 | uint32(b[4])<<16 | uint32(b[5])<<24
	for j := range 16 {
		v := b[6+j]
		x[j] = int8(v&0x0f|uint8(qh>>uint(j)&1)<<4) - 16
		x[j+16] = int8(v>>4|uint8(qh>>uint(j+16)&1)<<4) - 16
	}
}

// dotQ5_0RawGo is ggml_vec_dot_q5_0_q8_0 (AVX2) on a Q5_0 row read from
// its blocks: dotQ8_0's lanes on the expanded signed values, bit for bit
// unpackQ5_0 followed by dotQ8_0. The twin of dotQ5_0RowsAVX2 and
// dotQ5_0Rawx4AVX2.
func dotQ5_0RawGo(src []byte, qs []int8, d []float32, neg bool) float32 {
	tab := f16tab()
	var acc [8]float32
	var x [32]int8
	for blk, db := range d {
		b := src[blk*22 : blk*22+22 : blk*22+22]
		da := tab[uint16(b[0])|uint16(b[1])<<8]
		q5_0Values(b, &x)
		y := qs[blk*32 : blk*32+32 : blk*32+32]
		dd := float64(da * db) // fma with the conversions hoisted (exact products)
		for k := range acc {
			var l int32
			if neg {
				for i := 4 * k; i < 4*k+4; i++ {
					l += mulQuirk(int32(x[i]), int32(y[i]))
				}
			} else {
				l = int32(x[4*k])*int32(y[4*k]) + int32(x[4*k+1])*int32(y[4*k+1]) +
					int32(x[4*k+2])*int32(y[4*k+2]) + int32(x[4*k+3])*int32(y[4*k+3])
			}
			acc[k] = fmaQ(dd*float64(l), float64(acc[k]))
		}
	}
	return hsum8(&acc)
}

// q5_0ToQ8_0 writes the nb Q5_0 blocks at src as Q8_0 blocks (34 bytes:
// the same f16 d, then the 32 values q5_0Values expands) into dst. A
// Q8_0 dot product of the result is bit for bit dotQ5_0RawGo: the same
// d, values and lanes.
func q5_0ToQ8_0(src, dst []byte, nb int) {
	_, _ = src[nb*22-1], dst[nb*34-1]
	for b := range nb {
		s := src[b*22 : b*22+22 : b*22+22]
		o := dst[b*34 : b*34+34 : b*34+34]
		o[0], o[1] = s[0], s[1]
		qh := uint32(s[2]) | uint32(s[3])<<8 | uint32(s[4])<<16 | uint32(s[5])<<24
		for j := range 16 {
			v := s[6+j]
			o[2+j] = v&0x0f | uint8(qh>>uint(j)&1)<<4 - 16
			o[18+j] = v>>4 | uint8(qh>>uint(j+16)&1)<<4 - 16
		}
	}
}

// dotLegacyGo is the Go twin of one row of the legacy kernels.
func dotLegacyGo(t gguf.GGMLType, src []byte, c q8Row) float32 {
	switch t {
	case gguf.TypeQ5_0:
		return dotQ5_0RawGo(src, c.qs, c.d, c.neg)
	case gguf.TypeQ4_1:
		return dotQx1Raw(src, c, 20, false)
	}
	return dotQx1Raw(src, c, 24, true)
}

// dotLegacy is the dot product of one weight row of type t (legacyRaw)
// with one activation row.
func dotLegacy(t gguf.GGMLType, src []byte, c q8Row) float32 {
	var o [1]float32
	dotLegacyRows(t, src, 0, 1, c, o[:])
	return o[0]
}

// dotLegacyRows sets out[r] to the dot product of the weight row at
// src[r·stride:] (type t, legacyRaw) with c, for r < nr: a decode tile in
// one kernel call.
func dotLegacyRows(t gguf.GGMLType, src []byte, stride, nr int, c q8Row, out []float32) {
	nb := len(c.d)
	if useAVX2 && nb > 0 && nr > 0 && !(t == gguf.TypeQ5_0 && c.neg) {
		bs := t.TypeSize()
		_, _, _ = src[(nr-1)*stride+nb*bs-1], c.qs[nb*32-1], out[nr-1]
		switch t {
		case gguf.TypeQ5_0:
			dotQ5_0RowsAVX2(&src[0], stride, &c.qs[0], &c.d[0], nb, nr, &out[0])
		case gguf.TypeQ4_1:
			_ = c.s[nb-1]
			dotQ4_1RowsAVX2(&src[0], stride, &c.qs[0], &c.d[0], &c.s[0], nb, nr, &out[0])
		case gguf.TypeQ5_1:
			_ = c.s[nb-1]
			dotQ5_1RowsAVX2(&src[0], stride, &c.qs[0], &c.d[0], &c.s[0], nb, nr, &out[0])
		}
		return
	}
	for r := range nr {
		out[r] = dotLegacyGo(t, src[r*stride:], c)
	}
}

// legacyX4 holds the four activation columns of a prefill kernel call.
type legacyX4 struct {
	qs [4]*int8
	d  [4]*float32
	s  [4]*float32 // Q8_1 sums (Q4_1, Q5_1)
}

// dotLegacyx4 is dotLegacy of one weight row with four activation rows,
// each weight block expanded once.
func dotLegacyx4(t gguf.GGMLType, src []byte, c *[4]q8Row, out *[4]float32) {
	nb := len(c[0].d)
	if useAVX2 && nb > 0 && !(t == gguf.TypeQ5_0 && (c[0].neg || c[1].neg || c[2].neg || c[3].neg)) {
		_ = src[nb*t.TypeSize()-1]
		var a legacyX4
		for i := range c {
			_, _ = c[i].qs[nb*32-1], c[i].d[nb-1]
			a.qs[i], a.d[i] = &c[i].qs[0], &c[i].d[0]
			if t != gguf.TypeQ5_0 {
				_ = c[i].s[nb-1]
				a.s[i] = &c[i].s[0]
			}
		}
		switch t {
		case gguf.TypeQ5_0:
			dotQ5_0Rawx4AVX2(&src[0], &a, nb, out)
		case gguf.TypeQ4_1:
			dotQ4_1Rawx4AVX2(&src[0], &a, nb, out)
		case gguf.TypeQ5_1:
			dotQ5_1Rawx4AVX2(&src[0], &a, nb, out)
		}
		return
	}
	for i := range c {
		out[i] = dotLegacyGo(t, src, c[i])
	}
}

// mulLegacy is tile.mulRaw for weights of a legacyRaw type: four
// activation columns at a time through dotLegacyx4, the rest (every decode
// step) through one dotLegacyRows call per column straight into dst when
// its column is dense.
func (t *tile) mulLegacy(m *matmul, out *dstWriter, r0 int64, nr int, base, i12, i13 int64) {
	typ := m.a.Type
	var j int64
	for ; j+4 <= m.n; j += 4 {
		cols := [4]q8Row{m.q8col(base + j), m.q8col(base + j + 1), m.q8col(base + j + 2), m.q8col(base + j + 3)}
		d := out.cols4(j, i12, i13)
		r := 0
		if m.q50x && (base+j)%4 == 0 {
			// The rows expanded to Q8_0 blocks once per tile: pairs of rows
			// (four with AVX-512) per kernel call.
			r = m.mulQ8x(out, &cols, &d, t.q50, m.k/32*34, r0, nr, base+j, j, i12, i13)
		}
		for ; r < nr; r++ {
			var o [4]float32
			dotLegacyx4(typ, t.raw[r], &cols, &o)
			out.put4(&d, r0+int64(r), j, i12, i13, o[:])
		}
	}
	stride := int(m.a.Nb[1])
	for ; j < m.n; j++ {
		c := m.q8col(base + j)
		if d := out.col(j, i12, i13); d != nil && nr > 0 {
			dotLegacyRows(typ, t.raw[0], stride, nr, c, d[r0:r0+int64(nr)])
			continue
		}
		for r, row := range t.raw[:nr] {
			out.put(r0+int64(r), j, i12, i13, dotLegacy(typ, row, c))
		}
	}
}
