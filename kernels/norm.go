package kernels

import (
	"fmt"
	"math"
)

// sqrtf is C's sqrtf (correctly rounded; the float64 detour is exact).
func sqrtf(x float32) float32 { return float32(math.Sqrt(float64(x))) }

// rmsScale is ggml_compute_forward_rms_norm_f32's factor: squares rounded to
// float32, summed in float64, the mean narrowed to float32, then
// 1/sqrtf(mean + eps) in float32.
func rmsScale(x []float32, eps float32) float32 {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	mean := float32(sum / float64(len(x)))
	return 1 / sqrtf(mean+eps)
}

// RMSNorm computes dst = src / sqrt(mean(src²) + eps) over dim 0 of every
// row (ggml_rms_norm). dst and src have the same shape; dst may alias src.
func RMSNorm(dst, src Tensor, eps float32) error { return Options{}.RMSNorm(dst, src, eps) }

// RMSNorm is the package's RMSNorm with o's pool and threads.
func (o Options) RMSNorm(dst, src Tensor, eps float32) (err error) {
	const op = "rms_norm"
	defer guard(op, &err)
	if err := checkSameFloat(op, dst, src); err != nil {
		return err
	}
	o.eachRows(src.Ne, func(lo, hi int, s1, _ []float32) {
		rmsNormRows(dst, src, eps, lo, hi, s1)
	})
	return nil
}

// rmsNormRows is RMSNorm for the flat rows [lo, hi) of src.
func rmsNormRows(dst, src Tensor, eps float32, lo, hi int, s1 []float32) {
	ne0 := int(src.Ne[0])
	for r := lo; r < hi; r++ {
		i1, i2, i3 := rowIndex(int64(r), src.Ne)
		x := srcRow(src, src.rowOff(i1, i2, i3), ne0, s1)
		scale := rmsScale(x, eps)
		out, direct := dstRow(dst, dst.rowOff(i1, i2, i3), ne0, s1)
		out = out[:len(x)]
		for i := range x {
			out[i] = x[i] * scale
		}
		if !direct {
			storeRow(dst, dst.rowOff(i1, i2, i3), out)
		}
	}
}

// RMSNormMul computes dst = rms_norm(x, eps) * w, with w broadcast over the
// rows of x as Mul does; bit for bit the same as RMSNorm followed by Mul
// (the normalised value is rounded to float32 before the product).
func RMSNormMul(dst, x, w Tensor, eps float32) error {
	return Options{}.RMSNormMul(dst, x, w, eps)
}

// RMSNormMul is the package's RMSNormMul with o's pool and threads.
func (o Options) RMSNormMul(dst, x, w Tensor, eps float32) (err error) {
	const op = "rms_norm_mul"
	defer guard(op, &err)
	if err := checkFloats(op, []string{"dst", "x", "w"}, dst, x, w); err != nil {
		return err
	}
	if dst.Ne != x.Ne {
		return fmt.Errorf("kernels: %s: dst %s and x %s differ in shape", op, dst, x)
	}
	if !canRepeat(w, x) {
		return fmt.Errorf("kernels: %s: weight %s cannot be broadcast over %s", op, w, x)
	}
	o.eachRows(x.Ne, func(lo, hi int, s1, s2 []float32) {
		rmsNormMulRows(dst, x, w, eps, lo, hi, s1, s2)
	})
	return nil
}

// normMulRow writes rms_norm(x)*w (w repeated along the row) to the row of
// dst at off; scratch may alias x.
func normMulRow(dst Tensor, off int64, x, w []float32, eps float32, scratch []float32) {
	scale := rmsScale(x, eps)
	out, direct := dstRow(dst, off, len(x), scratch)
	out = out[:len(x)]
	if len(w) == len(x) {
		w = w[:len(x)]
		for i := range x {
			out[i] = float32(x[i]*scale) * w[i]
		}
	} else {
		nw := len(w)
		for r := 0; r < len(x); r += nw {
			for i := range nw {
				out[r+i] = float32(x[r+i]*scale) * w[i]
			}
		}
	}
	if !direct {
		storeRow(dst, off, out)
	}
}

// AddRMSNormMul computes sum = a + b (b broadcast over a, as Add) and
// dst = rms_norm(sum, eps) * w (as RMSNormMul): the residual add and the
// following norm in one pass. The norm reads sum as stored, so the result is
// bit for bit that of Add, RMSNorm, Mul in sequence.
func AddRMSNormMul(dst, sum, a, b, w Tensor, eps float32) error {
	return Options{}.AddRMSNormMul(dst, sum, a, b, w, eps)
}

// AddRMSNormMul is the package's AddRMSNormMul with o's pool and threads.
func (o Options) AddRMSNormMul(dst, sum, a, b, w Tensor, eps float32) (err error) {
	const op = "add_rms_norm_mul"
	defer guard(op, &err)
	if err := checkFloats(op, []string{"dst", "sum", "a", "b", "w"}, dst, sum, a, b, w); err != nil {
		return err
	}
	if dst.Ne != a.Ne || sum.Ne != a.Ne {
		return fmt.Errorf("kernels: %s: dst %s, sum %s and a %s differ in shape", op, dst, sum, a)
	}
	if !canRepeat(b, a) {
		return fmt.Errorf("kernels: %s: b %s cannot be broadcast over a %s", op, b, a)
	}
	if !canRepeat(w, a) {
		return fmt.Errorf("kernels: %s: weight %s cannot be broadcast over %s", op, w, a)
	}
	o.eachRows(a.Ne, func(lo, hi int, s1, s2 []float32) {
		addRMSNormMulRows(dst, sum, a, b, w, eps, lo, hi, s1, s2)
	})
	return nil
}
