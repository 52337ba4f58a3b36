//go:build !amd64 || purego

package kernels

// Stubs of kquant_amd64.s's kernels: useAVX2 is false in this build.

func dotQ4Kx8iAVX2(p *byte, qs *int8, d *float32, b32 *int16, nsb int, ng int, pairs bool, out *float32) {
	panic("kernels: no SIMD")
}

func dotQ5KRowsAVX2(src *byte, stride int, qs *int8, d *float32, b32 *int16, nsb int, nr int, out *float32) {
	panic("kernels: no SIMD")
}

func dotQ6KRowsAVX2(src *byte, stride int, qs *int8, d *float32, bs16 *int16, nsb int, nr int, out *float32) {
	panic("kernels: no SIMD")
}

func dotQ4Kx8x4iAVX2(p *byte, a *q4kx4Args, nsb int, out *[4][8]float32) {
	panic("kernels: no SIMD")
}

func dotQ6Kx4RowsAVX2(src *byte, stride int, a *q6kx4Args, nsb int, nr int) {
	panic("kernels: no SIMD")
}
