package kernels

// matVecF32 sets out[r] = dotVec(a[r*stride:r*stride+len(b)], b, false)
// for every r < len(out): the F32 matrix-vector product of a decode step
// (ggml_vec_dot_f32 per row), bit for bit the row-by-row dotVec, in one
// assembly call when the SIMD kernels are in use.
func matVecF32(a []float32, stride int, b, out []float32) {
	rows, n := len(out), len(b)
	if rows == 0 {
		return
	}
	if n == 0 {
		clear(out)
		return
	}
	_ = a[(rows-1)*stride+n-1]
	if useAVX2 {
		matVecF32AVX2(&a[0], stride, rows, &b[0], n, &out[0])
		return
	}
	for r := range out {
		out[r] = dotVecGo(a[r*stride:r*stride+n], b, false)
	}
}
