package wqconv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/irtool/irtool/gguf"
)

// Dtype is the element type of the converted values.
type Dtype uint8

const (
	// Int4 is ACL_INT4: two's-complement values in [−8, 7], two per byte,
	// the even column in the low nibble.
	Int4 Dtype = iota + 1
	// Int8 is ACL_INT8: one signed byte per value.
	Int8
	// F16 is ACL_FLOAT16, little-endian: the fallback of Dense, for an
	// ordinary matmul rather than WQBMM.
	F16
)

// String returns the ACL name's short form: "int4", "int8" or "f16".
func (d Dtype) String() string {
	switch d {
	case Int4:
		return "int4"
	case Int8:
		return "int8"
	case F16:
		return "f16"
	}
	return fmt.Sprintf("Dtype(%d)", uint8(d))
}

// MaxDim is the largest k (and n per call) aclnnWeightQuantBatchMatmulV2
// accepts on Atlas A2/A3 (CANN's page: "k, n not in [1, 65535]" is an
// error); larger n is split into calls, as ggml-cann does.
const MaxDim = 65535

// ErrUnsupported is wrapped by the errors of Convert and LayoutOf for a type
// that has no mapping.
var ErrUnsupported = errors.New("no aclnnWeightQuantBatchMatmulV2 mapping")

// Accuracy says how close a mapping's values are to ggml's.
type Accuracy uint8

const (
	// Exact: Dequant gives ggml's float32 values bit for bit (up to the
	// sign of zero).
	Exact Accuracy = iota + 1
	// RoundedParams: the values are ggml's quants; the f16 rounding of a
	// product of scales, or of an offset, is the only loss.
	RoundedParams
	// Requantised: the values are re-quantised to int8 per group of 32.
	Requantised
)

// String describes the accuracy in a few words.
func (a Accuracy) String() string {
	switch a {
	case Exact:
		return "exact"
	case RoundedParams:
		return "rounded scale/offset"
	case Requantised:
		return "int8 re-quantised"
	}
	return fmt.Sprintf("Accuracy(%d)", uint8(a))
}

// Layout is a type's mapping, independent of the data: what Convert makes
// of it.
type Layout struct {
	Type   gguf.GGMLType
	Dtype  Dtype
	Span   int  // elements sharing one scale (and offset) along a row
	Offset bool // whether an antiquantOffset is stored
	// HighBits: the Int4 values are the low four bits of five-bit quants
	// minus 8, and a bitmask of each value's fifth bit follows the
	// scales (one bit per value, bit c%8 of byte c/8 of its row, uint8):
	// the weight is scale·(v + 16·(h − 0.5)), two
	// aclnnWeightQuantBatchMatmulV2 calls (int4 v with the scale; h
	// expanded to int8 per call, with antiquantOffset −0.5 and 16× the
	// scale) whose outputs are added.
	HighBits bool
	Accuracy Accuracy
}

// BytesPerWeight is the device bytes per weight of a row whose length is a
// multiple of Span (values, scales and offsets).
func (l Layout) BytesPerWeight() float64 {
	v := 1.0
	switch l.Dtype {
	case Int4:
		v = 0.5
	case F16:
		return 2
	}
	p := 2.0
	if l.Offset {
		p = 4
	}
	if l.HighBits {
		v += 0.125
	}
	return v + p/float64(l.Span)
}

// GroupSize is the antiquantGroupSize to pass for rows of k elements: Span,
// or 0 (one scale per output channel) when one group covers the row, as
// CANN requires the group size to be below k.
func (l Layout) GroupSize(k int) int {
	if l.Span >= k {
		return 0
	}
	return l.Span
}

// DeviceBytes is the size of a converted rows×cols matrix (values, scales
// and offsets), without converting it.
func (l Layout) DeviceBytes(rows, cols int) int64 {
	if l.Dtype == F16 {
		return 2 * int64(rows) * int64(cols)
	}
	v := int64(rows) * int64(cols)
	if l.Dtype == Int4 {
		v = (v + 1) / 2
	}
	g := int64(rows) * int64((cols+l.Span-1)/l.Span)
	p := 2 * g
	if l.Offset {
		p *= 2
	}
	if l.HighBits {
		p += l.HighBytes(rows, cols)
	}
	return v + p
}

