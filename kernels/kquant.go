package kernels

import (
	"encoding/binary"

	"github.com/irtool/irtool/gguf"
)

// Fast K-quant matmul kernels (Q4_K, Q5_K, Q6_K times a Q8_K activation
// row), each in the arithmetic of the ggml-cpu AVX2 kernel that llama.cpp's
// build runs for it, so that they give dotQ4Kx8 / dotQ4Kx8Gemm, dotQK and
// dotQ6KBsums bit for bit:
//
//   - Q4_K (LlamaCurrent, a matrix llama.cpp repacks to q4_K_8x8): read
//     from a copy repacked once in an interleaved layout of eight rows
//     (below), dotQ4Kx8i; the GEMV order (one conversion per super-block)
//     or the GEMM one (one per pair of sub-blocks) per column.
//   - Q5_K: ggml_vec_dot_q5_K_q8_K, rows read in place (dotQ5KRows).
//   - Q6_K (LlamaCurrent): ggml_vec_dot_q6_K_q8_K with the -32 offset
//     taken from the activation block sums, rows read in place
//     (dotQ6KRows).
//
// Each has an AVX2 kernel (kquant_amd64.s) and a pure-Go twin; the
// assembly runs when useAVX2, the twin otherwise (-tags purego, other
// architectures), and kquant_test.go compares their bits.

// Q4_K interleaved layout (q4kx8Block = 1184 bytes per super-block of
// eight rows; 8 rows × 144 bytes in the original): group g holds rows
// 8g..8g+7, its super-blocks one after the other; a super-block is
//
//	bytes    0..15    the eight rows' F16 d
//	bytes   16..31    the eight rows' F16 dmin
//	bytes   32..95    scales: byte 32+8s+j = 6-bit scale of sub-block s of row j
//	bytes   96..159   mins: byte 96+16p+2j+e = 6-bit min of sub-block 2p+e of row j
//	bytes  160..1183  nibbles: chunk c (0..3), vector h (0..7) at 160+256c+32h;
//	                  its bytes 4j..4j+3 are bytes 32c+4h..32c+4h+3 of row j's qs
//
// so in lane j (row j) of the vector of chunk c, the low nibbles are values
// 4h..4h+3 of sub-block 2c and the high nibbles the same values of
// sub-block 2c+1 (a Q4_K qs byte 32c+i holds value 64c+i in its low nibble
// and value 64c+32+i in its high one).
const q4kx8Block = 1184

// repackQ4Kx8i writes rows (a multiple of 8) Q4_K rows of nsb super-blocks,
// row r at src[r·stride:], into dst (rows/8·nsb·q4kx8Block bytes) in the
// interleaved layout.
func repackQ4Kx8i(dst, src []byte, stride, rows, nsb int) {
	le := binary.LittleEndian
	for g := range rows / 8 {
		for b := range nsb {
			o := (*[q4kx8Block]byte)(dst[(g*nsb+b)*q4kx8Block:])
			for j := range 8 {
				s := (*[144]byte)(src[(8*g+j)*stride+b*144:])
				le.PutUint16(o[2*j:], le.Uint16(s[0:]))
				le.PutUint16(o[16+2*j:], le.Uint16(s[2:]))
				sc := s[4:16:16]
				for sub := range 8 {
					c, m := scaleMinK4(sub, sc)
					o[32+8*sub+j] = c
					o[96+16*(sub/2)+2*j+sub%2] = m
				}
				v := o[160+4*j:]
				q := s[16:144:144]
				for i := range 32 {
					// word i of qs: chunk i/8, vector i%8
					le.PutUint32(v[32*i:], le.Uint32(q[4*i:]))
				}
			}
		}
	}
}

// q8KExtra fills the 16-bit sums the K-quant kernels read from a Q8_K row
// of nsb super-blocks: bs16 the sums of each 16 values (bsums, which fit
// in int16: at most 16·128) and b32 those of each 32 (bsums[2s] +
// bsums[2s+1], at most 4096).
func q8KExtra(bsums []int32, bs16, b32 []int16) {
	for i, v := range bsums {
		bs16[i] = int16(v)
	}
	for i := range b32 {
		b32[i] = int16(bsums[2*i] + bsums[2*i+1])
	}
}

// dotQ4Kx8i sets out[8g+j] (g < ng, j < 8) to the product of row j of group
// g of the interleaved Q4_K copy p with the Q8_K activation row c, in
// dotQ4Kx8's order, or dotQ4Kx8Gemm's when pairs is set.
func dotQ4Kx8i(p []byte, ng int, c q8Row, pairs bool, out []float32) {
	nsb := len(c.d)
	if useAVX2 && nsb > 0 && ng > 0 {
		_, _, _, _ = p[ng*nsb*q4kx8Block-1], c.qs[nsb*256-1], c.b32[nsb*8-1], out[8*ng-1]
		dotQ4Kx8iAVX2(&p[0], &c.qs[0], &c.d[0], &c.b32[0], nsb, ng, pairs, &out[0])
		return
	}
	dotQ4Kx8iGo(p, ng, c, pairs, out[:8*ng])
}

