package kernels

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/irtool/irtool/gguf"
)

// MaxDims is the number of dimensions of a Tensor (GGML_MAX_DIMS).
const MaxDims = 4

// Tensor is a ggml-style view of typed data: Ne are the dims (Ne[0] is the
// innermost), Nb the byte strides of each dim, and Data starts at element
// [0,0,0,0]. For block-quantised types Nb[0] is the size of one block and
// Nb[1] the distance between rows, as in ggml. A Tensor is a small value:
// views share Data.
type Tensor struct {
	Type gguf.GGMLType
	Ne   [MaxDims]int64
	Nb   [MaxDims]int64
	Data []byte
}

// errBadTensor is wrapped by every validation failure.
var errBadTensor = errors.New("invalid tensor")

// ContiguousStrides returns ggml's dense strides for a tensor of type t and
// dims ne.
func ContiguousStrides(t gguf.GGMLType, ne [MaxDims]int64) ([MaxDims]int64, error) {
	var nb [MaxDims]int64
	if !t.Known() {
		return nb, fmt.Errorf("unknown type %s", t)
	}
	row, err := gguf.RowBytes(t, ne[0])
	if err != nil {
		return nb, err
	}
	nb[0] = int64(t.TypeSize())
	nb[1] = row
	for i := 2; i < MaxDims; i++ {
		nb[i] = nb[i-1] * ne[i-1]
	}
	return nb, nil
}

func padDims(ne []int64) ([MaxDims]int64, error) {
	var out [MaxDims]int64
	if len(ne) == 0 || len(ne) > MaxDims {
		return out, fmt.Errorf("%d dims; a tensor has 1 to %d", len(ne), MaxDims)
	}
	for i := range out {
		out[i] = 1
	}
	for i, n := range ne {
		if n < 0 {
			return out, fmt.Errorf("negative dim %d in %v", n, ne)
		}
		out[i] = n
	}
	return out, nil
}

// maxTensorBytes bounds NewTensor's allocation (16 GiB) so that a hostile
// shape gives an error instead of an overflow or an out-of-memory crash.
const maxTensorBytes = int64(1) << 34

// NewTensor allocates a zeroed contiguous tensor of type t with 1 to 4 dims
// (missing dims are 1), at most 16 GiB.
func NewTensor(t gguf.GGMLType, ne ...int64) (Tensor, error) {
	d, err := padDims(ne)
	if err != nil {
		return Tensor{}, fmt.Errorf("kernels: new tensor: %w", err)
	}
	nb, err := ContiguousStrides(t, d)
	if err != nil {
		return Tensor{}, fmt.Errorf("kernels: new tensor %s%v: %w", t, ne, err)
	}
	size := nb[1]
	for i := 1; i < MaxDims; i++ {
		if d[i] != 0 && size > maxTensorBytes/d[i] {
			return Tensor{}, fmt.Errorf("kernels: new tensor %s%v: too large", t, ne)
		}
		size *= d[i]
	}
	return Tensor{Type: t, Ne: d, Nb: nb, Data: make([]byte, size)}, nil
}

// FromF32 returns a contiguous F32 tensor holding vals (len(vals) must equal
// the element count of ne).
func FromF32(vals []float32, ne ...int64) (Tensor, error) {
	t, err := NewTensor(gguf.TypeF32, ne...)
	if err != nil {
		return t, err
	}
	if int64(len(vals)) != t.NElements() {
		return Tensor{}, fmt.Errorf("kernels: FromF32: %d values for shape %v", len(vals), ne)
	}
	for i, v := range vals {
		binary.LittleEndian.PutUint32(t.Data[4*i:], math.Float32bits(v))
	}
	return t, nil
}

// FromF16 returns a contiguous F16 tensor holding vals rounded to half
// precision (round to nearest even, as ggml's F16C conversion).
func FromF16(vals []float32, ne ...int64) (Tensor, error) {
	t, err := NewTensor(gguf.TypeF16, ne...)
	if err != nil {
		return t, err
	}
	if int64(len(vals)) != t.NElements() {
		return Tensor{}, fmt.Errorf("kernels: FromF16: %d values for shape %v", len(vals), ne)
	}
	for i, v := range vals {
		binary.LittleEndian.PutUint16(t.Data[2*i:], gguf.F32ToF16(v))
	}
	return t, nil
}

