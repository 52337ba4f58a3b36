package kernels

import (
	"encoding/binary"

	"github.com/irtool/irtool/gguf"
)

// Dispatch between the assembly kernels (simd_amd64.s, AVX2+FMA+F16C,
// chosen at start by CPU feature detection) and their pure-Go twins. Each
// assembly kernel computes exactly what its twin computes, operation for
// operation in the order of ggml's AVX2 code, so results do not depend on
// which one runs (simd_test.go checks the bits on random and edge inputs).
// Build with -tags purego to use the Go twins only.

// dotQ8_0Raw is the dot product of a Q8_0 weight row (raw blocks) with a
// Q8_0 activation row (ggml_vec_dot_q8_0_q8_0).
func dotQ8_0Raw(src []byte, c q8Row) float32 {
	nb := len(c.d)
	if useAVX2 && !c.neg && nb > 0 {
		_, _ = src[nb*34-1], c.qs[nb*32-1]
		return dotQ8_0RawAVX2(&src[0], &c.qs[0], &c.d[0], nb)
	}
	return dotQ8_0RawGo(src, c.qs, c.d, c.neg)
}

// dotQ8_0Rows sets out[r] = dotQ8_0Raw(src[r·stride:], c) for r < nr (the
// rows of a decode tile, one kernel call).
func dotQ8_0Rows(src []byte, stride, nr int, c q8Row, out []float32) {
	nb := len(c.d)
	if useAVX2 && !c.neg && nb > 0 && nr > 0 {
		_, _, _ = src[(nr-1)*stride+nb*34-1], c.qs[nb*32-1], out[nr-1]
		dotQ8_0RowsAVX2(&src[0], stride, &c.qs[0], &c.d[0], nb, nr, &out[0])
		return
	}
	for r := range nr {
		out[r] = dotQ8_0RawGo(src[r*stride:], c.qs, c.d, c.neg)
	}
}

// dotQ4_0Raw is the dot product of a Q4_0 weight row (raw blocks) with a
// Q8_0 activation row (ggml_vec_dot_q4_0_q8_0).
func dotQ4_0Raw(src []byte, c q8Row) float32 {
	nb := len(c.d)
	if useAVX2 && !c.neg && nb > 0 {
		_, _ = src[nb*18-1], c.qs[nb*32-1]
		return dotQ4_0RawAVX2(&src[0], &c.qs[0], &c.d[0], nb)
	}
	return dotQ4_0RawGo(src, c.qs, c.d, c.neg)
}

// dotQ8_0Rawx4 is dotQ8_0Raw of one weight row with four activation rows,
// loading each weight block once.
func dotQ8_0Rawx4(src []byte, c *[4]q8Row, out *[4]float32) {
	nb := len(c[0].d)
	if useAVX2 && nb > 0 && !c[0].neg && !c[1].neg && !c[2].neg && !c[3].neg {
		_ = src[nb*34-1]
		for i := range c {
			_, _ = c[i].qs[nb*32-1], c[i].d[nb-1]
		}
		ptrs := [4]*int8{&c[0].qs[0], &c[1].qs[0], &c[2].qs[0], &c[3].qs[0]}
		ds := [4]*float32{&c[0].d[0], &c[1].d[0], &c[2].d[0], &c[3].d[0]}
		dotQ8_0Rawx4AVX2(&src[0], &ptrs, &ds, nb, out)
		return
	}
	for i := range c {
		out[i] = dotQ8_0RawGo(src, c[i].qs, c[i].d, c[i].neg)
	}
}

// dotQ8_0x2x4 sets out[4r+c] = dotQ8_0Rawx4's out[c] for the Q8_0 rows
// src0, src1 (r = 0, 1) and four activation columns c. dc holds the
// columns' scales as matmul.dc4 lays them out (per block, the four
// columns' float32 scales).
func dotQ8_0x2x4(src0, src1 []byte, c *[4]q8Row, dc []float32, out *[8]float32) {
	q := newQ8x2x4(c, dc)
	q.dot(src0, src1, out)
}

