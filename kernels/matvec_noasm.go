//go:build !amd64 || purego

package kernels

// matVecF32AVX2 does not exist in this build; useAVX2 keeps it from being
// called.
func matVecF32AVX2(a *float32, stride int, rows int, b *float32, n int, out *float32) {
	panic("kernels: no SIMD")
}
