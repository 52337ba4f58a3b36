package kernels

import "math"

// The single-precision math functions of GNU libc (2.28 and later, the
// algorithms of Arm's optimized-routines) that ggml-cpu calls through the C
// library, evaluated as glibc's x86-64 build evaluates them. They are not
// correctly rounded: glibc's expf rounds about 170,000 of the 2^32 inputs
// the other way (its source comment says so), and sinf/cosf likewise differ
// from the nearest float now and then. llama.cpp's Linux x86-64 builds take
// these functions from glibc, so a RoPE angle or a softmax tail value on
// which glibc's result is not the nearest float must get glibc's result
// here too, or the next rounding (an F16 KV cell, a Q8 activation) can go
// the other way. The constants are those of glibc's
// sysdeps/ieee754/flt-32/{s_sincosf_data.c,e_exp2f_data.c}; both
// functions compute in float64 and round once to float32 at the end.
// kernels' tests compare them with the host's libm on every float32 where
// cgo is available (TestLibmMatchesHost) and with stored glibc results
// everywhere (TestLibmGolden).

// sincosfTable is glibc's sincos_t pair: quadrant signs, 2/π·2^24, π/2,
// the cosine polynomial c0..c4 and the sine polynomial s1..s3. The second
// entry has the cosine polynomial negated (quadrants 2 and 3).
type sincosfTable struct {
	sign           [4]float64
	hpiInv, hpi    float64
	c0, c1, c2, c3 float64
	c4, s1, s2, s3 float64
}

