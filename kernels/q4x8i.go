package kernels

import (
	"encoding/binary"
	"unsafe"
)

// Q4_0 weights repacked once into an interleaved layout of eight rows, the
// idea of llama.cpp's q4_0_8x8 (ggml-cpu/repack.cpp): a decode step then
// streams each group of eight rows contiguously, loads the eight block
// scales with one 16-byte load and multiplies 32-byte vectors of nibbles
// that hold all eight rows, instead of gathering eight rows at a stride.
//
// Layout (q4x8iBlock = 144 bytes per block of eight rows): group g holds
// rows 8g..8g+7, its blocks one after the other; a block is
//
//	bytes   0..15   the eight rows' F16 scales d_0..d_7
//	bytes  16..143  four 32-byte vectors V_0..V_3: bytes 4j..4j+3 of V_h
//	                are bytes 4h..4h+3 of row j's 16 nibble bytes
//
// so V_h & 0x0f holds values 4h..4h+3 of each row (32-bit lane j = row j)
// and V_h >> 4 values 16+4h..16+4h+3 (a Q4_0 byte i holds value i in its
// low nibble and value i+16 in its high one). The copy has the size of
// the original. The products are those of dotQ4_0x8 bit for bit: exact
// integer block sums, then acc = fma(float(sum), d_w·d_a, acc) per row.

// q4x8iBlock is the size of one interleaved block of eight Q4_0 rows.
const q4x8iBlock = 144

// repackQ4_0x8i writes rows (a multiple of 8) Q4_0 rows of nb blocks,
// row r at src[r·stride:], into dst (rows/8·nb·q4x8iBlock bytes) in the
// interleaved layout.
func repackQ4_0x8i(dst, src []byte, stride, rows, nb int) {
	le := binary.LittleEndian
	for g := range rows / 8 {
		for b := range nb {
			o := (*[q4x8iBlock]byte)(dst[(g*nb+b)*q4x8iBlock:])
			base := 8*g*stride + b*18
			for j := range 8 {
				s := (*[18]byte)(src[base+j*stride:])
				o[2*j], o[2*j+1] = s[0], s[1]
				w := o[16+4*j:]
				le.PutUint32(w[0:4], le.Uint32(s[2:6]))
				le.PutUint32(w[32:36], le.Uint32(s[6:10]))
				le.PutUint32(w[64:68], le.Uint32(s[10:14]))
				le.PutUint32(w[96:100], le.Uint32(s[14:18]))
			}
		}
	}
}

// repackQ4_0x8iFast is repackQ4_0x8i, group by group in assembly where
// there is one (the same bytes).
func repackQ4_0x8iFast(dst, src []byte, stride, rows, nb int) {
	if !useAVX2 || nb == 0 {
		repackQ4_0x8i(dst, src, stride, rows, nb)
		return
	}
	for g := range rows / 8 {
		_, _ = dst[(g+1)*nb*q4x8iBlock-1], src[(8*g+7)*stride+nb*18-1]
		repackQ4_0x8iAVX2(&dst[g*nb*q4x8iBlock], &src[8*g*stride], stride, nb)
	}
}

// dotQ4_0x8iGo sets out[8g+j] (g < ng, j < 8) to the dot product of row j
// of group g of the interleaved rows p with one Q8_0 activation row, in
// dotQ4_0x8Go's order (the pure-Go twin of dotQ4_0x8iAVX2; neg emulates
// ggml's sign trick, see mulQuirk).
func dotQ4_0x8iGo(p []byte, ng int, bq []int8, bd []float32, neg bool, out []float32) {
	tab := f16tab()
	nb := len(bd)
	for g := range ng {
		for j := range 8 {
			var acc float32
			for blk, db := range bd {
				o := p[(g*nb+blk)*q4x8iBlock:][:q4x8iBlock:q4x8iBlock]
				dw := tab[uint16(o[2*j])|uint16(o[2*j+1])<<8]
				y := bq[blk*32 : blk*32+32 : blk*32+32]
				var s int32
				for h := range 4 {
					for i := range 4 {
						v := o[16+32*h+4*j+i]
						lo, hi := int32(v&0x0f)-8, int32(v>>4)-8
						ya, yb := int32(y[4*h+i]), int32(y[16+4*h+i])
						if neg {
							s += mulQuirk(lo, ya) + mulQuirk(hi, yb)
						} else {
							s += lo*ya + hi*yb
						}
					}
				}
				acc = fmaQ(float64(dw*db)*float64(s), float64(acc))
			}
			out[8*g+j] = acc
		}
	}
}

// dotQ4_0x8i is dotQ4_0x8 on ng groups of interleaved rows p (8·ng
// results in out).
func dotQ4_0x8i(p []byte, ng int, c q8Row, out []float32) {
	nb := len(c.d)
	if useAVX2 && !c.neg && nb > 0 && ng > 0 {
		_, _, _, _ = p[ng*nb*q4x8iBlock-1], c.qs[nb*32-1], c.sum[nb-1], out[8*ng-1]
		dotQ4_0x8iAVX2(&p[0], &c.qs[0], &c.d[0], &c.sum[0], nb, ng, &out[0])
		return
	}
	dotQ4_0x8iGo(p, ng, c.qs, c.d, c.neg, out[:8*ng])
}

// packQ4_0x8i is packQ4_0x8 from one group of interleaved rows p (nb
// blocks): the same bytes. Assembly only.
func packQ4_0x8i(dst, p []byte, nb int) {
	_, _ = dst[nb*packedQ4Block-1], p[nb*q4x8iBlock-1]
	packQ4_0x8iAVX2(&dst[0], &p[0], nb)
}

// hugeAlloc allocates n bytes starting on a huge-page boundary and advises
// huge pages for the whole huge pages inside.
func hugeAlloc(n int) []byte {
	buf := make([]byte, n+hugePage)
	off := (hugePage - int(uintptr(unsafe.Pointer(&buf[0]))%hugePage)) % hugePage
	b := buf[off : off+n : off+n]
	if h := n &^ (hugePage - 1); h > 0 {
		adviseHuge(b[:h])
	}
	return b
}
