package kernels

// dotF32 returns the float32 dot product of a and b[:len(a)] with a fixed
// summation order: eight lanes (lane j sums the products of indices ≡ j mod
// 8, in order), reduced as x86's 256-bit horizontal sum does ((l0+l4),
// (l1+l5), (l2+l6), (l3+l7); then pairs; then the two halves), then the
// tail elements added one by one. This is the lane structure of llamafile's
// tinyBLAS kernels that llama.cpp's CPU backend uses for F32 and F16
// matmuls on AVX2, without the fused multiply-adds. Every product is rounded
// to float32 explicitly so that no platform fuses it into an FMA, which
// keeps results bit-identical across architectures.
func dotF32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	for len(a) >= 8 {
		x := a[:8:8]
		y := b[:8:8]
		s0 += float32(x[0] * y[0])
		s1 += float32(x[1] * y[1])
		s2 += float32(x[2] * y[2])
		s3 += float32(x[3] * y[3])
		s4 += float32(x[4] * y[4])
		s5 += float32(x[5] * y[5])
		s6 += float32(x[6] * y[6])
		s7 += float32(x[7] * y[7])
		a = a[8:]
		b = b[8:]
	}
	t0, t1, t2, t3 := s0+s4, s1+s5, s2+s6, s3+s7
	sum := (t0 + t2) + (t1 + t3)
	b = b[:len(a)]
	for i, x := range a {
		sum += float32(x * b[i])
	}
	return sum
}

// dotF32x4 computes four dot products of one row a with columns b0..b3,
// each bit for bit equal to dotF32(a, bi). Sharing the loads of a makes it
// faster when a weight row meets several activation columns.
func dotF32x4(a, b0, b1, b2, b3 []float32) (r0, r1, r2, r3 float32) {
	n := len(a)
	b0, b1, b2, b3 = b0[:n], b1[:n], b2[:n], b3[:n]
	var p, q, r, s [8]float32
	i := 0
	for ; i+8 <= n; i += 8 {
		x := a[i : i+8 : i+8]
		y0 := b0[i : i+8 : i+8]
		y1 := b1[i : i+8 : i+8]
		y2 := b2[i : i+8 : i+8]
		y3 := b3[i : i+8 : i+8]
		for j := range 8 {
			xj := x[j]
			p[j] += float32(xj * y0[j])
			q[j] += float32(xj * y1[j])
			r[j] += float32(xj * y2[j])
			s[j] += float32(xj * y3[j])
		}
	}
	red := func(l *[8]float32) float32 {
		t0, t1, t2, t3 := l[0]+l[4], l[1]+l[5], l[2]+l[6], l[3]+l[7]
		return (t0 + t2) + (t1 + t3)
	}
	r0, r1, r2, r3 = red(&p), red(&q), red(&r), red(&s)
	for ; i < n; i++ {
		x := a[i]
		r0 += float32(x * b0[i])
		r1 += float32(x * b1[i])
		r2 += float32(x * b2[i])
		r3 += float32(x * b3[i])
	}
	return
}

// dotF16F32 is dotF32 with a given as raw little-endian F16 values, widened
// on the fly: the same lanes and order, so bit for bit dotF32 of the
// widened row. It saves converting a weight row that meets a single
// activation column.
func dotF16F32(a []byte, b []float32) float32 {
	tab := f16tab()
	n := len(b)
	a = a[:2*n]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	for len(b) >= 8 {
		x := a[:16:16]
		y := b[:8:8]
		s0 += float32(tab[uint16(x[0])|uint16(x[1])<<8] * y[0])
		s1 += float32(tab[uint16(x[2])|uint16(x[3])<<8] * y[1])
		s2 += float32(tab[uint16(x[4])|uint16(x[5])<<8] * y[2])
		s3 += float32(tab[uint16(x[6])|uint16(x[7])<<8] * y[3])
		s4 += float32(tab[uint16(x[8])|uint16(x[9])<<8] * y[4])
		s5 += float32(tab[uint16(x[10])|uint16(x[11])<<8] * y[5])
		s6 += float32(tab[uint16(x[12])|uint16(x[13])<<8] * y[6])
		s7 += float32(tab[uint16(x[14])|uint16(x[15])<<8] * y[7])
		a = a[16:]
		b = b[8:]
	}
	t0, t1, t2, t3 := s0+s4, s1+s5, s2+s6, s3+s7
	sum := (t0 + t2) + (t1 + t3)
	a = a[:2*len(b)]
	for i, y := range b {
		sum += float32(tab[uint16(a[2*i])|uint16(a[2*i+1])<<8] * y)
	}
	return sum
}