var sincosfTables = [2]sincosfTable{
	{[4]float64{1, -1, -1, 1}, 0x1.45F306DC9C883p+23, 0x1.921FB54442D18p0,
		0x1p0, -0x1.ffffffd0c621cp-2, 0x1.55553e1068f19p-5, -0x1.6c087e89a359dp-10,
		0x1.99343027bf8c3p-16, -0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
	{[4]float64{1, -1, -1, 1}, 0x1.45F306DC9C883p+23, 0x1.921FB54442D18p0,
		-0x1p0, 0x1.ffffffd0c621cp-2, -0x1.55553e1068f19p-5, 0x1.6c087e89a359dp-10,
		-0x1.99343027bf8c3p-16, -0x1.555545995a603p-3, 0x1.1107605230bc4p-7, -0x1.994eb3774cf24p-13},
}

// invPio4 is 4/π to 192 bits, 8 new bits per entry (glibc's __inv_pio4).
var invPio4 = [24]uint32{
	0xa2, 0xa2f9, 0xa2f983, 0xa2f9836e,
	0xf9836e4e, 0x836e4e44, 0x6e4e4415, 0x4e441529,
	0x441529fc, 0x1529fc27, 0x29fc2757, 0xfc2757d1,
	0x2757d1f5, 0x57d1f534, 0xd1f534dd, 0xf534ddc0,
	0x34ddc0db, 0xddc0db62, 0xc0db6295, 0xdb629599,
	0x6295993c, 0x95993c43, 0x993c4390, 0x3c439041,
}

// abstop12 is the top 12 bits of |x|'s encoding (exponent and 3 mantissa
// bits), the cheap magnitude test of glibc's float functions.
func abstop12(x float32) uint32 { return math.Float32bits(x) >> 20 & 0x7ff }

// sincosf returns glibc's sinf(x) and cosf(x) (sincosf: gcc turns ggml's
// cosf/sinf pair of one angle into one sincosf call; the three functions
// share the polynomials and give the same bits). The polynomial's a·b + c
// steps are fused, as gcc compiles glibc's FMA variant (the one x86-64
// CPUs with FMA run).
func sincosf(y float32) (sin, cos float32) {
	const (
		topPio4 = 0x3f4 // abstop12(float32(π/4))
		topTiny = 0x398 // abstop12(0x1p-12)
		top120  = 0x42f // abstop12(120)
		topInf  = 0x7f8 // abstop12(+Inf)
	)
	x := float64(y)
	p := &sincosfTables[0]
	t := abstop12(y)
	switch {
	case t < topPio4:
		if t < topTiny {
			return y, 1
		}
		return sincosfPoly(x, x*x, p, 0)
	case t < top120:
		// One multiply-subtract: 2/π is prescaled by 2^24 so that the
		// quadrant lands in bits 24..31 of the truncated product.
		r := x * p.hpiInv
		n := (int32(r) + 0x800000) >> 24
		x = math.FMA(-float64(n), p.hpi, x)
		s := p.sign[n&3]
		if n&2 != 0 {
			p = &sincosfTables[1]
		}
		return sincosfPoly(x*s, x*x, p, int(n))
	case t < topInf:
		xi := math.Float32bits(y)
		sign := int(xi >> 31)
		var n int
		x, n = sincosfReduceLarge(xi)
		s := p.sign[(n+sign)&3]
		if (n+sign)&2 != 0 {
			p = &sincosfTables[1]
		}
		return sincosfPoly(x*s, x*x, p, n)
	}
	nan := y - y
	return nan, nan
}

// sincosfReduceLarge reduces |x| ≥ 120 (xi its encoding; the sign is
// ignored) modulo π/2 with a 32×96-bit product by 4/π, returning the
// remainder in [-π/4, π/4] and the quadrant.
func sincosfReduceLarge(xi uint32) (float64, int) {
	arr := invPio4[(xi>>26)&15:]
	shift := (xi >> 23) & 7
	xi = (xi&0xffffff | 0x800000) << shift
	res0 := uint64(xi * arr[0]) // a 32-bit product: only its low word counts
	res1 := uint64(xi) * uint64(arr[4])
	res2 := uint64(xi) * uint64(arr[8])
	res0 = res2>>32 | res0<<32
	res0 += res1
	n := (res0 + 1<<61) >> 62
	res0 -= n << 62
	return float64(int64(res0)) * 0x1.921FB54442D18p-62, int(n)
}

// sincosfPoly evaluates the sine and cosine polynomials at x (x2 = x²),
// swapped in odd quadrants n.
func sincosfPoly(x, x2 float64, p *sincosfTable, n int) (sin, cos float32) {
	x4 := x2 * x2
	x3 := x2 * x
	c2 := math.FMA(x2, p.c4, p.c3)
	s1 := math.FMA(x2, p.s3, p.s2)
	c1 := math.FMA(x2, p.c1, p.c0)
	x5 := x3 * x2
	x6 := x4 * x2
	s := math.FMA(x3, p.s1, x)
	c := math.FMA(x4, p.c2, c1)
	sv := float32(math.FMA(x5, s1, s))
	cv := float32(math.FMA(x6, c2, c))
	if n&1 != 0 {
		return cv, sv
	}
	return sv, cv
}

// exp2fTable holds 2^(i/32) as float64 encodings minus i<<47 (glibc's
// __exp2f_data.tab), so that adding k<<47 scales by 2^(k/32).
var exp2fTable = [32]uint64{
	0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
	0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
	0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
	0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
	0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
	0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
	0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
	0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
}

// expf is glibc's expf: x·32/ln2 = k + r, 2^(k/32) from the table, a
// cubic in r for 2^(r/32), one rounding to float32 at the end.
func expf(x float32) float32 {
	const (
		invLn2N = 0x1.71547652b82fep+0 * 32
		shift   = 0x1.8p+52
		c0      = 0x1.c6af84b912394p-5 / 32 / 32 / 32
		c1      = 0x1.ebfce50fac4f3p-3 / 32 / 32
		c2      = 0x1.62e42ff0c52d6p-1 / 32
	)
	ux := math.Float32bits(x)
	if at := ux >> 20 & 0x7ff; at >= 0x42b { // |x| >= 88, or NaN
		switch {
		case ux == 0xff800000: // -Inf
			return 0
		case at >= 0x7f8: // +Inf, NaN
			return x + x
		case x > 0x1.62e42ep6: // above log(2^128)
			return float32(math.Inf(1))
		case x < -0x1.9fe368p6: // below log(2^-150)
			return 0
		}
	}
	// z = x·32/ln2 is not rounded on its own: gcc fuses its product into
	// both of its uses (the rounding to an integer k and the remainder r),
	// as the host comparison shows on every float32.
	xd := float64(x)
	kd := math.FMA(invLn2N, xd, shift) // k in the low bits (ties to even)
	ki := math.Float64bits(kd)
	kd -= shift
	r := math.FMA(invLn2N, xd, -kd)
	t := exp2fTable[ki%32] + ki<<(52-5)
	s := math.Float64frombits(t)
	zz := math.FMA(c0, r, c1)
	r2 := r * r
	y := math.FMA(c2, r, 1)
	y = math.FMA(zz, r2, y)
	return float32(y * s)
}

// powfLog2Table holds glibc's 1/c and log2(c) for the 16 subintervals of
// [0x3f330000, 2·0x3f330000) (as float32 encodings) that powf's log2 uses.
var powfLog2Table = [16][2]float64{
	{0x1.661ec79f8f3bep+0, -0x1.efec65b963019p-2},
	{0x1.571ed4aaf883dp+0, -0x1.b0b6832d4fca4p-2},
	{0x1.49539f0f010bp+0, -0x1.7418b0a1fb77bp-2},
	{0x1.3c995b0b80385p+0, -0x1.39de91a6dcf7bp-2},
	{0x1.30d190c8864a5p+0, -0x1.01d9bf3f2b631p-2},
	{0x1.25e227b0b8eap+0, -0x1.97c1d1b3b7afp-3},
	{0x1.1bb4a4a1a343fp+0, -0x1.2f9e393af3c9fp-3},
	{0x1.12358f08ae5bap+0, -0x1.960cbbf788d5cp-4},
	{0x1.0953f419900a7p+0, -0x1.a6f9db6475fcep-5},
	{0x1p+0, 0},
	{0x1.e608cfd9a47acp-1, 0x1.338ca9f24f53dp-4},
	{0x1.ca4b31f026aap-1, 0x1.476a9543891bap-3},
	{0x1.b2036576afce6p-1, 0x1.e840b4ac4e4d2p-3},
	{0x1.9c2d163a1aa2dp-1, 0x1.40645f0c6651cp-2},
	{0x1.886e6037841edp-1, 0x1.88e9c2c1b9ff8p-2},
	{0x1.767dcf5534862p-1, 0x1.ce0a44eb17bccp-2},
}

// powfLog2 is log2 of the float32 encoded by ix (a positive normal value,
// or a subnormal one normalised to a negative biased exponent) in float64.
func powfLog2(ix uint32) float64 {
	const (
		off = 0x3f330000
		a0  = 0x1.27616c9496e0bp-2
		a1  = -0x1.71969a075c67ap-2
		a2  = 0x1.ec70a6ca7baddp-2
		a3  = -0x1.7154748bef6c8p-1
		a4  = 0x1.71547652ab82bp0
	)
	tmp := ix - off
	i := (tmp >> (23 - 4)) % 16
	top := tmp & 0xff800000
	iz := ix - top
	k := int32(top) >> 23
	invc, logc := powfLog2Table[i][0], powfLog2Table[i][1]
	z := float64(math.Float32frombits(iz))
	r := math.FMA(z, invc, -1)
	y0 := logc + float64(k)
	r2 := r * r
	y := math.FMA(a0, r, a1)
	p := math.FMA(a2, r, a3)
	r4 := r2 * r2
	q := math.FMA(a4, r, y0)
	q = math.FMA(p, r2, q)
	return math.FMA(y, r4, q)
}

// powfExp2 is 2^xd (|xd| < 150) with the sign of signBias, rounded once to
// float32.
func powfExp2(xd float64, signBias uint64) float32 {
	const (
		shift = 0x1.8p+52 / 32
		c0    = 0x1.c6af84b912394p-5
		c1    = 0x1.ebfce50fac4f3p-3
		c2    = 0x1.62e42ff0c52d6p-1
	)
	kd := xd + shift
	ki := math.Float64bits(kd)
	kd -= shift
	r := xd - kd
	t := exp2fTable[ki%32] + (ki+signBias)<<(52-5)
	s := math.Float64frombits(t)
	z := math.FMA(c0, r, c1)
	r2 := r * r
	y := math.FMA(c2, r, 1)
	y = math.FMA(z, r2, y)
	return float32(y * s)
}

// powfCheckInt reports whether the finite non-zero float32 encoded by iy is
// not an integer (0), an odd integer (1) or an even one (2).
func powfCheckInt(iy uint32) int {
	e := iy >> 23 & 0xff
	switch {
	case e < 0x7f:
		return 0
	case e > 0x7f+23:
		return 2
	case iy&(1<<(0x7f+23-e)-1) != 0:
		return 0
	case iy&(1<<(0x7f+23-e)) != 0:
		return 1
	}
	return 2
}

// Powf is C's powf(x, y) as GNU libc computes it (see powf): the value
// ggml's host code gets for RoPE's theta_scale = powf(freq_base, -2/n_dims).
func Powf(x, y float32) float32 { return powf(x, y) }

// zeroInfNaN reports ±0, ±Inf or NaN.
func zeroInfNaN(i uint32) bool { return 2*i-1 >= 2*0x7f800000-1 }

// powf is glibc's powf: log2(x) in float64 from a 16-entry table and a
// degree-5 polynomial, times y, then 2^ that from expf's table, rounded
// once. Special cases follow C99 Annex F (NaN for a negative x with a
// non-integer y).
func powf(x, y float32) float32 {
	const signBias = 1 << (5 + 11)
	var sb uint64
	ix, iy := math.Float32bits(x), math.Float32bits(y)
	if ix-0x00800000 >= 0x7f800000-0x00800000 || zeroInfNaN(iy) {
		// x is subnormal, zero, negative, Inf or NaN, or y is 0, Inf or NaN.
		if zeroInfNaN(iy) {
			switch {
			case 2*iy == 0:
				return 1
			case ix == 0x3f800000:
				return 1
			case 2*ix > 2*0x7f800000 || 2*iy > 2*0x7f800000:
				return x + y
			case 2*ix == 2*0x3f800000:
				return 1
			case (2*ix < 2*0x3f800000) == (iy&0x80000000 == 0):
				return 0 // |x| < 1 and y = +Inf, or |x| > 1 and y = -Inf
			}
			return y * y
		}
		if zeroInfNaN(ix) {
			x2 := x * x
			if ix&0x80000000 != 0 && powfCheckInt(iy) == 1 {
				x2 = -x2
			}
			if iy&0x80000000 != 0 {
				return 1 / x2
			}
			return x2
		}
		// x and y are non-zero and finite.
		if ix&0x80000000 != 0 {
			switch powfCheckInt(iy) {
			case 0:
				return float32(math.NaN())
			case 1:
				sb = signBias
			}
			ix &= 0x7fffffff
		}
		if ix < 0x00800000 {
			// Normalise a subnormal x: the exponent goes negative.
			ix = math.Float32bits(math.Float32frombits(ix)*0x1p23)&0x7fffffff - 23<<23
		}
	}
	ylogx := float64(y) * powfLog2(ix)
	if math.Float64bits(ylogx)>>47&0xffff >= math.Float64bits(126.0)>>47 {
		// |y·log2(x)| >= 126.
		neg := sb != 0
		switch {
		case ylogx > 0x1.fffffffd1d571p+6: // overflow
			return signed(float32(math.Inf(1)), neg)
		case ylogx <= -150.0: // underflow to zero
			return signed(0, neg)
		case ylogx < -149.0:
			// glibc's __math_may_uflowf: 0x1.4p-75f squared, which
			// rounds to the smallest subnormal.
			return signed(0x1p-149, neg)
		}
	}
	return powfExp2(ylogx, sb)
}

// signed returns v, negated when neg.
func signed(v float32, neg bool) float32 {
	if neg {
		return -v
	}
	return v
}
