package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"github.com/irtool/irtool/gguf"
)

// hostLittleEndian is true on little-endian hosts, where F32 data can be
// read in place as []float32 (ggml makes the same assumption).
var hostLittleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// f32view reinterprets the first 4*n bytes of b as n float32 values without
// copying, or returns nil when b is too short, misaligned or the host is
// big-endian.
func f32view(b []byte, n int) []float32 {
	if n == 0 || len(b) < 4*n || !hostLittleEndian || uintptr(unsafe.Pointer(&b[0]))%4 != 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
}

var (
	f16Once  sync.Once
	f16Table *[1 << 16]float32
)

// f16tab returns the half → float32 lookup table (ggml's
// ggml_table_f32_f16), built on first use.
func f16tab() *[1 << 16]float32 {
	f16Once.Do(func() {
		t := new([1 << 16]float32)
		for i := range t {
			t[i] = gguf.F16ToF32(uint16(i))
		}
		f16Table = t
	})
	return f16Table
}

// roundF16 rounds v to the nearest half-precision value and back
// (round to nearest, ties to even, as F16C's vcvtps2ph). Where v and its
// rounding are both normal halves (2^-14 <= |v| < 2^15) that is dropping
// the low 13 mantissa bits with a ties-to-even carry, done here on the bits
// (a carry into the exponent is the correct result); below 2^-14 it is
// rounding to a multiple of 2^-24; Inf, NaN and values from 2^15 up go
// through gguf's converters. Bit for bit equal to
// F16ToF32(F32ToF16(v)) (tested), and several times faster on the
// probabilities that attention rounds before its V product.
func roundF16(v float32) float32 {
	b := math.Float32bits(v)
	e := (b >> 23) & 0xff
	if e-113 <= 141-113 {
		b += 0xfff + (b>>13)&1
		return math.Float32frombits(b &^ 0x1fff)
	}
	if e < 113 {
		// |v| < 2^-14: half subnormals (or zero), multiples of 2^-24.
		// Scaling by 2^24 is exact, adding and removing 1.5·2^23 rounds
		// to an integer, ties to even; the sign is put back (−0 stays).
		a := math.Float32frombits(b&^0x80000000) * 0x1p24
		r := (a + 0x1.8p23) - 0x1.8p23
		return math.Float32frombits(math.Float32bits(r*0x1p-24) | b&0x80000000)
	}
	return gguf.F16ToF32(gguf.F32ToF16(v))
}

// isFloatType reports whether t is one of the float element types a kernel
// reads and writes directly.
func isFloatType(t gguf.GGMLType) bool {
	return t == gguf.TypeF32 || t == gguf.TypeF16 || t == gguf.TypeBF16
}

// loadElem reads one element of a non-quantised type as float32.
func loadElem(t gguf.GGMLType, b []byte) float32 {
	switch t {
	case gguf.TypeF32:
		return math.Float32frombits(binary.LittleEndian.Uint32(b))
	case gguf.TypeF16:
		return f16tab()[binary.LittleEndian.Uint16(b)]
	case gguf.TypeBF16:
		return gguf.BF16ToF32(binary.LittleEndian.Uint16(b))
	case gguf.TypeF64:
		return float32(math.Float64frombits(binary.LittleEndian.Uint64(b)))
	case gguf.TypeI8:
		return float32(int8(b[0]))
	case gguf.TypeI16:
		return float32(int16(binary.LittleEndian.Uint16(b)))
	case gguf.TypeI32:
		return float32(int32(binary.LittleEndian.Uint32(b)))
	case gguf.TypeI64:
		return float32(int64(binary.LittleEndian.Uint64(b)))
	}
	panic(fmt.Sprintf("loadElem: type %s", t))
}

// storeElem writes v as one element of a non-quantised type (integers are
// truncated toward zero).
func storeElem(t gguf.GGMLType, b []byte, v float32) {
	switch t {
	case gguf.TypeF32:
		binary.LittleEndian.PutUint32(b, math.Float32bits(v))
	case gguf.TypeF16:
		binary.LittleEndian.PutUint16(b, gguf.F32ToF16(v))
	case gguf.TypeBF16:
		binary.LittleEndian.PutUint16(b, gguf.F32ToBF16(v))
	case gguf.TypeF64:
		binary.LittleEndian.PutUint64(b, math.Float64bits(float64(v)))
	case gguf.TypeI8:
		b[0] = byte(int8(v))
	case gguf.TypeI16:
		binary.LittleEndian.PutUint16(b, uint16(int16(v)))
	case gguf.TypeI32:
		binary.LittleEndian.PutUint32(b, uint32(int32(v)))
	case gguf.TypeI64:
		binary.LittleEndian.PutUint64(b, uint64(int64(v)))
	default:
		panic(fmt.Sprintf("storeElem: type %s", t))
	}
}

