//go:build !amd64 || purego

package kernels

// useAVX512 is false: this build has no assembly kernels.
const useAVX512 = false

func dotF32x6x4FMAAVX512(a *[6]*float32, b *[4]*float32, n int, out *[24]float32) {
	panic("kernels: no SIMD")
}

func dotQ8_0x4x4AVX512(src *byte, stride int, qs *[4]*int8, ns *int32, dc *float32, nb int, out *[16]float32) {
	panic("kernels: no SIMD")
}