// dotQ4Kx8iGo is the pure-Go twin of dotQ4Kx8iAVX2.
func dotQ4Kx8iGo(p []byte, ng int, c q8Row, pairs bool, out []float32) {
	tab := f16tab()
	nsb := len(c.d)
	le := binary.LittleEndian
	for g := range ng {
		for j := range 8 {
			var acc, accMin float32
			for b, dy := range c.d {
				o := (*[q4kx8Block]byte)(p[(g*nsb+b)*q4kx8Block:])
				d := tab[le.Uint16(o[2*j:])] * dy
				dm := tab[le.Uint16(o[16+2*j:])] * dy
				y := c.qs[b*256 : b*256+256 : b*256+256]
				bb := c.b32[b*8 : b*8+8 : b*8+8]
				var isum, imin int32
				for ch := range 4 {
					var s0, s1 int32
					for h := range 8 {
						v := o[160+256*ch+32*h+4*j:][:4:4]
						y0 := y[64*ch+4*h : 64*ch+4*h+4 : 64*ch+4*h+4]
						y1 := y[64*ch+32+4*h : 64*ch+32+4*h+4 : 64*ch+32+4*h+4]
						for i := range 4 {
							s0 += int32(v[i]&0x0f) * int32(y0[i])
							s1 += int32(v[i]>>4) * int32(y1[i])
						}
					}
					is := int32(o[32+8*(2*ch)+j])*s0 + int32(o[32+8*(2*ch+1)+j])*s1
					im := int32(o[96+16*ch+2*j])*int32(bb[2*ch]) + int32(o[96+16*ch+2*j+1])*int32(bb[2*ch+1])
					if pairs {
						acc = fma32(float32(is), d, acc)
						accMin = fma32(float32(im), dm, accMin)
					} else {
						isum += is
						imin += im
					}
				}
				if !pairs {
					acc = fma32(float32(isum), d, acc)
					accMin = fma32(float32(imin), dm, accMin)
				}
			}
			out[8*g+j] = acc - accMin
		}
	}
}

// dotQ5KRows sets out[r] (r < len(out)) to the product of the Q5_K row at
// src[r·stride:] with the Q8_K activation row c, in dotQK's order
// (ggml_vec_dot_q5_K_q8_K on AVX2).
func dotQ5KRows(src []byte, stride int, c q8Row, out []float32) {
	nsb, nr := len(c.d), len(out)
	if useAVX2 && nsb > 0 && nr > 0 {
		_, _, _ = src[(nr-1)*stride+nsb*176-1], c.qs[nsb*256-1], c.b32[nsb*8-1]
		dotQ5KRowsAVX2(&src[0], stride, &c.qs[0], &c.d[0], &c.b32[0], nsb, nr, &out[0])
		return
	}
	dotQ5KRowsGo(src, stride, c, out)
}

// dotQ5KRowsGo is the pure-Go twin of dotQ5KRowsAVX2: per super-block the
// eight int32 lanes (lane k: values 4k..4k+3 of each 32-value sub-block
// times its scale), acc[k] = fma(d_y·d, lane[k], acc[k]); the mins
// summs = fma(−d_y·dmin, Σ m·bsum, summs); result hsum(acc) + summs.
func dotQ5KRowsGo(src []byte, stride int, c q8Row, out []float32) {
	tab := f16tab()
	le := binary.LittleEndian
	for r := range out {
		row := src[r*stride:]
		var acc [8]float32
		var summs float32
		for b, dy := range c.d {
			blk := (*[176]byte)(row[b*176:])
			qh, ql := blk[16:48:48], blk[48:176:176]
			y := c.qs[b*256 : b*256+256 : b*256+256]
			var lane [8]int32
			var pm int32
			for sub := range 8 {
				sc, m := scaleMinK4(sub, blk[4:16])
				pm += int32(m) * int32(c.b32[b*8+sub])
				ch, shift := sub/2, uint(4*(sub%2))
				yy := y[32*sub : 32*sub+32 : 32*sub+32]
				for k := range 8 {
					var s int32
					for i := 4 * k; i < 4*k+4; i++ {
						q := int32(ql[32*ch+i]>>shift&0x0f) | int32(qh[i]>>uint(sub)&1)<<4
						s += q * int32(yy[i])
					}
					lane[k] += int32(sc) * s
				}
			}
			summs = fma32(-dy*tab[le.Uint16(blk[2:])], float32(pm), summs)
			d := dy * tab[le.Uint16(blk[0:])]
			for k := range acc {
				acc[k] = fma32(d, float32(lane[k]), acc[k])
			}
		}
		out[r] = hsum8(&acc) + summs
	}
}

