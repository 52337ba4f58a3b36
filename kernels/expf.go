package kernels

import "math"

// fma32 is a float32 fused multiply-add (a*b + c rounded once). It goes
// through float64: a*b is exact there (24+24 significant bits), so the
// float64 sum is a*b + c rounded once, whether or not the compiler fuses it
// (math.FMA would give the same bits, three times slower); only the final
// two roundings could differ from a true single-precision FMA, which needs
// the float64 sum to land exactly on a float32 midpoint without being one,
// and does not happen in practice.
func fma32(a, b, c float32) float32 {
	return float32(float64(a)*float64(b) + float64(c))
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
