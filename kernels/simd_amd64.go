//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// useAVX2 selects the assembly kernels of simd_amd64.s: they need AVX2,
// FMA and F16C (x/sys/cpu also checks that the OS saves the YMM state).
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA && cpu.X86.HasF16C

// useVNNI selects the kernels that also take AVX512-VNNI's VPDPBUSD on
// 256-bit vectors (AVX512VL; x/sys/cpu sets the AVX-512 flags only when
// the OS saves that state).
var useVNNI = useAVX2 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VL && cpu.X86.HasAVX512VNNI

//go:noescape
func quantizeQ8_0AVX2(x *float32, qs *int8, d *float32, nb int) bool

//go:noescape
func dotQ8_0RawAVX2(src *byte, qs *int8, d *float32, nb int) float32

//go:noescape
func dotQ4_0RawAVX2(src *byte, qs *int8, d *float32, nb int) float32

//go:noescape
func dotQ8_0Rawx4AVX2(src *byte, qs *[4]*int8, d *[4]*float32, nb int, out *[4]float32)

//go:noescape
func dotQ4_0x8AVX2(src *byte, stride int, qs *int8, d *float32, sum *int32, nb int, out *[8]float32)

//go:noescape
func dotQ4_0x8x4AVX2(src *byte, stride int, a *q4x4Args, nb int, out *[4][8]float32)

//go:noescape
func dotVecF16RawAVX2(a *byte, b *float32, n int) float32

//go:noescape
func dotVecF16TailAVX2(a *byte, b *float32, n int, red float32) float32

//go:noescape
func dotVecF32AVX2(a *float32, b *float32, n int) float32

//go:noescape
func dotF32x4FMAAVX2(a *float32, b *[4]*float32, n int, out *[4]float32)

//go:noescape
func dotF32FMAAVX2(a *float32, b *float32, n int) float32

//go:noescape
func dotF32x4AVX2(a *float32, b *[4]*float32, n int, out *[4]float32)

//go:noescape
func dotF16x4AVX2(a *byte, b *[4]*float32, n int, out *[4]float32)

//go:noescape
func f16ToF32AVX2(dst *float32, src *byte, n int)

//go:noescape
func siluAVX2(out, x *float32, n int)

//go:noescape
func dotF16x2x4AVX2(a0, a1 *byte, b *[4]*float32, n int, out *[8]float32)

//go:noescape
func packQ4_0x8AVX2(dst *byte, src *byte, stride int, nb int)

//go:noescape
func gemmQ4_0x8PackedAVX2(p *byte, a *q4x4Args, nb int, out *[4][8]float32)

//go:noescape
func softmaxExpAVX2(w *float32, n int, mx float32) float64

//go:noescape
func roundF16RowAVX2(x *float32, n int)

//go:noescape
func f32ToF16AVX2(dst *byte, src *float32, n int)

//go:noescape
func qkLanesAVX2(q *int8, y *int8, sc *int32, nsb int, signed bool, lanes *int32)

//go:noescape
func dotQ4_0x8iAVX2(p *byte, qs *int8, d *float32, sum *int32, nb int, ng int, out *float32)

//go:noescape
func packQ4_0x8iAVX2(dst *byte, p *byte, nb int)

//go:noescape
func dotQ8_0RowsAVX2(src *byte, stride int, qs *int8, d *float32, nb int, nr int, out *float32)

//go:noescape
func repackQ4_0x8iAVX2(dst *byte, src *byte, stride int, nb int)

//go:noescape
func dotF32x3x4FMAAVX2(a *[3]*float32, b *[4]*float32, n int, out *[12]float32)

//go:noescape
func dotF32x3x4FMARowsAVX2(a *float32, k int, nt int, b *[4]*float32, d *[4]*float32)

//go:noescape
func dotQ8_0x2x4AVX2(src0, src1 *byte, qs *[4]*int8, dc *float32, nb int, out *[8]float32)

//go:noescape
func dotQ8_0x2x4RowsAVX2(src *byte, stride int, np int, qs *[4]*int8, dc *float32, nb int, d *[4]*float32)

//go:noescape
func dotQ8_0x2x4VNNI(src0, src1 *byte, qs *[4]*int8, dc *float32, nb int, out *[8]float32)
