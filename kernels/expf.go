package kernels

import "math"

// fma32 is a float32 fused multiply-add (a*b + c rounded once), as the
// FMA instructions of ggml's AVX2 code compute it: the product is exact in
// float64 and fmaQ rounds the sum once, correcting the double rounding at
// float32 midpoints of the normal range. Results below 2^-126 (float32
// subnormals) are rounded twice, which can differ from a true FMA by one
// subnormal ulp; fmaRound handles those too.
func fma32(a, b, c float32) float32 {
	return fmaQ(float64(a)*float64(b), float64(c))
}

// fmaRound returns p + c rounded once to float32, where p is an exact
// product (of two float32 values, or of a float32 and an integer below
// 2^29) and c a float32 value: a single-precision FMA. The float64 sum
// p + c is rounded once there; rounding it again to float32 gives the
// correctly rounded result unless the float64 sum lies exactly halfway
// between two float32 values without the exact sum being there (double
// rounding), which fmaRoundSlow resolves. The test on the low 29 bits
// finds every float32 midpoint of the normal range; sums below 2^-126
// (float32 subnormals, where midpoints sit elsewhere) all take the slow
// path.
func fmaRound(p, c float64) float32 {
	s := p + c
	if b := math.Float64bits(s); b&(1<<29-1) != 1<<28 && b&(0x7ff<<52) >= 897<<52 {
		return float32(s)
	}
	return fmaRoundSlow(p, c, s)
}

// fmaQ is fmaRound without the subnormal range: exact for the quantised
// dot products, whose sums are never below 2^-71 in magnitude (products of
// F16 scales and integers), so only the normal-range midpoint test is
// needed; the correction is inlined:
// when s is a midpoint and the addition was inexact, s moves one float64
// ulp toward the exact sum. Small enough to be inlined.
func fmaQ(p, c float64) float32 {
	s := p + c
	if u := math.Float64bits(s); u<<35 == 1<<63 {
		bb := s - p
		if e := (p - (s - bb)) + (c - bb); e != 0 {
			// One ulp away from zero when e has the sign of s, else
			// toward zero (s is not zero: its bit 28 is set).
			s = math.Float64frombits(u + 1 - (math.Float64bits(e)^u)>>63<<1)
		}
	}
	return float32(s)
}

// fmaRoundSlow is fmaRound's careful path: if s = fl64(p + c) is a float32
// midpoint and the float64 addition was inexact, s is moved one float64
// ulp toward the exact sum (TwoSum's error term), so that the final
// rounding goes the way the exact sum does.
func fmaRoundSlow(p, c, s float64) float32 {
	r := float32(s)
	if float64(r) == s || math.IsNaN(s) || math.IsInf(s, 0) {
		return r
	}
	// The float32 neighbour of r on the side of s, and their midpoint.
	var mid float64
	if math.IsInf(float64(r), 0) {
		mid = math.Copysign(math.MaxFloat32+0x1p103, s)
	} else {
		n := math.Nextafter32(r, float32(math.Copysign(math.Inf(1), s-float64(r))))
		mid = (float64(r) + float64(n)) / 2
	}
	if s != mid {
		return r
	}
	bb := s - p
	e := (p - (s - bb)) + (c - bb)
	if e == 0 {
		return r
	}
	return float32(math.Nextafter(s, math.Copysign(math.Inf(1), e)))
}

// vexpf is ggml's vectorised expf for AVX2+FMA (ggml_v_expf, "adapted from
// ARM's optimized routines"; max error about 1.5 ulp), evaluated one lane
// at a time with the same operations: x = n·ln2 + b with n from the
// 1.5·2^23 rounding trick, a degree-5 polynomial in b, and the scale 2^n
// built in the exponent bits, with the special path for |n| > 126. llama.cpp's
// x86 build uses it for soft_max and silu on all but the last len%8 values
// of a row, so reproducing it keeps rounding flips (and through them the
// F16 KV cache and Q8 activations) in step with llama.cpp.
func vexpf(x float32) float32 {
	const (
		r      = float32(0x1.8p23)
		log2e  = float32(0x1.715476p+0)
		ln2hi  = float32(0x1.62e4p-1)
		ln2lo  = float32(0x1.7f7d1cp-20)
		c5     = float32(0x1.0e4020p-7)
		c4     = float32(0x1.573e2ep-5)
		c3     = float32(0x1.555e66p-3)
		c2     = float32(0x1.fffdb6p-2)
		c1     = float32(0x1.ffffecp-1)
		oneBit = uint32(0x3f800000)
	)
	z := fma32(x, log2e, r)
	n := z - r
	b := fma32(-n, ln2lo, fma32(-n, ln2hi, x))
	e := math.Float32bits(z) << 23
	k := math.Float32frombits(e + oneBit)
	u := b * b
	j := fma32(fma32(fma32(c5, b, c4), u, fma32(c3, b, c2)), u, c1*b)
	an := abs32(n)
	if !(an > 126) {
		return fma32(j, k, k)
	}
	var g uint32
	if n <= 0 {
		g = 0x82000000
	}
	s1 := math.Float32frombits(g + 0x7f000000)
	s2 := math.Float32frombits(e - g)
	if an > 192 {
		return s1 * s1
	}
	return fma32(s2, j, s2) * s1
}

