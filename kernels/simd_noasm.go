//go:build !amd64 || purego

package kernels

// useAVX2 is false: this build has no assembly kernels (another
// architecture, or -tags purego), so the pure-Go twins run.
const useAVX2 = false

// useVNNI is false with useAVX2.
const useVNNI = false

// The assembly entry points do not exist in this build; useAVX2 keeps
// these stubs from being called.

func quantizeQ8_0AVX2(x *float32, qs *int8, d *float32, nb int) bool { panic("kernels: no SIMD") }
func dotQ8_0RawAVX2(src *byte, qs *int8, d *float32, nb int) float32 { panic("kernels: no SIMD") }
func dotQ4_0RawAVX2(src *byte, qs *int8, d *float32, nb int) float32 { panic("kernels: no SIMD") }
func dotQ8_0Rawx4AVX2(src *byte, qs *[4]*int8, d *[4]*float32, nb int, out *[4]float32) {
	panic("kernels: no SIMD")
}
func dotQ4_0x8AVX2(src *byte, stride int, qs *int8, d *float32, sum *int32, nb int, out *[8]float32) {
	panic("kernels: no SIMD")
}
func dotQ4_0x8x4AVX2(src *byte, stride int, a *q4x4Args, nb int, out *[4][8]float32) {
	panic("kernels: no SIMD")
}
func dotVecF16RawAVX2(a *byte, b *float32, n int) float32 { panic("kernels: no SIMD") }
func dotVecF16TailAVX2(a *byte, b *float32, n int, red float32) float32 {
	panic("kernels: no SIMD")
}
func dotVecF32AVX2(a *float32, b *float32, n int) float32 { panic("kernels: no SIMD") }
func dotF32x4FMAAVX2(a *float32, b *[4]*float32, n int, out *[4]float32) {
	panic("kernels: no SIMD")
}
func dotF32FMAAVX2(a *float32, b *float32, n int) float32             { panic("kernels: no SIMD") }
func dotF32x4AVX2(a *float32, b *[4]*float32, n int, out *[4]float32) { panic("kernels: no SIMD") }
func dotF16x4AVX2(a *byte, b *[4]*float32, n int, out *[4]float32)    { panic("kernels: no SIMD") }
func f16ToF32AVX2(dst *float32, src *byte, n int)                     { panic("kernels: no SIMD") }
func siluAVX2(out, x *float32, n int)                                 { panic("kernels: no SIMD") }
func dotF16x2x4AVX2(a0, a1 *byte, b *[4]*float32, n int, out *[8]float32) {
	panic("kernels: no SIMD")
}
func packQ4_0x8AVX2(dst *byte, src *byte, stride int, nb int) { panic("kernels: no SIMD") }
func gemmQ4_0x8PackedAVX2(p *byte, a *q4x4Args, nb int, out *[4][8]float32) {
	panic("kernels: no SIMD")
}
func softmaxExpAVX2(w *float32, n int, mx float32) float64 { panic("kernels: no SIMD") }
func roundF16RowAVX2(x *float32, n int)                    { panic("kernels: no SIMD") }
func f32ToF16AVX2(dst *byte, src *float32, n int)          { panic("kernels: no SIMD") }
func qkLanesAVX2(q *int8, y *int8, sc *int32, nsb int, signed bool, lanes *int32) {
	panic("kernels: no SIMD")
}
func dotQ4_0x8iAVX2(p *byte, qs *int8, d *float32, sum *int32, nb int, ng int, out *float32) {
	panic("kernels: no SIMD")
}
func packQ4_0x8iAVX2(dst *byte, p *byte, nb int) { panic("kernels: no SIMD") }
func dotQ8_0RowsAVX2(src *byte, stride int, qs *int8, d *float32, nb int, nr int, out *float32) {
	panic("kernels: no SIMD")
}
func repackQ4_0x8iAVX2(dst *byte, src *byte, stride int, nb int) { panic("kernels: no SIMD") }
func dotF32x3x4FMAAVX2(a *[3]*float32, b *[4]*float32, n int, out *[12]float32) {
	panic("kernels: no SIMD")
}
func dotF32x3x4FMARowsAVX2(a *float32, k int, nt int, b *[4]*float32, d *[4]*float32) {
	panic("kernels: no SIMD")
}
func dotQ8_0x2x4AVX2(src0, src1 *byte, qs *[4]*int8, dc *float32, nb int, out *[8]float32) {
	panic("kernels: no SIMD")
}
func dotQ8_0x2x4RowsAVX2(src *byte, stride int, np int, qs *[4]*int8, dc *float32, nb int, d *[4]*float32) {
	panic("kernels: no SIMD")
}
func dotQ8_0x2x4VNNI(src0, src1 *byte, qs *[4]*int8, dc *float32, nb int, out *[8]float32) {
	panic("kernels: no SIMD")
}
