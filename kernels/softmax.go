package kernels

import (
	"fmt"
	"math"

	"github.com/irtool/irtool/gguf"
)

// powf is C's powf.

// alibi holds the ALiBi slope parameters of ggml_compute_forward_soft_max_f32.
type alibi struct {
	maxBias      float32
	nHeadLog2    uint32
	m0, m1       float32
	enabledSlope bool
}

func newAlibi(maxBias float32, nHead int64) alibi {
	a := alibi{maxBias: maxBias}
	if maxBias > 0 && nHead > 0 {
		a.enabledSlope = true
		a.nHeadLog2 = 1 << uint32(math.Floor(math.Log2(float64(nHead))))
		a.m0 = powf(2, -maxBias/float32(a.nHeadLog2))
		a.m1 = powf(2, -(maxBias/2)/float32(a.nHeadLog2))
	}
	return a
}

// slope returns the mask multiplier of head h (1 when max_bias is 0).
func (a alibi) slope(h int64) float32 {
	if !a.enabledSlope {
		return 1
	}
	hu := uint32(h)
	if hu < a.nHeadLog2 {
		return powf(a.m0, float32(hu+1))
	}
	return powf(a.m1, float32(2*(hu-a.nHeadLog2)+1))
}

// checkMask validates a soft_max mask against src.
func checkMask(op string, mask *Tensor, src Tensor) error {
	if mask == nil {
		return nil
	}
	if err := mask.Validate(); err != nil {
		return fmt.Errorf("kernels: %s: mask: %w", op, err)
	}
	if mask.Type != gguf.TypeF32 && mask.Type != gguf.TypeF16 {
		return fmt.Errorf("kernels: %s: mask %s must be f32 or f16", op, *mask)
	}
	if mask.Ne[0] != src.Ne[0] || mask.Ne[1] < src.Ne[1] {
		return fmt.Errorf("kernels: %s: mask %s does not cover rows of %s (needs ne0 = %d, ne1 >= %d)", op, *mask, src, src.Ne[0], src.Ne[1])
	}
	if mask.Ne[2] == 0 || mask.Ne[3] == 0 || src.Ne[2]%mask.Ne[2] != 0 || src.Ne[3]%mask.Ne[3] != 0 {
		return fmt.Errorf("kernels: %s: mask %s cannot be broadcast over %s", op, *mask, src)
	}
	return nil
}

// softmaxRow computes ggml's soft_max of one row in place in w:
// w = w*scale + slope*mask, then exp(w - max) normalised by the float64 sum.
// m is the mask row (nil for none). With the SIMD kernels, rows of a
// multiple of 8 take their first passes in softmaxScaleMaxAVX2 (same
// roundings; the maximum is recomputed in order when it is NaN or zero,
// the cases where the lane-wise maximum could differ from Go's).
func softmaxRow(w, m []float32, scale, slope float32) {
	if n := len(w); useAVX2 && n > 0 && n%8 == 0 {
		var mp *float32
		if m != nil {
			mp = &m[:n][0]
		}
		mx, nan := softmaxScaleMaxAVX2(&w[0], mp, n, scale, slope)
		if nan || mx == 0 {
			mx = float32(math.Inf(-1))
			for _, v := range w {
				mx = max(mx, v)
			}
		}
		softmaxNorm(w, mx)
		return
	}
	for i := range w {
		w[i] *= scale
	}
	if m != nil {
		m = m[:len(w)]
		for i := range w {
			w[i] += slope * m[i]
		}
	}
	mx := float32(math.Inf(-1))
	for _, v := range w {
		mx = max(mx, v)
	}
	softmaxNorm(w, mx)
}

// softmaxNorm is the rest of softmaxRow once w holds the scaled, masked
// row and mx its maximum: w = exp(w - mx) / the float64 sum.
func softmaxNorm(w []float32, mx float32) {
	sum := softmaxExpSum(w, mx)
	inv := float32(1 / sum)
	for i := range w {
		w[i] *= inv
	}
}

// SoftMax computes ggml_soft_max_ext over dim 0 of src: for each row,
// softmax(src*scale + slope*mask). mask (nil for none, F32 or F16) has
// ne0 = src.ne0 and at least src.ne1 rows; row i1 of src uses mask row i1
// (broadcast over dims 2 and 3, as ggml does). slope is 1 unless maxBias >
// 0, when it is the ALiBi slope of head i2. dst may alias src.
func SoftMax(dst, src Tensor, mask *Tensor, scale, maxBias float32) error {
	return Options{}.SoftMax(dst, src, mask, scale, maxBias)
}

// SoftMax is the package's SoftMax with o's pool and threads.
func (o Options) SoftMax(dst, src Tensor, mask *Tensor, scale, maxBias float32) (err error) {
	const op = "soft_max"
	defer guard(op, &err)
	if err := checkSameFloat(op, dst, src); err != nil {
		return err
	}
	if err := checkMask(op, mask, src); err != nil {
		return err
	}
	al := newAlibi(maxBias, src.Ne[2])
	o.eachRows(src.Ne, func(lo, hi int, s1, s2 []float32) {
		softmaxRows(dst, src, mask, scale, al, lo, hi, s1, s2)
	})
	return nil
}

// softmaxRows is SoftMax for the flat rows [lo, hi) of src.
func softmaxRows(dst, src Tensor, mask *Tensor, scale float32, al alibi, lo, hi int, s1, s2 []float32) {
	ne0 := int(src.Ne[0])
	for r := lo; r < hi; r++ {
		i1, i2, i3 := rowIndex(int64(r), src.Ne)
		x := srcRow(src, src.rowOff(i1, i2, i3), ne0, s1)
		if &x[0] != &s1[0] {
			copy(s1, x)
		}
		var m []float32
		if mask != nil {
			m = srcRow(*mask, mask.rowOff(i1, i2%mask.Ne[2], i3%mask.Ne[3]), ne0, s2)
		}
		softmaxRow(s1[:ne0], m, scale, al.slope(i2))
		storeRow(dst, dst.rowOff(i1, i2, i3), s1[:ne0])
	}
}
