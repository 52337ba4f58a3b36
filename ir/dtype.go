package ir

import (
	"fmt"
	"math"
)

// DType is an element type. Its values are ggml's type ids (ggml.h), so a
// GGUF tensor type converts to a DType with a plain conversion.
type DType uint32

// The dtypes irtool knows. Quantised types are storage types for weights;
// activations are F32, F16, I32 or I64.
const (
	F32  DType = 0
	F16  DType = 1
	Q4_0 DType = 2
	Q4_1 DType = 3
	Q5_0 DType = 6
	Q5_1 DType = 7
	Q8_0 DType = 8
	Q8_1 DType = 9
	Q2_K DType = 10
	Q3_K DType = 11
	Q4_K DType = 12
	Q5_K DType = 13
	Q6_K DType = 14
	Q8_K DType = 15
	// IQ4_NL and IQ4_XS: 4-bit indices into a non-linear codebook
	// (llama-quantize makes them without an importance matrix).
	IQ4_NL DType = 20
	IQ4_XS DType = 23
	I8     DType = 24
	I16    DType = 25
	I32    DType = 26
	I64    DType = 27
	F64    DType = 28
	BF16   DType = 30
)

type dtypeInfo struct {
	name      string
	blockSize int64 // elements per block
	typeSize  int64 // bytes per block
}

var dtypes = map[DType]dtypeInfo{
	F32:    {"f32", 1, 4},
	F16:    {"f16", 1, 2},
	Q4_0:   {"q4_0", 32, 18},
	Q4_1:   {"q4_1", 32, 20},
	Q5_0:   {"q5_0", 32, 22},
	Q5_1:   {"q5_1", 32, 24},
	Q8_0:   {"q8_0", 32, 34},
	Q8_1:   {"q8_1", 32, 36},
	Q2_K:   {"q2_K", 256, 84},
	Q3_K:   {"q3_K", 256, 110},
	Q4_K:   {"q4_K", 256, 144},
	Q5_K:   {"q5_K", 256, 176},
	Q6_K:   {"q6_K", 256, 210},
	Q8_K:   {"q8_K", 256, 292},
	IQ4_NL: {"iq4_nl", 32, 18},
	IQ4_XS: {"iq4_xs", 256, 136},
	I8:     {"i8", 1, 1},
	I16:    {"i16", 1, 2},
	I32:    {"i32", 1, 4},
	I64:    {"i64", 1, 8},
	F64:    {"f64", 1, 8},
	BF16:   {"bf16", 1, 2},
}

var dtypeByName = func() map[string]DType {
	m := make(map[string]DType, len(dtypes))
	for t, info := range dtypes {
		m[info.name] = t
	}
	return m
}()

// String returns ggml's name for the type ("f32", "q4_0", "q6_K").
func (t DType) String() string {
	if info, ok := dtypes[t]; ok {
		return info.name
	}
	return fmt.Sprintf("type%d", uint32(t))
}

// Known reports whether t is a dtype the IR can describe.
func (t DType) Known() bool { _, ok := dtypes[t]; return ok }

// BlockSize is the number of elements in one storage block (1 for plain types).
func (t DType) BlockSize() int64 { return dtypes[t].blockSize }

// TypeSize is the number of bytes in one storage block.
func (t DType) TypeSize() int64 { return dtypes[t].typeSize }

// Quantized reports whether t is a block-quantised storage type.
func (t DType) Quantized() bool { return dtypes[t].blockSize > 1 }

// IsFloat reports whether t is a plain floating-point type.
func (t DType) IsFloat() bool { return t == F32 || t == F16 || t == BF16 || t == F64 }

// IsInt reports whether t is a plain integer type.
func (t DType) IsInt() bool { return t == I8 || t == I16 || t == I32 || t == I64 }

// RowBytes is the size of a row of n elements, or an error when n is not a
// whole number of blocks.
func (t DType) RowBytes(n int64) (int64, error) {
	info, ok := dtypes[t]
	if !ok {
		return 0, fmt.Errorf("unknown dtype %d", uint32(t))
	}
	if n < 0 {
		return 0, fmt.Errorf("%s: row of %d elements", info.name, n)
	}
	if n%info.blockSize != 0 {
		return 0, fmt.Errorf("%s: row of %d elements is not a multiple of the block size %d", info.name, n, info.blockSize)
	}
	if n/info.blockSize > math.MaxInt64/info.typeSize {
		return 0, fmt.Errorf("%s: row of %d elements overflows", info.name, n)
	}
	return n / info.blockSize * info.typeSize, nil
}

// ParseDType parses a dtype name as String prints it.
func ParseDType(s string) (DType, bool) {
	t, ok := dtypeByName[s]
	return t, ok
}
