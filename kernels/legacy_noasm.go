//go:build !amd64 || purego

package kernels

// The assembly kernels of legacy_amd64.s do not exist in this build;
// useAVX2 keeps these stubs from being called.

func dotQ5_0RowsAVX2(src *byte, stride int, qs *int8, d *float32, nb int, nr int, out *float32) {
	panic("kernels: no SIMD")
}
func dotQ4_1RowsAVX2(src *byte, stride int, qs *int8, d *float32, s *float32, nb int, nr int, out *float32) {
	panic("kernels: no SIMD")
}
func dotQ5_1RowsAVX2(src *byte, stride int, qs *int8, d *float32, s *float32, nb int, nr int, out *float32) {
	panic("kernels: no SIMD")
}
func dotQ5_0Rawx4AVX2(src *byte, a *legacyX4, nb int, out *[4]float32) { panic("kernels: no SIMD") }
func dotQ4_1Rawx4AVX2(src *byte, a *legacyX4, nb int, out *[4]float32) { panic("kernels: no SIMD") }
func dotQ5_1Rawx4AVX2(src *byte, a *legacyX4, nb int, out *[4]float32) { panic("kernels: no SIMD") }
func dotIQ4NLx8AVX2(src *byte, stride int, qs *int8, d *float32, nb int, out *float32) {
	panic("kernels: no SIMD")
}
func dotQ2KRowsAVX2(src *byte, stride int, qs *int8, d *float32, bsums *int32, nb int, nr int, out *float32) {
	panic("kernels: no SIMD")
}
func dotQ3KRowsAVX2(src *byte, stride int, qs *int8, d *float32, bsums *int32, nb int, nr int, out *float32) {
	panic("kernels: no SIMD")
}
func dotIQ4XSRowsAVX2(src *byte, stride int, qs *int8, d *float32, nb int, nr int, out *float32) {
	panic("kernels: no SIMD")
}