// FromI32 returns a contiguous I32 tensor holding vals.
func FromI32(vals []int32, ne ...int64) (Tensor, error) {
	t, err := NewTensor(gguf.TypeI32, ne...)
	if err != nil {
		return t, err
	}
	if int64(len(vals)) != t.NElements() {
		return Tensor{}, fmt.Errorf("kernels: FromI32: %d values for shape %v", len(vals), ne)
	}
	for i, v := range vals {
		binary.LittleEndian.PutUint32(t.Data[4*i:], uint32(v))
	}
	return t, nil
}

// FromI64 returns a contiguous I64 tensor holding vals.
func FromI64(vals []int64, ne ...int64) (Tensor, error) {
	t, err := NewTensor(gguf.TypeI64, ne...)
	if err != nil {
		return t, err
	}
	if int64(len(vals)) != t.NElements() {
		return Tensor{}, fmt.Errorf("kernels: FromI64: %d values for shape %v", len(vals), ne)
	}
	for i, v := range vals {
		binary.LittleEndian.PutUint64(t.Data[8*i:], uint64(v))
	}
	return t, nil
}

// FromBytes wraps existing bytes (for example a weight's zero-copy data from
// gguf.File.TensorData) as a contiguous tensor of type t and dims ne.
func FromBytes(t gguf.GGMLType, data []byte, ne ...int64) (Tensor, error) {
	d, err := padDims(ne)
	if err != nil {
		return Tensor{}, fmt.Errorf("kernels: from bytes: %w", err)
	}
	nb, err := ContiguousStrides(t, d)
	if err != nil {
		return Tensor{}, fmt.Errorf("kernels: from bytes %s%v: %w", t, ne, err)
	}
	x := Tensor{Type: t, Ne: d, Nb: nb, Data: data}
	if err := x.Validate(); err != nil {
		return Tensor{}, fmt.Errorf("kernels: from bytes: %w", err)
	}
	return x, nil
}

// String describes the tensor as "f32[64 5 1 1]".
func (t Tensor) String() string {
	return fmt.Sprintf("%s[%d %d %d %d]", t.Type, t.Ne[0], t.Ne[1], t.Ne[2], t.Ne[3])
}

// NElements returns the number of elements.
func (t Tensor) NElements() int64 { return t.Ne[0] * t.Ne[1] * t.Ne[2] * t.Ne[3] }

// NRows returns the number of rows (all dims but the first).
func (t Tensor) NRows() int64 { return t.Ne[1] * t.Ne[2] * t.Ne[3] }

// rowBytes is the byte size of one contiguous row of ne0 elements.
func (t Tensor) rowBytes() int64 {
	r, err := gguf.RowBytes(t.Type, t.Ne[0])
	if err != nil {
		return 0
	}
	return r
}

// NBytes returns the number of bytes the view spans (ggml_nbytes): from
// element [0,0,0,0] to one past the last element. 0 for an empty tensor.
func (t Tensor) NBytes() int64 {
	for _, n := range t.Ne {
		if n <= 0 {
			return 0
		}
	}
	bs := int64(t.Type.BlockSize())
	if bs <= 0 {
		return 0
	}
	var n int64
	if bs == 1 {
		n = int64(t.Type.TypeSize())
		for i := range MaxDims {
			n += (t.Ne[i] - 1) * t.Nb[i]
		}
		return n
	}
	n = t.Ne[0] / bs * int64(t.Type.TypeSize()) // quantised rows are dense
	for i := 1; i < MaxDims; i++ {
		n += (t.Ne[i] - 1) * t.Nb[i]
	}
	return n
}

// IsContiguous reports whether the strides are the dense ones (ggml_is_contiguous).
func (t Tensor) IsContiguous() bool {
	nb, err := ContiguousStrides(t.Type, t.Ne)
	if err != nil {
		return false
	}
	for i := range MaxDims {
		if t.Ne[i] > 1 && t.Nb[i] != nb[i] {
			return false
		}
	}
	return true
}

// rowsContiguous reports whether each row is dense (nb[0] is one element or
// one block).
func (t Tensor) rowsContiguous() bool {
	return t.Ne[0] <= 1 || t.Nb[0] == int64(t.Type.TypeSize())
}

