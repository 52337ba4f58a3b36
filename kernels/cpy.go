package kernels

import (
	"fmt"
)

// Cpy copies src into dst element by element in logical (row-major, i0
// fastest) order, converting between types: ggml's CPY, CONT and DUP. The
// shapes may differ as long as the element counts match (ggml_cont_2d of a
// permuted view, for instance); both sides may be arbitrary strided views.
// Same-type copies move bytes unchanged (any non-quantised type, or
// quantised rows when ne0 matches); otherwise src must be readable as float
// (F32/F16/BF16, integers, or a dequantisable type) and dst one of F32, F16,
// BF16, or Q8_0/Q4_0 with whole dense rows (quantised as ggml's CPU
// from_float does). F32 to F16 rounds to nearest even, as F16C does.
func Cpy(dst, src Tensor) (err error) {
	const op = "cpy"
	defer guard(op, &err)
	how, err := checkCpy(op, dst, src)
	if err != nil {
		return err
	}
	switch how {
	case cpyQuantRows:
		return copyQuantRows(dst, src)
	case cpyRaw:
		copyRaw(dst, src)
	case cpyConvert:
		copyConvert(dst, src)
	}
	return nil
}

// How Cpy copies.
type cpyKind int

const (
	cpyNone      cpyKind = iota // nothing to copy
	cpyQuantRows                // same quantised type: whole rows
	cpyRaw                      // same type: bytes
	cpyConvert                  // through float32
)

// checkCpy checks Cpy's operands and returns how it copies.
func checkCpy(op string, dst, src Tensor) (cpyKind, error) {
	if err := dst.Validate(); err != nil {
		return 0, fmt.Errorf("kernels: %s: dst: %w", op, err)
	}
	if err := src.Validate(); err != nil {
		return 0, fmt.Errorf("kernels: %s: src: %w", op, err)
	}
	if dst.NElements() != src.NElements() {
		return 0, fmt.Errorf("kernels: %s: dst %s and src %s differ in element count", op, dst, src)
	}
	if dst.NElements() == 0 {
		return cpyNone, nil
	}
	dq, sq := dst.Type.BlockSize() > 1, src.Type.BlockSize() > 1
	if dst.Type == src.Type {
		if dq {
			if dst.Ne[0] != src.Ne[0] {
				return 0, fmt.Errorf("kernels: %s: quantised copy %s -> %s needs equal rows", op, src, dst)
			}
			return cpyQuantRows, nil
		}
		return cpyRaw, nil
	}
	if !canLoad(src.Type) {
		return 0, fmt.Errorf("kernels: %s: cannot read %s", op, src.Type)
	}
	if !canStore(dst.Type) {
		return 0, fmt.Errorf("kernels: %s: cannot write %s", op, dst.Type)
	}
	if (dq || sq) && dst.Ne[0] != src.Ne[0] {
		return 0, fmt.Errorf("kernels: %s: %s -> %s with a quantised side needs equal row lengths", op, src, dst)
	}
	return cpyConvert, nil
}

func copyQuantRows(dst, src Tensor) error {
	rb := src.rowBytes()
	// Rows are independent; walk src rows and dst rows in the same order.
	var d [MaxDims]int64
	for i3 := range src.Ne[3] {
		for i2 := range src.Ne[2] {
			for i1 := range src.Ne[1] {
				so := src.rowOff(i1, i2, i3)
				do := dst.rowOff(d[1], d[2], d[3])
				copy(dst.Data[do:do+rb], src.Data[so:so+rb])
				advanceRow(&d, dst.Ne)
			}
		}
	}
	return nil
}

// advanceRow moves the row counter d (dims 1..3) to the next row of ne.
func advanceRow(d *[MaxDims]int64, ne [MaxDims]int64) {
	d[1]++
	if d[1] == ne[1] {
		d[1] = 0
		d[2]++
		if d[2] == ne[2] {
			d[2] = 0
			d[3]++
		}
	}
}

// walkRuns visits src in logical order, row by row, and calls fn with the
// pieces of each src row that fall into one dst row: src row offset so and
// element start s0, dst row offset do and element start d0, and the run
// length.
func walkRuns(dst, src Tensor, fn func(so, s0, do, d0, n int64)) {
	var d [MaxDims]int64
	ne0 := src.Ne[0]
	for i3 := range src.Ne[3] {
		for i2 := range src.Ne[2] {
			for i1 := range src.Ne[1] {
				so := src.rowOff(i1, i2, i3)
				for pos := int64(0); pos < ne0; {
					n := min(ne0-pos, dst.Ne[0]-d[0])
					fn(so, pos, dst.rowOff(d[1], d[2], d[3]), d[0], n)
					pos += n
					d[0] += n
					if d[0] == dst.Ne[0] {
						d[0] = 0
						advanceRow(&d, dst.Ne)
					}
				}
			}
		}
	}
}

// copyRaw copies same-type, non-quantised elements byte for byte.
func copyRaw(dst, src Tensor) {
	es := int64(src.Type.TypeSize())
	walkRuns(dst, src, func(so, s0, do, d0, n int64) {
		sb := src.Data[so+s0*src.Nb[0]:]
		db := dst.Data[do+d0*dst.Nb[0]:]
		if (src.Nb[0] == es || n == 1) && (dst.Nb[0] == es || n == 1) {
			copy(db[:n*es], sb[:n*es])
			return
		}
		for i := range n {
			copy(db[i*dst.Nb[0]:i*dst.Nb[0]+es], sb[i*src.Nb[0]:i*src.Nb[0]+es])
		}
	})
}

// copyConvert copies with a type conversion through float32.
func copyConvert(dst, src Tensor) {
	p := getF32(int(src.Ne[0]))
	defer putF32(p)
	copyConvertBuf(dst, src, *p)
}

// copyConvertBuf is copyConvert with buf (src.Ne[0] floats) as scratch.
func copyConvertBuf(dst, src Tensor, buf []float32) {
	lastRow := int64(-1)
	walkRuns(dst, src, func(so, s0, do, d0, n int64) {
		if so != lastRow || s0 == 0 {
			if err := loadRowInto(src, so, buf); err != nil {
				panic(err)
			}
			lastRow = so
		}
		storeRow(dst, do+d0*dst.Nb[0], buf[s0:s0+n])
	})
}
