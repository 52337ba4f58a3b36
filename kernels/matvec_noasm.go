//go:build !amd64 || purego

package kernels

// The assembly kernels do not exist in this build; useAVX2 keeps these
// stubs from being called.
func matVecF32AVX2(a *float32, stride int, rows int, b *float32, n int, out *float32) {
	panic("kernels: no SIMD")
}

func f16RowsAVX2(dst *float32, src *byte, stride int, rows int, n int) { panic("kernels: no SIMD") }

func dotRows8F16AVX2(s *float32, a *float32, q *float32, groups int) { panic("kernels: no SIMD") }

func softmaxScaleMaxAVX2(w *float32, m *float32, n int, scale, slope float32) (mx float32, nan bool) {
	panic("kernels: no SIMD")
}

func f16T8AVX2(dst *float32, dstStride int, src *byte, stride int, n int) { panic("kernels: no SIMD") }

func matVecF16AVX2(a *byte, stride int, rows int, b *float32, n int, out *float32) {
	panic("kernels: no SIMD")
}

func matVecF16R1AVX2(a *byte, stride int, rows int, b *float32, n int, out *float32) {
	panic("kernels: no SIMD")
}
