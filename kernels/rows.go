package kernels

import (
	"fmt"

	"github.com/irtool/irtool/gguf"
)

func checkIndexTensor(op string, idx Tensor) error {
	if err := idx.Validate(); err != nil {
		return fmt.Errorf("kernels: %s: idx: %w", op, err)
	}
	if idx.Type != gguf.TypeI32 && idx.Type != gguf.TypeI64 {
		return fmt.Errorf("kernels: %s: idx %s must be i32 or i64", op, idx)
	}
	if idx.Ne[3] != 1 {
		return fmt.Errorf("kernels: %s: idx %s must have at most 3 dims", op, idx)
	}
	return nil
}

// GetRows gathers rows: dst[:, i10, i11, i12] = src[:, idx[i10, i11, i12],
// i11, i12] (ggml_get_rows), dequantising quantised rows and converting
// halves exactly as ggml's to_float does. src is [ne0, n_rows, ne11, ne12];
// idx (I32 or I64) is [n, ne11, ne12]; dst (F32, F16 or BF16) is
// [ne0, n, ne11, ne12]. An index outside [0, n_rows) is an error.
func GetRows(dst, src, idx Tensor) error { return Options{}.GetRows(dst, src, idx) }

// GetRows is the package's GetRows with o's pool and threads.
func (o Options) GetRows(dst, src, idx Tensor) (err error) {
	const op = "get_rows"
	defer guard(op, &err)
	if err := src.Validate(); err != nil {
		return fmt.Errorf("kernels: %s: src: %w", op, err)
	}
	if !canLoad(src.Type) {
		return fmt.Errorf("kernels: %s: src type %s is not supported", op, src.Type)
	}
	if err := checkFloat(op, "dst", dst); err != nil {
		return err
	}
	if err := checkIndexTensor(op, idx); err != nil {
		return err
	}
	want := [MaxDims]int64{src.Ne[0], idx.Ne[0], idx.Ne[1], idx.Ne[2]}
	if dst.Ne != want {
		return fmt.Errorf("kernels: %s: dst %s, want shape %v for src %s and idx %s", op, dst, want, src, idx)
	}
	if src.Ne[2] != idx.Ne[1] || src.Ne[3] != idx.Ne[2] {
		return fmt.Errorf("kernels: %s: src %s and idx %s differ in dims 2, 3", op, src, idx)
	}
	// Validate every index first so that a bad one leaves dst untouched.
	for i12 := range idx.Ne[2] {
		for i11 := range idx.Ne[1] {
			for i10 := range idx.Ne[0] {
				if r := readIndex(idx, i10, i11, i12); r < 0 || r >= src.Ne[1] {
					return fmt.Errorf("kernels: %s: idx[%d,%d,%d] = %d outside the %d rows of %s", op, i10, i11, i12, r, src.Ne[1], src)
				}
			}
		}
	}
	o.eachRows(dst.Ne, func(lo, hi int, s1, _ []float32) {
		getRowsRows(dst, src, idx, lo, hi, s1)
	})
	return nil
}

// SetRows scatters rows: dst[:, idx[i, i02 % ne11, i03 % ne12], i02, i03] =
// src[:, i, i02, i03] (ggml_set_rows), converting src's values to dst's type
// (F32, F16, BF16, or Q8_0/Q4_0 quantised as ggml's from_float). src is
// [ne0, n, ne2, ne3] (float); idx (I32 or I64) is [n, ne11, ne12] with ne11
// dividing ne2 and ne12 dividing ne3. Because dst never moves, a captured
// device graph that writes the KV cache this way stays valid across tokens.
func SetRows(dst, src, idx Tensor) (err error) {
	const op = "set_rows"
	defer guard(op, &err)
	if err := checkSetRows(op, dst, src, idx); err != nil {
		return err
	}
	ne0 := int(src.Ne[0])
	eachRow(Options{Threads: 1}, src.Ne, func(i, i02, i03 int64, s1, _ []float32) {
		r := readIndex(idx, i, i02%idx.Ne[1], i03%idx.Ne[2])
		x := srcRow(src, src.rowOff(i, i02, i03), ne0, s1)
		storeRow(dst, dst.rowOff(r, i02, i03), x)
	})
	return nil
}

func checkSetRows(op string, dst, src, idx Tensor) error {
	if err := checkSetRowsShapes(op, dst, src, idx); err != nil {
		return err
	}
	for i12 := range idx.Ne[2] {
		for i11 := range idx.Ne[1] {
			for i10 := range idx.Ne[0] {
				if r := readIndex(idx, i10, i11, i12); r < 0 || r >= dst.Ne[1] {
					return fmt.Errorf("kernels: %s: idx[%d,%d,%d] = %d outside the %d rows of %s", op, i10, i11, i12, r, dst.Ne[1], dst)
				}
			}
		}
	}
	return nil
}

// checkSetRowsShapes is checkSetRows without reading the indexes.
func checkSetRowsShapes(op string, dst, src, idx Tensor) error {
	if err := dst.Validate(); err != nil {
		return fmt.Errorf("kernels: %s: dst: %w", op, err)
	}
	if !canStore(dst.Type) {
		return fmt.Errorf("kernels: %s: dst type %s is not supported", op, dst.Type)
	}
	if err := checkFloat(op, "src", src); err != nil {
		return err
	}
	if err := checkIndexTensor(op, idx); err != nil {
		return err
	}
	if dst.Ne[0] != src.Ne[0] || dst.Ne[2] != src.Ne[2] || dst.Ne[3] != src.Ne[3] {
		return fmt.Errorf("kernels: %s: dst %s and src %s differ in dims 0, 2 or 3", op, dst, src)
	}
	if idx.Ne[0] != src.Ne[1] {
		return fmt.Errorf("kernels: %s: %d indices for the %d rows of src %s", op, idx.Ne[0], src.Ne[1], src)
	}
	if idx.Ne[1] == 0 || idx.Ne[2] == 0 || src.Ne[2]%idx.Ne[1] != 0 || src.Ne[3]%idx.Ne[2] != 0 {
		return fmt.Errorf("kernels: %s: idx %s cannot be broadcast over src %s", op, idx, src)
	}
	return nil
}