// dotQ6KRows sets out[r] (r < len(out)) to the product of the Q6_K row at
// src[r·stride:] with the Q8_K activation row c, in dotQ6KBsums's order
// (ggml_vec_dot_q6_K_q8_K on AVX2 at llama.cpp 3f545bec).
func dotQ6KRows(src []byte, stride int, c q8Row, out []float32) {
	nsb, nr := len(c.d), len(out)
	if useAVX2 && nsb > 0 && nr > 0 {
		_, _, _ = src[(nr-1)*stride+nsb*210-1], c.qs[nsb*256-1], c.bs16[nsb*16-1]
		dotQ6KRowsAVX2(&src[0], stride, &c.qs[0], &c.d[0], &c.bs16[0], nsb, nr, &out[0])
		return
	}
	dotQ6KRowsGo(src, stride, c, out)
}

// dotQ6KRowsGo is the pure-Go twin of dotQ6KRowsAVX2: the lanes of the
// unsigned 6-bit values (lane k: values 4k..4k+3 of each 32-value group
// times its 16-value scale) minus 32·(sc[2k]·bsum[2k] + sc[2k+1]·bsum[2k+1]),
// acc[k] = fma(d_y·d, lane[k], acc[k]) per super-block, then hsum(acc).
func dotQ6KRowsGo(src []byte, stride int, c q8Row, out []float32) {
	tab := f16tab()
	le := binary.LittleEndian
	for r := range out {
		row := src[r*stride:]
		var acc [8]float32
		for b, dy := range c.d {
			blk := (*[210]byte)(row[b*210:])
			scs := blk[192:208:208]
			y := c.qs[b*256 : b*256+256 : b*256+256]
			bs := c.bs16[b*16 : b*16+16 : b*16+16]
			var lane [8]int32
			for n := range 2 {
				ql, qh := blk[64*n:64*n+64:64*n+64], blk[128+32*n:128+32*n+32:128+32*n+32]
				for l := range 32 {
					h := qh[l]
					q := [4]int32{
						int32(ql[l]&0x0f | (h&3)<<4),
						int32(ql[l+32]&0x0f | (h>>2&3)<<4),
						int32(ql[l]>>4 | (h>>4&3)<<4),
						int32(ql[l+32]>>4 | (h>>6&3)<<4),
					}
					for g4, v := range q {
						i := 128*n + 32*g4 + l
						lane[l%32/4] += int32(int8(scs[i/16])) * v * int32(y[i])
					}
				}
			}
			for k := range lane {
				lane[k] -= 32 * (int32(int8(scs[2*k]))*int32(bs[2*k]) + int32(int8(scs[2*k+1]))*int32(bs[2*k+1]))
			}
			d := dy * tab[le.Uint16(blk[208:])]
			for k := range acc {
				acc[k] = fma32(d, float32(lane[k]), acc[k])
			}
		}
		out[r] = hsum8(&acc)
	}
}

// kRaw reports whether the K-quant weight a is multiplied by the row
// kernels above (read in place) under o: Q5_K always, Q6_K in the current
// build's order.
func kRaw(o Options, a Tensor) bool {
	switch a.Type {
	case gguf.TypeQ5_K:
		return true
	case gguf.TypeQ6_K:
		return o.LlamaBuild == LlamaCurrent
	}
	return false
}

// dotKRows is dotQ5KRows or dotQ6KRows by the weight type t.
func dotKRows(t gguf.GGMLType, src []byte, stride int, c q8Row, out []float32) {
	if t == gguf.TypeQ5_K {
		dotQ5KRows(src, stride, c, out)
		return
	}
	dotQ6KRows(src, stride, c, out)
}