// Validate checks that the type is known, dims and strides are
// non-negative, quantised rows are whole blocks laid out densely, and Data
// covers every element the view addresses.
func (t Tensor) Validate() error {
	if !t.Type.Known() {
		return fmt.Errorf("%w: unknown type %s", errBadTensor, t.Type)
	}
	for i := range MaxDims {
		if t.Ne[i] < 0 || t.Nb[i] < 0 {
			return fmt.Errorf("%w: %s has negative dims or strides (nb %v)", errBadTensor, t, t.Nb)
		}
	}
	if bs := int64(t.Type.BlockSize()); bs > 1 {
		if t.Ne[0]%bs != 0 {
			return fmt.Errorf("%w: %s: row of %d elements is not a multiple of the block size %d", errBadTensor, t, t.Ne[0], bs)
		}
		if t.Ne[0] > bs && t.Nb[0] != int64(t.Type.TypeSize()) {
			return fmt.Errorf("%w: %s: quantised rows must be dense (nb0 %d, block %d bytes)", errBadTensor, t, t.Nb[0], t.Type.TypeSize())
		}
	}
	// Bound the extent and element count in float64 first so that hostile
	// dims cannot overflow the int64 arithmetic below.
	ext, cnt := float64(t.Type.TypeSize()), 1.0
	for i := range MaxDims {
		ext += float64(max(t.Ne[i]-1, 0)) * float64(t.Nb[i])
		cnt *= float64(t.Ne[i])
	}
	if ext > 1<<60 || cnt > 1<<60 {
		return fmt.Errorf("%w: %s with strides %v is too large", errBadTensor, t, t.Nb)
	}
	// A view may revisit its bytes (zero strides), but not without bound:
	// that would let a tiny buffer describe an endless loop.
	if cnt > 64*float64(len(t.Data))+64 || t.Ne[0] > math.MaxInt32 {
		return fmt.Errorf("%w: %s holds far more elements than its %d bytes (zero strides %v?)", errBadTensor, t, len(t.Data), t.Nb)
	}
	if n := t.NBytes(); n > int64(len(t.Data)) {
		return fmt.Errorf("%w: %s with strides %v spans %d bytes, data holds %d", errBadTensor, t, t.Nb, n, len(t.Data))
	}
	return nil
}

// View returns a view of t with dims ne and byte strides nb starting offset
// bytes into t's data (ggml_view_4d). The result must lie inside t's data.
func (t Tensor) View(ne, nb [MaxDims]int64, offset int64) (Tensor, error) {
	if offset < 0 || offset > int64(len(t.Data)) {
		return Tensor{}, fmt.Errorf("kernels: view of %s: offset %d outside %d bytes", t, offset, len(t.Data))
	}
	v := Tensor{Type: t.Type, Ne: ne, Nb: nb, Data: t.Data[offset:]}
	if err := v.Validate(); err != nil {
		return Tensor{}, fmt.Errorf("kernels: view of %s at offset %d: %w", t, offset, err)
	}
	return v, nil
}

// Permute returns the view in which dim i of t becomes dim axes[i]
// (ggml_permute).
func (t Tensor) Permute(axes [MaxDims]int) (Tensor, error) {
	var seen [MaxDims]bool
	for _, a := range axes {
		if a < 0 || a >= MaxDims || seen[a] {
			return Tensor{}, fmt.Errorf("kernels: permute %s: axes %v is not a permutation", t, axes)
		}
		seen[a] = true
	}
	v := t
	for i, a := range axes {
		v.Ne[a] = t.Ne[i]
		v.Nb[a] = t.Nb[i]
	}
	return v, nil
}

// Transpose swaps dims 0 and 1 (ggml_transpose).
func (t Tensor) Transpose() Tensor {
	v := t
	v.Ne[0], v.Ne[1] = t.Ne[1], t.Ne[0]
	v.Nb[0], v.Nb[1] = t.Nb[1], t.Nb[0]
	return v
}

// Reshape returns t with new dims and dense strides; t must be contiguous
// and the element count must not change (ggml_reshape).
func (t Tensor) Reshape(ne ...int64) (Tensor, error) {
	d, err := padDims(ne)
	if err != nil {
		return Tensor{}, fmt.Errorf("kernels: reshape %s: %w", t, err)
	}
	if !t.IsContiguous() {
		return Tensor{}, fmt.Errorf("kernels: reshape %s: tensor is not contiguous (nb %v)", t, t.Nb)
	}
	if d[0]*d[1]*d[2]*d[3] != t.NElements() {
		return Tensor{}, fmt.Errorf("kernels: reshape %s to %v: element count differs", t, ne)
	}
	nb, err := ContiguousStrides(t.Type, d)
	if err != nil {
		return Tensor{}, fmt.Errorf("kernels: reshape %s to %v: %w", t, ne, err)
	}
	return Tensor{Type: t.Type, Ne: d, Nb: nb, Data: t.Data}, nil
}

