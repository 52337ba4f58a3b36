//go:build amd64 && !purego

package kernels

import "golang.org/x/sys/cpu"

// useAVX512 selects the 512-bit prefill tiles of avx512_amd64.s (F16's
// six-row float tile, Q8_0's four-row VNNI tile). They need AVX-512F,
// BW and VNNI besides the AVX2 set (x/sys/cpu sets the AVX-512 flags only
// when the OS saves that state).
var useAVX512 = useVNNI && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI

//go:noescape
func dotF32x6x4FMAAVX512(a *[6]*float32, b *[4]*float32, n int, out *[24]float32)

//go:noescape
func dotQ8_0x4x4AVX512(src *byte, stride int, qs *[4]*int8, ns *int32, dc *float32, nb int, out *[16]float32)