// q8x2x4 is dotQ8_0x2x4 for one group of four activation columns, checked
// once for the many weight row pairs a prefill tile multiplies with it.
type q8x2x4 struct {
	c    *[4]q8Row
	dc   []float32
	ptrs [4]*int8
	nb   int
	asm  bool // the columns suit the assembly kernels
}

func newQ8x2x4(c *[4]q8Row, dc []float32) (q q8x2x4) {
	q.c, q.dc, q.nb = c, dc, len(c[0].d)
	nb := q.nb
	if useAVX2 && nb > 0 && !c[0].neg && !c[1].neg && !c[2].neg && !c[3].neg {
		_ = dc[nb*4-1]
		for i := range c {
			_ = c[i].qs[nb*32-1]
		}
		q.ptrs = [4]*int8{&c[0].qs[0], &c[1].qs[0], &c[2].qs[0], &c[3].qs[0]}
		q.asm = true
	}
	return q
}

// dot is dotQ8_0x2x4(src0, src1, q.c, q.dc, out).
func (q *q8x2x4) dot(src0, src1 []byte, out *[8]float32) {
	if q.asm {
		_, _ = src0[q.nb*34-1], src1[q.nb*34-1]
		if useVNNI {
			dotQ8_0x2x4VNNI(&src0[0], &src1[0], &q.ptrs, &q.dc[0], q.nb, out)
			return
		}
		dotQ8_0x2x4AVX2(&src0[0], &src1[0], &q.ptrs, &q.dc[0], q.nb, out)
		return
	}
	var o [4]float32
	dotQ8_0Rawx4(src0, q.c, &o)
	copy(out[:4], o[:])
	dotQ8_0Rawx4(src1, q.c, &o)
	copy(out[4:], o[:])
}

// rows sets d[c][i+r] = dotQ8_0Raw(src[r·stride:], q.c[c]) for the rows r
// < 2·np: q.dot's pairs in one call (dotQ8_0x2x4RowsAVX2 when the columns
// suit the AVX2 kernel and no VNNI kernel is chosen), storing straight
// into the output columns, without a call, eight stores and the bounds
// checks per pair in Go.
func (q *q8x2x4) rows(src []byte, stride, np int, d *[4][]float32, i int) {
	if np <= 0 {
		return
	}
	if q.asm && !useVNNI {
		_ = src[(2*np-1)*stride+q.nb*34-1]
		var ds [4]*float32
		for c := range ds {
			_ = d[c][i+2*np-1]
			ds[c] = &d[c][i]
		}
		dotQ8_0x2x4RowsAVX2(&src[0], stride, np, &q.ptrs, &q.dc[0], q.nb, &ds)
		return
	}
	for p := range np {
		var o [8]float32
		q.dot(src[2*p*stride:], src[(2*p+1)*stride:], &o)
		for e := range 2 {
			for c := range 4 {
				d[c][i+2*p+e] = o[4*e+c]
			}
		}
	}
}

// dotQ4_0x8 is dotQ4_0x8Go (llama.cpp's repacked q4_0_8x8 order) for eight
// weight rows src[j·stride:] and one activation row.
func dotQ4_0x8(src []byte, stride int, c q8Row, out *[8]float32) {
	nb := len(c.d)
	if useAVX2 && !c.neg && nb > 0 {
		_, _, _ = src[7*stride+nb*18-1], c.qs[nb*32-1], c.sum[nb-1]
		dotQ4_0x8AVX2(&src[0], stride, &c.qs[0], &c.d[0], &c.sum[0], nb, out)
		return
	}
	dotQ4_0x8Go(src, stride, c.qs, c.d, c.neg, out)
}

// dotQ4_0x8x4 is dotQ4_0x8 for four activation rows, expanding each block
// of the eight weight rows once (the tile of ggml_gemm_q4_0_8x8_q8_0).
func dotQ4_0x8x4(src []byte, stride int, c *[4]q8Row, out *[4][8]float32) {
	nb := len(c[0].d)
	if useAVX2 && nb > 0 && !c[0].neg && !c[1].neg && !c[2].neg && !c[3].neg {
		_ = src[7*stride+nb*18-1]
		var a q4x4Args
		for i := range c {
			_, _, _ = c[i].qs[nb*32-1], c[i].d[nb-1], c[i].sum[nb-1]
			a.qs[i], a.d[i], a.sum[i] = &c[i].qs[0], &c[i].d[0], &c[i].sum[0]
		}
		*out = [4][8]float32{}
		dotQ4_0x8x4AVX2(&src[0], stride, &a, nb, out)
		return
	}
	for i := range c {
		dotQ4_0x8Go(src, stride, c[i].qs, c[i].d, c[i].neg, &out[i])
	}
}

