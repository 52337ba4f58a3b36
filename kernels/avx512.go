package kernels

// Dispatch of the AVX-512 prefill tiles (avx512_amd64.s). Each gives, per
// output element, the bits of the AVX2 tile it widens and of that tile's
// pure-Go twin (avx512_test.go compares them).

// dotF32x6x4FMA sets out[4r+c] = dotF32FMA(ar, bc) for six rows a[r] and
// four columns b[c], all of one length: dotF32x3x4FMA for two row triples
// in one pass over the columns.
func dotF32x6x4FMA(a *[6][]float32, b *[4][]float32, out *[24]float32) {
	n := len(a[0])
	n8 := n &^ 7
	if !useAVX512 || n8 == 0 {
		var o [12]float32
		for h := range 2 {
			dotF32x3x4FMA(a[3*h], a[3*h+1], a[3*h+2], b[0], b[1], b[2], b[3], &o)
			copy(out[12*h:12*h+12], o[:])
		}
		return
	}
	var as [6]*float32
	for r := range a {
		_ = a[r][n-1]
		as[r] = &a[r][0]
	}
	var bs [4]*float32
	for c := range b {
		_ = b[c][n-1]
		bs[c] = &b[c][0]
	}
	dotF32x6x4FMAAVX512(&as, &bs, n8, out)
	for r := range a {
		ar := a[r][:n]
		for i := n8; i < n; i++ {
			x := ar[i]
			for c := range 4 {
				out[4*r+c] = fma32(x, b[c][i], out[4*r+c])
			}
		}
	}
}

// q8NegLaneSums writes, for one activation column of Q8_0 values qs (nb
// blocks) that is column cc (0..3) of its group of four, -128 times the
// sum of each four consecutive values into ns at ns[32b+8cc+l] (block b,
// lane l): the per-lane correction dotQ8_0x4x4AVX512 starts each block's
// sums from.
func q8NegLaneSums(qs []int8, cc int, ns []int32) {
	nb := len(qs) / 32
	if nb == 0 {
		return
	}
	_ = ns[32*(nb-1)+8*cc+7]
	for b := range nb {
		q := qs[32*b : 32*b+32 : 32*b+32]
		o := ns[32*b+8*cc : 32*b+8*cc+8 : 32*b+8*cc+8]
		for l := range o {
			o[l] = -128 * (int32(q[4*l]) + int32(q[4*l+1]) + int32(q[4*l+2]) + int32(q[4*l+3]))
		}
	}
}

// dot4 sets out[4r+c] = dotQ8_0Rawx4's out[c] for the four Q8_0 rows at
// src[r·stride:] (r = 0..3) and q's columns, ns holding their
// q8NegLaneSums (per block 32 values).
func (q *q8x2x4) dot4(src []byte, stride int, ns []int32, out *[16]float32) {
	if useAVX512 && q.asm && q.nb > 0 {
		_, _ = src[3*stride+q.nb*34-1], ns[q.nb*32-1]
		dotQ8_0x4x4AVX512(&src[0], stride, &q.ptrs, &ns[0], &q.dc[0], q.nb, out)
		return
	}
	var o [8]float32
	for h := range 2 {
		q.dot(src[2*h*stride:], src[(2*h+1)*stride:], &o)
		copy(out[8*h:8*h+8], o[:])
	}
}