// HighBytes is the size of a rows×cols matrix's bitmask of fifth bits
// (HighBits layouts; 0 for the others): ⌈cols/8⌉ bytes per row.
func (l Layout) HighBytes(rows, cols int) int64 {
	if !l.HighBits {
		return 0
	}
	return int64(rows) * int64((cols+7)/8)
}

// layouts is the mapping of each type (docs/LOWERING.md gives the reasons).
var layouts = map[gguf.GGMLType]Layout{
	gguf.TypeQ8_0: {gguf.TypeQ8_0, Int8, 32, false, false, Exact},
	gguf.TypeQ4_0: {gguf.TypeQ4_0, Int4, 32, false, false, Exact},
	gguf.TypeQ5_0: {gguf.TypeQ5_0, Int4, 32, false, true, Exact},
	gguf.TypeQ3_K: {gguf.TypeQ3_K, Int8, 256, false, false, Exact},
	gguf.TypeQ4_1: {gguf.TypeQ4_1, Int4, 32, true, false, RoundedParams},
	gguf.TypeQ5_1: {gguf.TypeQ5_1, Int8, 32, true, false, RoundedParams},
	gguf.TypeQ4_K: {gguf.TypeQ4_K, Int4, 32, true, false, RoundedParams},
	gguf.TypeQ5_K: {gguf.TypeQ5_K, Int8, 32, true, false, RoundedParams},
	gguf.TypeQ6_K: {gguf.TypeQ6_K, Int8, 32, false, false, Requantised},
	gguf.TypeQ2_K: {gguf.TypeQ2_K, Int8, 32, true, false, Requantised},
}

// Types lists the types Convert handles, in ggml's id order.
func Types() []gguf.GGMLType {
	return []gguf.GGMLType{gguf.TypeQ4_0, gguf.TypeQ4_1, gguf.TypeQ5_0, gguf.TypeQ5_1, gguf.TypeQ8_0,
		gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K}
}

// LayoutOf returns the mapping of type t, or an error wrapping ErrUnsupported.
func LayoutOf(t gguf.GGMLType) (Layout, error) {
	l, ok := layouts[t]
	if !ok {
		return Layout{}, fmt.Errorf("wqconv: %s: %w (handled: q4_0 q4_1 q5_0 q5_1 q8_0 q2_K..q6_K; Dense gives f16 for f32, f16, bf16)", t, ErrUnsupported)
	}
	return l, nil
}

// Weights is a converted weight: Experts matrices of Rows×Cols (n×k), each
// row of Cols values followed in Scale (and Offset) by its Cols/Span
// parameters.
type Weights struct {
	Layout
	Experts    int // 1 for a 2-D weight
	Rows, Cols int
	// Data holds the values, expert after expert, row after row: one byte
	// per value (Int8), two per byte with the even column in the low nibble
	// (Int4), or two bytes little-endian (F16).
	Data []byte
	// Scale holds the f16 antiquantScale bits, [Experts][Rows][Cols/Span].
	Scale []uint16
	// Offset holds the f16 antiquantOffset bits in Scale's order, or is nil.
	Offset []uint16
	// High holds a HighBits layout's fifth bits, [Experts][Rows][Cols/8]
	// (bit c%8 of byte c/8 for column c), or is nil.
	High []byte
}

// GroupSize is the antiquantGroupSize to pass (0: one group per row).
func (w *Weights) GroupSize() int { return w.Layout.GroupSize(w.Cols) }

// Groups is the number of scales per row.
func (w *Weights) Groups() int {
	if w.Dtype == F16 {
		return 0
	}
	return w.Cols / w.Span
}

// DeviceBytes is the size of the converted weight on the device.
func (w *Weights) DeviceBytes() int64 {
	return int64(len(w.Data)) + 2*int64(len(w.Scale)) + 2*int64(len(w.Offset)) + int64(len(w.High))
}

// Bytes returns the weight as one device buffer: all values, then all
// scales, then all offsets (f16 little-endian), then a HighBits layout's
// bitmasks. For q4_0 and q8_0 this is
// ggml-cann's layout (ggml_backend_cann_transform): its set_tensor writes
// the quants of the whole tensor, then its f16 scales.
func (w *Weights) Bytes() []byte {
	out := make([]byte, 0, w.DeviceBytes())
	out = append(out, w.Data...)
	for _, s := range w.Scale {
		out = binary.LittleEndian.AppendUint16(out, s)
	}
	for _, o := range w.Offset {
		out = binary.LittleEndian.AppendUint16(out, o)
	}
	return append(out, w.High...)
}