// loadRowInto decodes the row of len(dst) elements that starts at byte off
// of t into dst: dequantising, converting halves, following nb[0].
func loadRowInto(t Tensor, off int64, dst []float32) error {
	n := len(dst)
	if n == 0 {
		return nil
	}
	b := t.Data[off:]
	if t.Type.BlockSize() > 1 {
		return gguf.Dequantize(t.Type, b, dst)
	}
	es := int64(t.Type.TypeSize())
	if t.Nb[0] == es || n == 1 {
		switch t.Type {
		case gguf.TypeF32:
			if v := f32view(b, n); v != nil {
				copy(dst, v)
				return nil
			}
			b = b[:4*n]
			for i := range dst {
				dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
			}
			return nil
		case gguf.TypeF16:
			tab := f16tab()
			b = b[:2*n]
			i := 0
			if n8 := n &^ 7; useAVX2 && n8 > 0 {
				f16ToF32AVX2(&dst[0], &b[0], n8)
				i = n8
			}
			for ; i < n; i++ {
				dst[i] = tab[binary.LittleEndian.Uint16(b[2*i:])]
			}
			return nil
		}
	}
	s := t.Nb[0]
	switch t.Type {
	case gguf.TypeF32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[int64(i)*s:]))
		}
		return nil
	case gguf.TypeF16:
		// Strided halves: a V view of a row-major KV cache.
		tab := f16tab()
		for i := range dst {
			dst[i] = tab[binary.LittleEndian.Uint16(b[int64(i)*s:])]
		}
		return nil
	}
	for i := range dst {
		dst[i] = loadElem(t.Type, b[int64(i)*s:])
	}
	return nil
}

// srcRow returns the row of n elements at byte off of t as float32: a
// zero-copy view of dense aligned F32 data, else a decoded copy in scratch
// (which must hold n values).
func srcRow(t Tensor, off int64, n int, scratch []float32) []float32 {
	if t.Type == gguf.TypeF32 && (t.Nb[0] == 4 || n == 1) {
		if v := f32view(t.Data[off:], n); v != nil {
			return v
		}
	}
	row := scratch[:n]
	if err := loadRowInto(t, off, row); err != nil {
		panic(err)
	}
	return row
}

// dstRow returns a float32 slice to write the row of n elements at byte off
// of t: the data itself when t is dense aligned F32 (direct = true), else
// scratch, which the caller must then pass to storeRow.
func dstRow(t Tensor, off int64, n int, scratch []float32) (row []float32, direct bool) {
	if t.Type == gguf.TypeF32 && (t.Nb[0] == 4 || n == 1) {
		if v := f32view(t.Data[off:], n); v != nil {
			return v, true
		}
	}
	return scratch[:n], false
}

// storeRow writes vals into the row at byte off of t, converting to t's
// type (F32, F16, BF16 or an integer type; Q8_0 and Q4_0 rows are
// quantised as ggml's CPU from_float does).
func storeRow(t Tensor, off int64, vals []float32) {
	n := len(vals)
	if n == 0 {
		return
	}
	b := t.Data[off:]
	switch t.Type {
	case gguf.TypeQ8_0:
		quantizeRowQ8_0Bytes(vals, b[:int64(n/32)*34])
		return
	case gguf.TypeQ4_0:
		q, err := gguf.QuantizeQ4_0(vals)
		if err != nil {
			panic(err)
		}
		copy(b, q)
		return
	}
	es := int64(t.Type.TypeSize())
	if t.Nb[0] == es || n == 1 {
		switch t.Type {
		case gguf.TypeF32:
			if v := f32view(b, n); v != nil {
				copy(v, vals)
				return
			}
			b = b[:4*n]
			for i, x := range vals {
				binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
			}
			return
		case gguf.TypeF16:
			f32ToF16Row(b[:2*n], vals)
			return
		}
	}
	s := t.Nb[0]
	for i, x := range vals {
		storeElem(t.Type, b[int64(i)*s:], x)
	}
}

// canStore reports whether storeRow can write rows of type t.
func canStore(t gguf.GGMLType) bool {
	switch t {
	case gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeQ8_0, gguf.TypeQ4_0:
		return true
	}
	return false
}

// canLoad reports whether loadRowInto can read rows of type t.
func canLoad(t gguf.GGMLType) bool {
	if t.BlockSize() > 1 {
		return gguf.CanDequantize(t)
	}
	switch t {
	case gguf.TypeF32, gguf.TypeF16, gguf.TypeBF16, gguf.TypeF64,
		gguf.TypeI8, gguf.TypeI16, gguf.TypeI32, gguf.TypeI64:
		return true
	}
	return false
}

// readIndex reads an I32 or I64 index element.
func readIndex(t Tensor, i0, i1, i2 int64) int64 {
	b := t.Data[i0*t.Nb[0]+i1*t.Nb[1]+i2*t.Nb[2]:]
	if t.Type == gguf.TypeI64 {
		return int64(binary.LittleEndian.Uint64(b))
	}
	return int64(int32(binary.LittleEndian.Uint32(b)))
}