// q4x4Args passes the four activation rows to dotQ4_0x8x4AVX2.
type q4x4Args struct {
	qs  [4]*int8
	d   [4]*float32
	sum [4]*int32
}

// dotVec is ggml_vec_dot_f32 (f16 false) or ggml_vec_dot_f16 (f16 true,
// a and b holding values already rounded to F16): the first len&^31
// products through dotVecF32AVX2, the tail as dotVecGo adds it. For F16
// values every product is exact in float32, so the kernel's FMAs give the
// bits of dotVecGo's rounded products and adds.
func dotVec(a, b []float32, f16 bool) float32 {
	n := len(a)
	np := n &^ 31
	if !useAVX2 || np == 0 {
		return dotVecGo(a, b, f16)
	}
	b = b[:n]
	red := dotVecF32AVX2(&a[0], &b[0], np)
	return dotVecTail(red, a, b, np, f16)
}

// dotF32FMA is tinyBLAS's F32 lanes with fused multiply-adds (dotF32FMAGo's
// bits): the first len&^7 products through dotF32FMAAVX2, the tail fused
// in Go.
func dotF32FMA(a, b []float32) float32 {
	n := len(a)
	n8 := n &^ 7
	if !useAVX2 || n8 == 0 {
		return dotF32FMAGo(a, b)
	}
	b = b[:n]
	sum := dotF32FMAAVX2(&a[0], &b[0], n8)
	for i := n8; i < n; i++ {
		sum = fma32(a[i], b[i], sum)
	}
	return sum
}

// dotF32x4FMA computes four dot products of one row a with columns
// b0..b3, each bit for bit dotF32FMA(a, bi), sharing the loads of a.
func dotF32x4FMA(a, b0, b1, b2, b3 []float32) (r0, r1, r2, r3 float32) {
	n := len(a)
	n8 := n &^ 7
	if !useAVX2 || n8 == 0 {
		return dotF32x4FMAGo(a, b0, b1, b2, b3)
	}
	b0, b1, b2, b3 = b0[:n], b1[:n], b2[:n], b3[:n]
	var out [4]float32
	bs := [4]*float32{&b0[0], &b1[0], &b2[0], &b3[0]}
	dotF32x4FMAAVX2(&a[0], &bs, n8, &out)
	r0, r1, r2, r3 = out[0], out[1], out[2], out[3]
	for i := n8; i < n; i++ {
		x := a[i]
		r0 = fma32(x, b0[i], r0)
		r1 = fma32(x, b1[i], r1)
		r2 = fma32(x, b2[i], r2)
		r3 = fma32(x, b3[i], r3)
	}
	return
}

// dotF32x3x4FMA sets out[4r+c] = dotF32FMA(ar, bc) for three rows a0..a2
// and four columns b0..b3 (all of one length), sharing every load between
// the rows and the columns (the register tile of the F16 prefill, whose
// rows are widened to float32 once per tile).
func dotF32x3x4FMA(a0, a1, a2, b0, b1, b2, b3 []float32, out *[12]float32) {
	n := len(a0)
	n8 := n &^ 7
	if !useAVX2 || n8 == 0 {
		dotF32x3x4FMAGo(a0, a1, a2, b0, b1, b2, b3, out)
		return
	}
	a1, a2 = a1[:n], a2[:n]
	b0, b1, b2, b3 = b0[:n], b1[:n], b2[:n], b3[:n]
	as := [3]*float32{&a0[0], &a1[0], &a2[0]}
	bs := [4]*float32{&b0[0], &b1[0], &b2[0], &b3[0]}
	dotF32x3x4FMAAVX2(&as, &bs, n8, out)
	for r, a := range [3][]float32{a0, a1, a2} {
		for i := n8; i < n; i++ {
			x := a[i]
			out[4*r] = fma32(x, b0[i], out[4*r])
			out[4*r+1] = fma32(x, b1[i], out[4*r+1])
			out[4*r+2] = fma32(x, b2[i], out[4*r+2])
			out[4*r+3] = fma32(x, b3[i], out[4*r+3])
		}
	}
}