// Value returns the integer value of element (e, r, c) of an Int4 or Int8
// weight (of a HighBits layout: its int4 part).
func (w *Weights) Value(e, r, c int) int8 {
	i := (e*w.Rows+r)*w.Cols + c
	if w.Dtype == Int4 {
		b := w.Data[i/2]
		if i%2 == 1 {
			b >>= 4
		}
		return int8(b<<4) >> 4
	}
	return int8(w.Data[i])
}

// Check reports whether aclnnWeightQuantBatchMatmulV2 accepts the weight
// as this package lays it out (transposed ND, f16 scale and offset), per
// the A2/A3 constraints of CANN's page: k = Cols in [1, 65535], the group
// size 0 or a multiple of 32 in [32, k−1], an even k for INT4. Rows above
// 65535 are accepted: the caller splits n into calls of at most MaxDim.
func (w *Weights) Check() error {
	name := fmt.Sprintf("wqconv: %s weight [%d×%d]", w.Type, w.Rows, w.Cols)
	if w.Dtype != Int4 && w.Dtype != Int8 {
		return fmt.Errorf("%s: %s values are not a WQBMM weight (use a plain matmul)", name, w.Dtype)
	}
	k := w.Cols
	if k < 1 || k > MaxDim {
		return fmt.Errorf("%s: k = %d outside aclnnWeightQuantBatchMatmulV2's [1, %d]", name, k, MaxDim)
	}
	if w.Rows < 1 {
		return fmt.Errorf("%s: n = %d", name, w.Rows)
	}
	if g := w.GroupSize(); g != 0 && (g%32 != 0 || g < 32 || g > k-1) {
		return fmt.Errorf("%s: antiquantGroupSize %d not a multiple of 32 in [32, %d]", name, g, k-1)
	}
	if w.Dtype == Int4 && k%2 != 0 {
		return fmt.Errorf("%s: an INT4 transposed weight needs an even k, have %d", name, k)
	}
	return nil
}

// Convert converts a rows×cols matrix of type t (raw: its ggml blocks, row
// after row; cols is ggml's ne[0]) to the type's layout (LayoutOf).
func Convert(t gguf.GGMLType, raw []byte, rows, cols int) (*Weights, error) {
	return ConvertExperts(t, raw, 1, rows, cols)
}

// ConvertExperts converts a 3-D [experts][rows][cols] weight of type t
// (mul_mat_id's experts, ggml's ne[2] × ne[1] × ne[0]) expert by expert.
func ConvertExperts(t gguf.GGMLType, raw []byte, experts, rows, cols int) (*Weights, error) {
	l, err := LayoutOf(t)
	if err != nil {
		return nil, err
	}
	if err := checkShape(t, raw, experts, rows, cols); err != nil {
		return nil, err
	}
	bs, ts := t.BlockSize(), t.TypeSize()
	conv := converters[t]
	nrows := experts * rows
	w := &Weights{Layout: l, Experts: experts, Rows: rows, Cols: cols}
	nv := nrows * cols
	if l.Dtype == Int4 {
		w.Data = make([]byte, nv/2)
	} else {
		w.Data = make([]byte, nv)
	}
	ng := nrows * cols / l.Span
	w.Scale = make([]uint16, ng)
	if l.Offset {
		w.Offset = make([]uint16, ng)
	}
	if l.HighBits {
		w.High = make([]byte, l.HighBytes(nrows, cols))
	}
	// Blocks are independent: large weights are converted by GOMAXPROCS
	// workers over contiguous ranges of blocks; the first failing block (in
	// block order) is reported.
	nb := nv / bs
	workers := min(runtime.GOMAXPROCS(0), max(1, nv/(1<<16)))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = w.convertBlocks(conv, raw, k*nb/workers, (k+1)*nb/workers, bs, ts)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return w, nil
}

