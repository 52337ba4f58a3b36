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

// matVecF16 sets out[r] = dotVecF16Raw(a[r*stride:], b) for every r <
// len(out): the F16 matrix-vector product of a decode step
// (ggml_vec_dot_f16 per row), in one assembly call when the SIMD kernels
// are in use and len(b) is a multiple of 32 (no leftover products): two
// rows per iteration with a software prefetch (matVecF16AVX2) or one row
// at a time without (matVecF16R1AVX2), as tune says for this CPU.
func matVecF16(a []byte, stride int, b, out []float32) {
	rows, n := len(out), len(b)
	if rows == 0 {
		return
	}
	_ = a[(rows-1)*stride+2*n-1]
	if useAVX2 && n > 0 && n%32 == 0 {
		if tune.f16GEMV2 {
			matVecF16AVX2(&a[0], stride, rows, &b[0], n, &out[0])
		} else {
			matVecF16R1AVX2(&a[0], stride, rows, &b[0], n, &out[0])
		}
		return
	}
	for r := range out {
		out[r] = dotVecF16Raw(a[r*stride:r*stride+2*n], b)
	}
}

// f16Rows widens rows rows of n little-endian halves, row r starting at
// src[r*stride:], into dst[r*n:(r+1)*n] (exact: vcvtph2ps when the SIMD
// kernels are in use and n is a multiple of 8, else the F16 table).
func f16Rows(dst []float32, src []byte, stride, rows, n int) {
	if rows == 0 || n == 0 {
		return
	}
	_ = src[(rows-1)*stride+2*n-1]
	_ = dst[rows*n-1]
	if useAVX2 && n%8 == 0 {
		f16RowsAVX2(&dst[0], &src[0], stride, rows, n)
		return
	}
	tab := f16tab()
	for r := range rows {
		b := src[r*stride:][: 2*n : 2*n]
		row := dst[r*n : (r+1)*n : (r+1)*n]
		for i := range row {
			row[i] = tab[uint16(b[2*i])|uint16(b[2*i+1])<<8]
		}
	}
}

// f16RowsT widens rows rows of n halves (row j starting at
// src[j*stride:]) into dst transposed: value i of row j goes to
// dst[i*rows+j]. tr is scratch for at least n values. Exact, like
// f16Rows; with the SIMD kernels, groups of 8 rows are widened and
// transposed in registers (f16T8AVX2) when n is a multiple of 8.
func f16RowsT(dst []float32, src []byte, stride, rows, n int, tr []float32) {
	if rows == 0 || n == 0 {
		return
	}
	_ = src[(rows-1)*stride+2*n-1]
	_ = dst[rows*n-1]
	r0 := 0
	if useAVX2 && n%8 == 0 {
		for ; r0+8 <= rows; r0 += 8 {
			f16T8AVX2(&dst[r0], rows, &src[r0*stride], stride, n)
		}
	}
	blk := max(1, len(tr)/n)
	for ; r0 < rows; r0 += blk {
		nr := min(blk, rows-r0)
		f16Rows(tr[:nr*n], src[r0*stride:], stride, nr, n)
		for j := range nr {
			row := tr[j*n : (j+1)*n : (j+1)*n]
			for i, x := range row {
				dst[i*rows+r0+j] = x
			}
		}
	}
}
