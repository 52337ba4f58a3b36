package kernels

// dotF32 returns the float32 dot product of a and b[:len(a)] with a fixed
// summation order: eight lanes (lane j sums the products of indices ≡ j mod
// 8, in order), reduced as x86's 256-bit horizontal sum does ((l0+l4),
// (l1+l5), (l2+l6), (l3+l7); then pairs; then the two halves), then the
// tail elements added one by one. This is the lane structure of llamafile's
// tinyBLAS kernels that llama.cpp's CPU backend uses for F32 and F16
// matmuls on AVX2, without its fused multiply-adds: it is exact for
// operands whose products are exact in float32 (F16 and BF16 values, which
// is how ggml multiplies F16 weights and the F16 KV cache), where an FMA
// and a rounded product plus an add agree. F32 weights need dotF32FMA.
// Every product is rounded to float32 explicitly so that no platform fuses
// it into an FMA, which keeps results bit-identical across architectures.
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

// dotF32x4Go is the pure-Go twin of dotF32x4AVX2 (see dotF32x4).
func dotF32x4Go(a, b0, b1, b2, b3 []float32) (r0, r1, r2, r3 float32) {
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
	r0, r1, r2, r3 = hsum8(&p), hsum8(&q), hsum8(&r), hsum8(&s)
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

// dotVecGo is ggml_vec_dot_f32 (f16 false) or ggml_vec_dot_f16 (f16 true, a
// and b holding values already rounded to F16) of llama.cpp's AVX2 build:
// the kernel ggml's mul_mat uses where llamafile's tinyBLAS declines the
// product, above all for a single activation column (decode: tinyBLAS
// takes only n >= 2) and for inner dimensions that are not a multiple of
// 8. The first len&^31 products go to 32 lanes (index mod 32) accumulated
// with fused multiply-adds; the four 8-lane vectors are reduced as
// (v0+v2)+(v1+v3), the halves added lane-wise and the last four values as
// two horizontal adds, (t0+t1)+(t2+t3). The remaining products are added
// one by one: rounded to float32 and added to the float32 sum for F32
// (measured against llama.cpp's values: not fused), and added to a float64
// sum for F16 (converted to float32 at the end). F16 products are exact in
// float32, so there the lane FMAs are plain adds. dotVecGo is the pure-Go
// twin of the dispatching dotVec (simd.go).
func dotVecGo(a, b []float32, f16 bool) float32 {
	n := len(a)
	b = b[:n]
	np := n &^ 31
	var red float32
	if np > 0 {
		// One 8-lane vector at a time, its lanes in registers: vector k
		// holds indices ≡ 8k+e (mod 32).
		var g [4][8]float32
		for k := range g {
			var s0, s1, s2, s3, s4, s5, s6, s7 float32
			if f16 {
				for i := 8 * k; i < np; i += 32 {
					x := a[i : i+8 : i+8]
					y := b[i : i+8 : i+8]
					s0 += float32(x[0] * y[0])
					s1 += float32(x[1] * y[1])
					s2 += float32(x[2] * y[2])
					s3 += float32(x[3] * y[3])
					s4 += float32(x[4] * y[4])
					s5 += float32(x[5] * y[5])
					s6 += float32(x[6] * y[6])
					s7 += float32(x[7] * y[7])
				}
			} else {
				for i := 8 * k; i < np; i += 32 {
					x := a[i : i+8 : i+8]
					y := b[i : i+8 : i+8]
					s0 = fma32(x[0], y[0], s0)
					s1 = fma32(x[1], y[1], s1)
					s2 = fma32(x[2], y[2], s2)
					s3 = fma32(x[3], y[3], s3)
					s4 = fma32(x[4], y[4], s4)
					s5 = fma32(x[5], y[5], s5)
					s6 = fma32(x[6], y[6], s6)
					s7 = fma32(x[7], y[7], s7)
				}
			}
			g[k] = [8]float32{s0, s1, s2, s3, s4, s5, s6, s7}
		}
		red = reduce32(&g)
	}
	return dotVecTail(red, a, b, np, f16)
}

// reduce32 is GGML_F32_VEC_REDUCE on AVX: the four 8-lane accumulators
// added as (g0+g2)+(g1+g3), then the two 128-bit halves, then two
// horizontal adds.
func reduce32(g *[4][8]float32) float32 {
	var v [8]float32
	for e := range v {
		v[e] = (g[0][e] + g[2][e]) + (g[1][e] + g[3][e])
	}
	t0, t1, t2, t3 := v[0]+v[4], v[1]+v[5], v[2]+v[6], v[3]+v[7]
	return (t0 + t1) + (t2 + t3)
}

// dotVecF16RawGo is dotVec(f16 = true) with a given as raw little-endian
// F16 values, widened on the fly; the pure-Go twin of dotVecF16RawAVX2.
func dotVecF16RawGo(a []byte, b []float32) float32 {
	tab := f16tab()
	n := len(b)
	a = a[:2*n]
	np := n &^ 31
	var red float32
	if np > 0 {
		var g [4][8]float32
		for k := range g {
			var s0, s1, s2, s3, s4, s5, s6, s7 float32
			for i := 8 * k; i < np; i += 32 {
				x := a[2*i : 2*i+16 : 2*i+16]
				y := b[i : i+8 : i+8]
				s0 += float32(tab[uint16(x[0])|uint16(x[1])<<8] * y[0])
				s1 += float32(tab[uint16(x[2])|uint16(x[3])<<8] * y[1])
				s2 += float32(tab[uint16(x[4])|uint16(x[5])<<8] * y[2])
				s3 += float32(tab[uint16(x[6])|uint16(x[7])<<8] * y[3])
				s4 += float32(tab[uint16(x[8])|uint16(x[9])<<8] * y[4])
				s5 += float32(tab[uint16(x[10])|uint16(x[11])<<8] * y[5])
				s6 += float32(tab[uint16(x[12])|uint16(x[13])<<8] * y[6])
				s7 += float32(tab[uint16(x[14])|uint16(x[15])<<8] * y[7])
			}
			g[k] = [8]float32{s0, s1, s2, s3, s4, s5, s6, s7}
		}
		red = reduce32(&g)
	}
	return dotVecF16Tail(a, b, np, red)
}

// dotVecF16Tail adds the products from index np on to the reduced lanes
// red in float64, as ggml_vec_dot_f16's leftover loop does.
func dotVecF16Tail(a []byte, b []float32, np int, red float32) float32 {
	tab := f16tab()
	n := len(b)
	a = a[:2*n]
	sum := float64(red)
	for i := np; i < n; i++ {
		sum += float64(tab[uint16(a[2*i])|uint16(a[2*i+1])<<8] * b[i])
	}
	return float32(sum)
}

// dotF32FMAGo is dotF32 with tinyBLAS's fused multiply-adds (lane j =
// fma(a[i], b[i], lane j)), the tail also fused: bit for bit what
// llamafile's tinyBLAS computes for F32 weights on AVX2 (it takes only
// inner dimensions that are multiples of 8, so there is no tail there).
// The pure-Go twin of dotF32FMA (simd.go).
func dotF32FMAGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	for len(a) >= 8 {
		x := a[:8:8]
		y := b[:8:8]
		s0 = fma32(x[0], y[0], s0)
		s1 = fma32(x[1], y[1], s1)
		s2 = fma32(x[2], y[2], s2)
		s3 = fma32(x[3], y[3], s3)
		s4 = fma32(x[4], y[4], s4)
		s5 = fma32(x[5], y[5], s5)
		s6 = fma32(x[6], y[6], s6)
		s7 = fma32(x[7], y[7], s7)
		a = a[8:]
		b = b[8:]
	}
	t0, t1, t2, t3 := s0+s4, s1+s5, s2+s6, s3+s7
	sum := (t0 + t2) + (t1 + t3)
	b = b[:len(a)]
	for i, x := range a {
		sum = fma32(x, b[i], sum)
	}
	return sum
}