// convertBlocks converts blocks [from, to) of raw into w.
func (w *Weights) convertBlocks(conv converter, raw []byte, from, to, bs, ts int) error {
	vals := make([]int8, bs)
	per := bs / w.Span
	var off []uint16
	for b := from; b < to; b++ {
		blk := raw[b*ts : (b+1)*ts]
		s := w.Scale[b*per : (b+1)*per]
		if w.Offset != nil {
			off = w.Offset[b*per : (b+1)*per]
		}
		if err := conv(blk, vals, s, off); err != nil {
			row := b / (w.Cols / bs)
			return fmt.Errorf("wqconv: %s [%d×%d×%d]: expert %d row %d block %d: %w",
				w.Type, w.Experts, w.Rows, w.Cols, row/w.Rows, row%w.Rows, b%(w.Cols/bs), err)
		}
		base := b * bs
		if w.High != nil {
			// vals are u − 16 ∈ [−16, 15]: the low nibble minus 8 as
			// int4, the fifth bit in the mask. Blocks of 32 start on a
			// byte of the mask (bs is a multiple of 8).
			for j := 0; j < bs; j++ {
				u := int(vals[j]) + 16
				vals[j] = int8(u&15) - 8
				if u >= 16 {
					w.High[(base+j)/8] |= 1 << ((base + j) % 8)
				}
			}
		}
		if w.Dtype == Int4 {
			for j := 0; j < bs; j += 2 {
				w.Data[(base+j)/2] = byte(vals[j])&0x0f | byte(vals[j+1])<<4
			}
		} else {
			for j, v := range vals {
				w.Data[base+j] = byte(v)
			}
		}
	}
	return nil
}

func checkShape(t gguf.GGMLType, raw []byte, experts, rows, cols int) error {
	bs, ts := t.BlockSize(), t.TypeSize()
	name := fmt.Sprintf("wqconv: %s [%d×%d×%d]", t, experts, rows, cols)
	if experts < 1 || rows < 1 || cols < 1 {
		return fmt.Errorf("%s: every dimension must be at least 1", name)
	}
	if cols%bs != 0 {
		return fmt.Errorf("%s: %d columns is not a multiple of the %s block size %d", name, cols, t, bs)
	}
	perRow := int64(cols/bs) * int64(ts)
	n := int64(experts) * int64(rows)
	if n > math.MaxInt32 || perRow > math.MaxInt32 || n*perRow != int64(len(raw)) {
		return fmt.Errorf("%s: have %d bytes, want %d×%d bytes of blocks", name, len(raw), n, perRow)
	}
	return nil
}

// Dense converts a rows×cols matrix of any type gguf.Dequantize handles to
// f16 values (round to nearest even): the fallback for a weight WQBMM
// cannot take, for a plain f16 matmul. Exact for f16; one f16 rounding of
// ggml's value otherwise.
func Dense(t gguf.GGMLType, raw []byte, rows, cols int) (*Weights, error) {
	if !gguf.CanDequantize(t) {
		return nil, fmt.Errorf("wqconv: dense %s: %w", t, ErrUnsupported)
	}
	if err := checkShape(t, raw, 1, rows, cols); err != nil {
		return nil, err
	}
	f := make([]float32, rows*cols)
	if err := gguf.Dequantize(t, raw, f); err != nil {
		return nil, fmt.Errorf("wqconv: dense %s [%d×%d]: %w", t, rows, cols, err)
	}
	w := &Weights{Layout: Layout{Type: t, Dtype: F16, Span: cols, Accuracy: RoundedParams}, Experts: 1, Rows: rows, Cols: cols}
	if t == gguf.TypeF16 {
		w.Accuracy = Exact
	}
	w.Data = make([]byte, 2*len(f))
	for i, v := range f {
		binary.LittleEndian.PutUint16(w.Data[2*i:], gguf.F32ToF16(v))
	}
	return w, nil
}

// Dequant is the reference arithmetic of the converted weight, in float32:
// (float32(w) + offset) · scale per element, the sum exact and the product
// rounded once (w · scale without an offset); f16 values are widened. It
// returns Experts·Rows·Cols values in Data's order.
func Dequant(w *Weights) []float32 {
	out := make([]float32, w.Experts*w.Rows*w.Cols)
	for r := range w.Experts * w.Rows {
		w.dequantRow(r, out[r*w.Cols:(r+1)*w.Cols])
	}
	return out
}

