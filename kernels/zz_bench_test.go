package kernels

import "testing"

func BenchmarkZZDotRows8F16(b *testing.B) {
	a := make([]float32, 64*8)
	q := make([]float32, 8)
	for i := range a {
		a[i] = roundF16(float32(i%13) * 0.37)
	}
	for i := range q {
		q[i] = roundF16(float32(i) * 0.11)
	}
	s := make([]float32, 64)
	for b.Loop() {
		dotRows8F16(s, a, q)
	}
}

func BenchmarkZZSoftmax32(b *testing.B) {
	w := make([]float32, 32)
	m := make([]float32, 32)
	for i := 8; i < 32; i++ {
		m[i] = float32(-1e30)
	}
	for b.Loop() {
		for i := range w {
			w[i] = float32(i) * 0.1
		}
		softmaxRow(w, m, 0.35, 1)
	}
}

func softmaxRowOld(w, m []float32, scale, slope float32) {
	for i := range w {
		w[i] *= scale
	}
	if m != nil {
		m = m[:len(w)]
		for i := range w {
			w[i] += slope * m[i]
		}
	}
	mx := float32(-1e38)
	for _, v := range w {
		mx = max(mx, v)
	}
	softmaxNorm(w, mx)
}

func BenchmarkZZSoftmaxOld32(b *testing.B) {
	w := make([]float32, 32)
	m := make([]float32, 32)
	for i := 8; i < 32; i++ {
		m[i] = float32(-1e30)
	}
	for b.Loop() {
		for i := range w {
			w[i] = float32(i) * 0.1
		}
		softmaxRowOld(w, m, 0.35, 1)
	}
}
func BenchmarkZZExp32(b *testing.B) {
	w := make([]float32, 32)
	for b.Loop() {
		for i := range w {
			w[i] = float32(i) * 0.1
		}
		softmaxExpSum(w, 3)
	}
}

func BenchmarkZZMatVec64(b *testing.B) {
	a := make([]float32, 64*64)
	for i := range a {
		a[i] = float32(i%17) * 0.01
	}
	x := make([]float32, 64)
	out := make([]float32, 64)
	for b.Loop() {
		matVecF32(a, 64, x, out)
	}
}

func BenchmarkZZMatVec172(b *testing.B) {
	a := make([]float32, 64*172)
	for i := range a {
		a[i] = float32(i%17) * 0.01
	}
	x := make([]float32, 172)
	out := make([]float32, 64)
	for b.Loop() {
		matVecF32(a, 172, x, out)
	}
}