// siluRow is ggml_vec_silu_f32 on x86 with AVX2: x/(1 + vexpf(-x)) for the
// first len&^7 values, x/(1 + expf(-x)) for the rest. out may alias x.
func siluRow(out, x []float32) {
	n := len(x) &^ 7
	if useAVX2 && n > 0 {
		_ = out[len(x)-1]
		siluAVX2(&out[0], &x[0], n)
		for i := n; i < len(x); i++ {
			out[i] = silu(x[i])
		}
		return
	}
	siluRowGo(out, x)
}

// siluRowGo is the pure-Go twin of siluAVX2 (siluRow).
func siluRowGo(out, x []float32) {
	n := len(x) &^ 7
	for i := 0; i < n; i++ {
		out[i] = x[i] / (1 + vexpf(0-x[i]))
	}
	for i := n; i < len(x); i++ {
		out[i] = silu(x[i])
	}
}

var (
	negInf32 = float32(math.Inf(-1))
	// vexpfNegInf is vexpf(-Inf) (which is +0), looked up for the
	// masked entries of a soft_max row instead of evaluated.
	vexpfNegInf = vexpf(negInf32)
)

// softmaxExpSum is ggml_vec_soft_max_f32 on x86 with AVX2: w[i] =
// exp(w[i] - mx), vexpf in blocks of 8 whose horizontal float32 sums
// ((v0+v4)+(v2+v6)) + ((v1+v5)+(v3+v7)) are added to a float64 total, then
// expf and float64 adds for the last len%8 values.
func softmaxExpSum(w []float32, mx float32) float64 {
	n := len(w) &^ 7
	if useAVX2 && n > 0 {
		// Trailing blocks of 8 masked entries (a causal mask's future
		// cells): each value is vexpf(-Inf) = +0, and adding +0 to the
		// sum (never -0: it starts at +0 and adds values >= +0 or NaN)
		// leaves it unchanged, so they are stored, not evaluated.
		m := n
		if mx == mx && mx != negInf32 {
			for m > 0 && allNegInf8(w[m-8:m]) {
				m -= 8
			}
			for i := m; i < n; i++ {
				w[i] = vexpfNegInf
			}
		}
		var sum float64
		if m > 0 {
			sum = softmaxExpAVX2(&w[0], m, mx)
		}
		for i := n; i < len(w); i++ {
			e := expf(w[i] - mx)
			sum += float64(e)
			w[i] = e
		}
		return sum
	}
	return softmaxExpSumGo(w, mx)
}

// allNegInf8 reports whether the 8 values of v are all -Inf.
func allNegInf8(v []float32) bool {
	v = v[:8:8]
	return v[0] == negInf32 && v[1] == negInf32 && v[2] == negInf32 && v[3] == negInf32 &&
		v[4] == negInf32 && v[5] == negInf32 && v[6] == negInf32 && v[7] == negInf32
}

// softmaxExpSumGo is the pure-Go twin of softmaxExpAVX2 (softmaxExpSum).
func softmaxExpSumGo(w []float32, mx float32) float64 {
	var sum float64
	n := len(w) &^ 7
	for i := 0; i < n; i += 8 {
		v := w[i : i+8 : i+8]
		for j := range v {
			if x := v[j] - mx; x != negInf32 {
				v[j] = vexpf(x)
			} else {
				v[j] = vexpfNegInf // a masked entry
			}
		}
		sum += float64(hsum8((*[8]float32)(v)))
	}
	for i := n; i < len(w); i++ {
		e := expf(w[i] - mx)
		sum += float64(e)
		w[i] = e
	}
	return sum
}
