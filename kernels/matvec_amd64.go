//go:build amd64 && !purego

package kernels

//go:noescape
func matVecF32AVX2(a *float32, stride int, rows int, b *float32, n int, out *float32)

//go:noescape
func f16RowsAVX2(dst *float32, src *byte, stride int, rows int, n int)