// dotF32x4FMAGo is dotF32x4 with fused multiply-adds: each result bit for
// bit dotF32FMA(a, bi). The pure-Go twin of dotF32x4FMA (simd.go).
func dotF32x4FMAGo(a, b0, b1, b2, b3 []float32) (r0, r1, r2, r3 float32) {
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
			p[j] = fma32(xj, y0[j], p[j])
			q[j] = fma32(xj, y1[j], q[j])
			r[j] = fma32(xj, y2[j], r[j])
			s[j] = fma32(xj, y3[j], s[j])
		}
	}
	r0, r1, r2, r3 = hsum8(&p), hsum8(&q), hsum8(&r), hsum8(&s)
	for ; i < n; i++ {
		x := a[i]
		r0 = fma32(x, b0[i], r0)
		r1 = fma32(x, b1[i], r1)
		r2 = fma32(x, b2[i], r2)
		r3 = fma32(x, b3[i], r3)
	}
	return
}

// dotVecTail adds the leftover products a[i]·b[i], i in [np, len(a)), to
// red, the reduction of the first np, as ggml_vec_dot_f16 (f16: each
// product rounded to float32, summed in float64 from red) or
// ggml_vec_dot_f32 (in float32) does after its SIMD loop.
func dotVecTail(red float32, a, b []float32, np int, f16 bool) float32 {
	n := len(a)
	if f16 {
		sum := float64(red)
		for i := np; i < n; i++ {
			sum += float64(a[i] * b[i])
		}
		return float32(sum)
	}
	for i := np; i < n; i++ {
		red += float32(a[i] * b[i])
	}
	return red
}

// dotF32x3x4FMAGo is the pure-Go twin of dotF32x3x4FMA: dotF32x4FMAGo per
// row.
func dotF32x3x4FMAGo(a0, a1, a2, b0, b1, b2, b3 []float32, out *[12]float32) {
	for r, a := range [3][]float32{a0, a1, a2} {
		out[4*r], out[4*r+1], out[4*r+2], out[4*r+3] = dotF32x4FMAGo(a, b0, b1, b2, b3)
	}
}

// dotF32x3x4FMARowsGo is the pure-Go twin of dotF32x3x4FMARows.
func dotF32x3x4FMARowsGo(a []float32, k, nt int, b, d *[4][]float32, i int) {
	for t := range nt {
		var o [12]float32
		r := 3 * t * k
		dotF32x3x4FMAGo(a[r:r+k], a[r+k:r+2*k], a[r+2*k:r+3*k], b[0][:k], b[1][:k], b[2][:k], b[3][:k], &o)
		for e := range 3 {
			for c := range 4 {
				d[c][i+3*t+e] = o[4*e+c]
			}
		}
	}
}