// DequantF16 is the same arithmetic carried in f16, as a kernel that
// dequantises into the activations' f16 does it (and as the CANN emulator
// models aclnnWeightQuantBatchMatmulV2): f16(f16(w + offset) · scale), each
// step computed in float32 and rounded to f16.
func DequantF16(w *Weights) []float32 {
	out := Dequant(w)
	if w.Dtype == F16 {
		return out
	}
	g := w.Cols / w.Span
	for i := range out {
		r, c := i/w.Cols, i%w.Cols
		k := r*g + c/w.Span
		v := float32(w.Value(0, r, c))
		if w.Offset != nil {
			v = gguf.F16ToF32(gguf.F32ToF16(v + gguf.F16ToF32(w.Offset[k])))
		}
		out[i] = gguf.F16ToF32(gguf.F32ToF16(v * gguf.F16ToF32(w.Scale[k])))
		if w.High != nil {
			// the second product, f16(f16(h − 0.5) · f16(16·scale)),
			// added in f16 as the two matmuls' outputs are
			h := float32(w.high(i)) - 0.5
			out[i] = gguf.F16ToF32(gguf.F32ToF16(out[i] + gguf.F16ToF32(gguf.F32ToF16(h*gguf.F16ToF32(gguf.F32ToF16(16*gguf.F16ToF32(w.Scale[k])))))))
		}
	}
	return out
}

// high is the fifth bit of value i (in Data's order) of a HighBits layout.
func (w *Weights) high(i int) int {
	return int(w.High[i/8]>>(i%8)) & 1
}

func (w *Weights) dequantRow(r int, out []float32) {
	if w.Dtype == F16 {
		for c := range out {
			out[c] = gguf.F16ToF32(binary.LittleEndian.Uint16(w.Data[2*(r*w.Cols+c):]))
		}
		return
	}
	g := w.Cols / w.Span
	for c := range out {
		i := r*w.Cols + c
		var v int8
		if w.Dtype == Int4 {
			v = int8(w.Data[i/2]>>(4*(i%2))<<4) >> 4
		} else {
			v = int8(w.Data[i])
		}
		k := r*g + c/w.Span
		s := gguf.F16ToF32(w.Scale[k])
		if w.High != nil {
			// v + 16·(h − 0.5) = u − 16, an integer: exact
			out[c] = float32(int(v)+16*w.high(i)-8) * s
			continue
		}
		if w.Offset == nil {
			out[c] = float32(v) * s
			continue
		}
		out[c] = float32(float32(v)+gguf.F16ToF32(w.Offset[k])) * s
	}
}

// Widen returns an Int8 copy of an Int4 weight (the same values, scales and
// offsets); other weights, and HighBits layouts (whose values are two
// terms), are returned as they are. get_rows on the device
// gathers whole rows of bytes: an int8 table needs no nibble unpacking.
func (w *Weights) Widen() *Weights {
	if w.Dtype != Int4 || w.HighBits {
		return w
	}
	c := *w
	c.Dtype = Int8
	c.Data = make([]byte, 2*len(w.Data))
	for i, b := range w.Data {
		c.Data[2*i] = byte(int8(b<<4) >> 4)
		c.Data[2*i+1] = byte(int8(b) >> 4)
	}
	return &c
}

// GetRows is get_rows on the converted layout: the dequantised rows ids of a
// 2-D weight (an embedding table), row after row, each equal to Dequant's
// row. It is what a device gathering the rows of Data, Scale and Offset
// (aclnnGatherV2 along dim 0) and applying (w + offset) · scale computes.
func (w *Weights) GetRows(ids []int32) ([]float32, error) {
	if w.Experts != 1 {
		return nil, fmt.Errorf("wqconv: get_rows on a %s weight of %d experts", w.Type, w.Experts)
	}
	out := make([]float32, len(ids)*w.Cols)
	for i, id := range ids {
		if id < 0 || int(id) >= w.Rows {
			return nil, fmt.Errorf("wqconv: get_rows: row %d (index %d) outside the %s table's %d rows", id, i, w.Type, w.Rows)
		}
		w.dequantRow(int(id), out[i*w.Cols:(i+1)*w.Cols])
	}
	return out, nil
}
