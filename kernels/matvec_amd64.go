//go:build amd64 && !purego

package kernels

//go:noescape
func matVecF32AVX2(a *float32, stride int, rows int, b *float32, n int, out *float32)

//go:noescape
func f16RowsAVX2(dst *float32, src *byte, stride int, rows int, n int)

//go:noescape
func dotRows8F16AVX2(s *float32, a *float32, q *float32, groups int)

//go:noescape
func softmaxScaleMaxAVX2(w *float32, m *float32, n int, scale, slope float32) (mx float32, nan bool)

//go:noescape
func f16T8AVX2(dst *float32, dstStride int, src *byte, stride int, n int)

//go:noescape
func matVecF16AVX2(a *byte, stride int, rows int, b *float32, n int, out *float32)

//go:noescape
func matVecF16R1AVX2(a *byte, stride int, rows int, b *float32, n int, out *float32)