// dotF32x3x4FMARows sets d[c][i+r] = dotF32FMA(row r of a, b[c]) for
// the rows r < 3·nt of a (row r at a[r·k:(r+1)·k]) and four columns b[c]
// of length k: dotF32x3x4FMA's register tile over nt row triples in one
// call, storing straight into the output columns (the F16 prefill's
// widened rows into dense dst columns), without a call, twelve stores
// and the bounds checks per triple in Go.
func dotF32x3x4FMARows(a []float32, k, nt int, b, d *[4][]float32, i int) {
	if nt <= 0 {
		return
	}
	if !useAVX2 || k <= 0 || k%8 != 0 {
		dotF32x3x4FMARowsGo(a, k, nt, b, d, i)
		return
	}
	_ = a[3*nt*k-1]
	var bs, ds [4]*float32
	for c := range bs {
		_, _ = b[c][k-1], d[c][i+3*nt-1]
		bs[c], ds[c] = &b[c][0], &d[c][i]
	}
	dotF32x3x4FMARowsAVX2(&a[0], k, nt, &bs, &ds)
}

// dotVecF16Raw is dotVec(f16 = true) with a given as raw little-endian
// F16 values, widened on the fly (ggml_vec_dot_f16).
func dotVecF16Raw(a []byte, b []float32) float32 {
	n := len(b)
	np := n &^ 31
	if !useAVX2 || n == 0 {
		return dotVecF16RawGo(a, b)
	}
	_ = a[2*n-1]
	var red float32
	if np > 0 {
		red = dotVecF16RawAVX2(&a[0], &b[0], np)
	}
	if np == n {
		return float32(float64(red))
	}
	// The leftover loop in assembly too: attention heads of 8–31 values
	// (stories260K's KQ products) are all tail.
	return dotVecF16TailAVX2(&a[2*np], &b[np], n-np, red)
}

// dotF32x4 computes four dot products of one row a with columns b0..b3,
// each bit for bit equal to dotF32(a, bi). Sharing the loads of a makes it
// faster when a weight row meets several activation columns.
func dotF32x4(a, b0, b1, b2, b3 []float32) (r0, r1, r2, r3 float32) {
	n := len(a)
	n8 := n &^ 7
	if useAVX2 && n8 > 0 {
		_, _, _, _ = b0[n-1], b1[n-1], b2[n-1], b3[n-1]
		var out [4]float32
		bs := [4]*float32{&b0[0], &b1[0], &b2[0], &b3[0]}
		dotF32x4AVX2(&a[0], &bs, n8, &out)
		r0, r1, r2, r3 = out[0], out[1], out[2], out[3]
		for i := n8; i < n; i++ {
			x := a[i]
			r0 += float32(x * b0[i])
			r1 += float32(x * b1[i])
			r2 += float32(x * b2[i])
			r3 += float32(x * b3[i])
		}
		return
	}
	return dotF32x4Go(a, b0, b1, b2, b3)
}

// dotF16x4 sets out[i] = dotF16F32(a, bi) (tinyBLAS's order for an F16
// row given as raw bytes) for four activation columns, which must hold
// values rounded to F16 (as the matmul rounds them): the assembly fuses
// the exact products into FMAs.
func dotF16x4(a []byte, b0, b1, b2, b3 []float32, out *[4]float32) {
	n := len(b0)
	n8 := n &^ 7
	if useAVX2 && n8 > 0 {
		_, _, _, _, _ = a[2*n-1], b1[n-1], b2[n-1], b3[n-1], b0[n-1]
		bs := [4]*float32{&b0[0], &b1[0], &b2[0], &b3[0]}
		dotF16x4AVX2(&a[0], &bs, n8, out)
		tab := f16tab()
		for i := n8; i < n; i++ {
			x := tab[uint16(a[2*i])|uint16(a[2*i+1])<<8]
			out[0] += float32(x * b0[i])
			out[1] += float32(x * b1[i])
			out[2] += float32(x * b2[i])
			out[3] += float32(x * b3[i])
		}
		return
	}
	out[0], out[1], out[2], out[3] = dotF16F32(a, b0), dotF16F32(a, b1), dotF16F32(a, b2), dotF16F32(a, b3)
}