// mulRawK is tile.mulRaw for K-quant weights: Q4_K from its interleaved
// copy (m.pk), Q5_K and Q6_K rows read in place; each activation column
// meets the tile's rows in one kernel call, straight into dst's column
// when it is dense. Columns j < n − n mod 4 of a repacked Q4_K take the
// GEMM order (dotQ4Kx8Gemm), the rest the GEMV's, as in llama.cpp.
func (t *tile) mulRawK(m *matmul, out *dstWriter, r0 int64, nr int, base, i12, i13 int64) {
	var p []byte
	if m.pk != nil {
		nsb := m.k / 256
		p = m.pk[int(r0)/8*nsb*q4kx8Block : (int(r0)+nr)/8*nsb*q4kx8Block]
	}
	stride := int(m.a.Nb[1])
	var j0 int64
	if p != nil && m.dotK4 != nil {
		// The GEMM columns four at a time, the nibbles unpacked once.
		nsb := m.k / 256
		for ; j0+4 <= m.n-m.n%4; j0 += 4 {
			cols := [4]q8Row{m.q8col(base + j0), m.q8col(base + j0 + 1), m.q8col(base + j0 + 2), m.q8col(base + j0 + 3)}
			d := out.cols4(j0, i12, i13)
			for g := range nr / 8 {
				var o [4][8]float32
				dotQ4Kx8x4i(p[g*nsb*q4kx8Block:], &cols, &o)
				i := r0 + int64(8*g)
				for c := range o {
					if d[c] != nil {
						copy(d[c][i:i+8], o[c][:])
						continue
					}
					for e, v := range o[c] {
						out.put(i+int64(e), j0+int64(c), i12, i13, v)
					}
				}
			}
		}
	}
	if p == nil && m.a.Type == gguf.TypeQ6_K {
		// Four columns per pass over the rows.
		for ; j0+4 <= m.n; j0 += 4 {
			cols := [4]q8Row{m.q8col(base + j0), m.q8col(base + j0 + 1), m.q8col(base + j0 + 2), m.q8col(base + j0 + 3)}
			d := out.cols4(j0, i12, i13)
			var o [4][]float32
			for c := range o {
				if d[c] != nil {
					o[c] = d[c][r0 : r0+int64(nr)]
				} else {
					o[c] = t.out4[c*len(t.out) : c*len(t.out)+nr]
				}
			}
			dotQ6Kx4Rows(t.raw[0], stride, &cols, &o)
			for c := range o {
				if d[c] == nil {
					for e, v := range o[c] {
						out.put(r0+int64(e), j0+int64(c), i12, i13, v)
					}
				}
			}
		}
	}
	for j := j0; j < m.n; j++ {
		c := m.q8col(base + j)
		d := out.col(j, i12, i13)
		o := t.out[:nr]
		if d != nil {
			o = d[r0 : r0+int64(nr)]
		}
		if p != nil {
			dotQ4Kx8i(p, nr/8, c, m.dotK4 != nil && j < m.n-m.n%4, o)
		} else {
			dotKRows(m.a.Type, t.raw[0], stride, c, o)
		}
		if d == nil {
			for e, v := range o {
				out.put(r0+int64(e), j, i12, i13, v)
			}
		}
	}
}

// q4kx4Args are the four activation columns of dotQ4Kx8x4iAVX2.
type q4kx4Args struct {
	qs  [4]*int8
	d   [4]*float32
	b32 [4]*int16
}

// dotQ4Kx8x4i sets out[c][j] to dotQ4Kx8i's GEMM-order product of row j
// of the first group of eight interleaved Q4_K rows p with column c
// (the prefill: the nibbles unpacked once for four columns).
func dotQ4Kx8x4i(p []byte, cols *[4]q8Row, out *[4][8]float32) {
	nsb := len(cols[0].d)
	if useAVX2 && nsb > 0 {
		var a q4kx4Args
		_ = p[nsb*q4kx8Block-1]
		for c := range cols {
			_, _, _ = cols[c].qs[nsb*256-1], cols[c].d[nsb-1], cols[c].b32[nsb*8-1]
			a.qs[c], a.d[c], a.b32[c] = &cols[c].qs[0], &cols[c].d[0], &cols[c].b32[0]
		}
		dotQ4Kx8x4iAVX2(&p[0], &a, nsb, out)
		return
	}
	for c := range cols {
		dotQ4Kx8iGo(p, 1, cols[c], true, out[c][:])
	}
}

// q6kx4Args are the four activation columns and outputs of
// dotQ6Kx4RowsAVX2.
type q6kx4Args struct {
	qs   [4]*int8
	d    [4]*float32
	bs16 [4]*int16
	out  [4]*float32
}

// dotQ6Kx4Rows is dotQ6KRows for four activation columns at once (each
// row unpacked once): out[c][r] for r < len(out[0]).
func dotQ6Kx4Rows(src []byte, stride int, cols *[4]q8Row, out *[4][]float32) {
	nsb, nr := len(cols[0].d), len(out[0])
	if useAVX2 && nsb > 0 && nr > 0 {
		var a q6kx4Args
		_ = src[(nr-1)*stride+nsb*210-1]
		for c := range cols {
			_, _, _, _ = cols[c].qs[nsb*256-1], cols[c].d[nsb-1], cols[c].bs16[nsb*16-1], out[c][nr-1]
			a.qs[c], a.d[c], a.bs16[c], a.out[c] = &cols[c].qs[0], &cols[c].d[0], &cols[c].bs16[0], &out[c][0]
		}
		dotQ6Kx4RowsAVX2(&src[0], stride, &a, nsb, nr)
		return
	}
	for c := range cols {
		dotQ6KRowsGo(src, stride, cols[c], out[c][:nr])
	}
}