// Contiguous returns a dense copy of t with the same type and dims
// (ggml_cont).
func (t Tensor) Contiguous() (Tensor, error) {
	out, err := NewTensor(t.Type, t.Ne[:]...)
	if err != nil {
		return Tensor{}, err
	}
	if err := Cpy(out, t); err != nil {
		return Tensor{}, err
	}
	return out, nil
}

// offset returns the byte offset of element (i0..i3) for a non-quantised
// tensor.
func (t Tensor) offset(i0, i1, i2, i3 int64) int64 {
	return i0*t.Nb[0] + i1*t.Nb[1] + i2*t.Nb[2] + i3*t.Nb[3]
}

func (t Tensor) checkIndex(i0, i1, i2, i3 int64) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if t.Type.BlockSize() != 1 {
		return fmt.Errorf("kernels: element access to %s: quantised type", t)
	}
	if i0 < 0 || i1 < 0 || i2 < 0 || i3 < 0 || i0 >= t.Ne[0] || i1 >= t.Ne[1] || i2 >= t.Ne[2] || i3 >= t.Ne[3] {
		return fmt.Errorf("kernels: index [%d %d %d %d] outside %s", i0, i1, i2, i3, t)
	}
	return nil
}

// Float returns element [i0,i1,i2,i3] as float32 (any non-quantised type;
// integers are converted).
func (t Tensor) Float(i0, i1, i2, i3 int64) (float32, error) {
	if err := t.checkIndex(i0, i1, i2, i3); err != nil {
		return 0, err
	}
	return loadElem(t.Type, t.Data[t.offset(i0, i1, i2, i3):]), nil
}

// SetFloat stores v at [i0,i1,i2,i3], converting it to the tensor's type.
func (t Tensor) SetFloat(v float32, i0, i1, i2, i3 int64) error {
	if err := t.checkIndex(i0, i1, i2, i3); err != nil {
		return err
	}
	storeElem(t.Type, t.Data[t.offset(i0, i1, i2, i3):], v)
	return nil
}

// Int returns element [i0,i1,i2,i3] of an integer tensor (I8..I64).
func (t Tensor) Int(i0, i1, i2, i3 int64) (int64, error) {
	if err := t.checkIndex(i0, i1, i2, i3); err != nil {
		return 0, err
	}
	b := t.Data[t.offset(i0, i1, i2, i3):]
	switch t.Type {
	case gguf.TypeI8:
		return int64(int8(b[0])), nil
	case gguf.TypeI16:
		return int64(int16(binary.LittleEndian.Uint16(b))), nil
	case gguf.TypeI32:
		return int64(int32(binary.LittleEndian.Uint32(b))), nil
	case gguf.TypeI64:
		return int64(binary.LittleEndian.Uint64(b)), nil
	}
	return 0, fmt.Errorf("kernels: Int on %s: not an integer type", t)
}

// ToF32 returns every element of t as float32 in logical order (i0 fastest),
// dequantising quantised types and converting integers.
func ToF32(t Tensor) (out []float32, err error) {
	defer guard("to_f32", &err)
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("kernels: to_f32: %w", err)
	}
	n := t.NElements()
	out = make([]float32, n)
	if n == 0 {
		return out, nil
	}
	ne0 := t.Ne[0]
	k := 0
	for i3 := range t.Ne[3] {
		for i2 := range t.Ne[2] {
			for i1 := range t.Ne[1] {
				off := i1*t.Nb[1] + i2*t.Nb[2] + i3*t.Nb[3]
				if err := loadRowInto(t, off, out[k:k+int(ne0)]); err != nil {
					return nil, fmt.Errorf("kernels: to_f32 %s: %w", t, err)
				}
				k += int(ne0)
			}
		}
	}
	return out, nil
}

// span returns the address range [lo, hi) of the bytes the view covers.
func (t Tensor) span() (lo, hi uintptr) {
	n := t.NBytes()
	if n == 0 || len(t.Data) == 0 {
		return 0, 0
	}
	lo = uintptr(unsafe.Pointer(&t.Data[0]))
	return lo, lo + uintptr(n)
}

// overlaps reports whether the bytes of two views intersect.
func overlaps(x, y Tensor) bool {
	xl, xh := x.span()
	yl, yh := y.span()
	return xl < yh && yl < xh && xh > xl && yh > yl
}

// guard turns a panic inside a kernel into an error.
func guard(op string, err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("kernels: %s: internal error: %v", op, r)
	}
}