// dotF16x2x4 is dotF16x4 for two rows (out[4r+c]).
func dotF16x2x4(a0, a1 []byte, b0, b1, b2, b3 []float32, out *[8]float32) {
	n := len(b0)
	n8 := n &^ 7
	if useAVX2 && n8 > 0 {
		_, _, _, _, _, _ = a0[2*n-1], a1[2*n-1], b1[n-1], b2[n-1], b3[n-1], b0[n-1]
		bs := [4]*float32{&b0[0], &b1[0], &b2[0], &b3[0]}
		dotF16x2x4AVX2(&a0[0], &a1[0], &bs, n8, out)
		tab := f16tab()
		for i := n8; i < n; i++ {
			for r, a := range [2][]byte{a0, a1} {
				x := tab[uint16(a[2*i])|uint16(a[2*i+1])<<8]
				out[4*r] += float32(x * b0[i])
				out[4*r+1] += float32(x * b1[i])
				out[4*r+2] += float32(x * b2[i])
				out[4*r+3] += float32(x * b3[i])
			}
		}
		return
	}
	var o [4]float32
	dotF16x4(a0, b0, b1, b2, b3, &o)
	copy(out[:4], o[:])
	dotF16x4(a1, b0, b1, b2, b3, &o)
	copy(out[4:], o[:])
}

// packedQ4Block is the size of one block of eight rows repacked by
// packQ4_0x8 (eight 32-byte nibble vectors and eight float32 scales).
const packedQ4Block = 288

// packQ4_0x8 repacks eight Q4_0 rows (src[j·stride:]) of nb blocks into
// dst (nb·packedQ4Block bytes) for gemmQ4_0x8Packed. Assembly only.
func packQ4_0x8(dst, src []byte, stride, nb int) {
	_, _ = dst[nb*packedQ4Block-1], src[7*stride+nb*18-1]
	packQ4_0x8AVX2(&dst[0], &src[0], stride, nb)
}

// gemmQ4_0x8Packed is dotQ4_0x8x4 on rows repacked by packQ4_0x8: the
// same bits, with the nibbles of a block laid out once per tile instead of
// once per four columns. The activation rows must not hold -128 (q8Row.neg).
func gemmQ4_0x8Packed(p []byte, c *[4]q8Row, out *[4][8]float32) {
	nb := len(c[0].d)
	_ = p[nb*packedQ4Block-1]
	var a q4x4Args
	for i := range c {
		_, _, _ = c[i].qs[nb*32-1], c[i].d[nb-1], c[i].sum[nb-1]
		a.qs[i], a.d[i], a.sum[i] = &c[i].qs[0], &c[i].d[0], &c[i].sum[0]
	}
	gemmQ4_0x8PackedAVX2(&p[0], &a, nb, out)
}

// roundF16Row rounds every value of x to F16 and back in place (roundF16).
func roundF16Row(x []float32) {
	i := 0
	if n8 := len(x) &^ 7; useAVX2 && n8 > 0 {
		roundF16RowAVX2(&x[0], n8)
		i = n8
	}
	for ; i < len(x); i++ {
		x[i] = roundF16(x[i])
	}
}

// f32ToF16Row writes x as little-endian halves into dst (2·len(x) bytes),
// as gguf.F32ToF16 rounds (to nearest even).
func f32ToF16Row(dst []byte, x []float32) {
	i := 0
	if n8 := len(x) &^ 7; useAVX2 && n8 > 0 {
		_ = dst[2*len(x)-1]
		f32ToF16AVX2(&dst[0], &x[0], n8)
		i = n8
	}
	for ; i < len(x); i++ {
		binary.LittleEndian.PutUint16(dst[2*i:], gguf.F32ToF16(x[i]))
	}
}
