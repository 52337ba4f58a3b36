package gguf

import (
	"fmt"
	"math"
	"strings"
)

// GGMLType is a ggml tensor element type, numbered exactly as enum ggml_type
// in ggml.h, which is how GGUF tensor infos store it.
type GGMLType uint32

// The ggml types, with ggml.h's ids. Ids 4, 5 (Q4_2, Q4_3), 31-33
// (Q4_0_4_4, Q4_0_4_8, Q4_0_8_8) and 36-38 (IQ4_NL_4_4, IQ4_NL_4_8,
// IQ4_NL_8_8) were removed from ggml; a file using them is refused.
const (
	TypeF32     GGMLType = 0
	TypeF16     GGMLType = 1
	TypeQ4_0    GGMLType = 2
	TypeQ4_1    GGMLType = 3
	TypeQ5_0    GGMLType = 6
	TypeQ5_1    GGMLType = 7
	TypeQ8_0    GGMLType = 8
	TypeQ8_1    GGMLType = 9
	TypeQ2_K    GGMLType = 10
	TypeQ3_K    GGMLType = 11
	TypeQ4_K    GGMLType = 12
	TypeQ5_K    GGMLType = 13
	TypeQ6_K    GGMLType = 14
	TypeQ8_K    GGMLType = 15
	TypeIQ2_XXS GGMLType = 16
	TypeIQ2_XS  GGMLType = 17
	TypeIQ3_XXS GGMLType = 18
	TypeIQ1_S   GGMLType = 19
	TypeIQ4_NL  GGMLType = 20
	TypeIQ3_S   GGMLType = 21
	TypeIQ2_S   GGMLType = 22
	TypeIQ4_XS  GGMLType = 23
	TypeI8      GGMLType = 24
	TypeI16     GGMLType = 25
	TypeI32     GGMLType = 26
	TypeI64     GGMLType = 27
	TypeF64     GGMLType = 28
	TypeIQ1_M   GGMLType = 29
	TypeBF16    GGMLType = 30
	TypeTQ1_0   GGMLType = 34
	TypeTQ2_0   GGMLType = 35
	TypeMXFP4   GGMLType = 39
	TypeNVFP4   GGMLType = 40
	TypeQ1_0    GGMLType = 41
	TypeQ2_0    GGMLType = 42

	// TypeCount is one past the largest id ggml knows (GGML_TYPE_COUNT).
	TypeCount GGMLType = 43
)

// typeTraits is one row of ggml's type_traits table (ggml.c): the name
// ggml_type_name prints, elements per block and bytes per block. A zero
// block size marks an id ggml removed.
type typeTraits struct {
	name      string
	blockSize int
	typeSize  int
	quantized bool
}

// traits mirrors ggml.c's type_traits[GGML_TYPE_COUNT] (llama.cpp master,
// 2026: GGML_TYPE_COUNT = 43). Block sizes and byte sizes are those of the
// block_* structs in ggml-common.h.
var traits = [TypeCount]typeTraits{
	TypeF32:     {"f32", 1, 4, false},
	TypeF16:     {"f16", 1, 2, false},
	TypeQ4_0:    {"q4_0", 32, 18, true},
	TypeQ4_1:    {"q4_1", 32, 20, true},
	4:           {"q4_2(removed)", 0, 0, false},
	5:           {"q4_3(removed)", 0, 0, false},
	TypeQ5_0:    {"q5_0", 32, 22, true},
	TypeQ5_1:    {"q5_1", 32, 24, true},
	TypeQ8_0:    {"q8_0", 32, 34, true},
	TypeQ8_1:    {"q8_1", 32, 36, true},
	TypeQ2_K:    {"q2_K", 256, 84, true},
	TypeQ3_K:    {"q3_K", 256, 110, true},
	TypeQ4_K:    {"q4_K", 256, 144, true},
	TypeQ5_K:    {"q5_K", 256, 176, true},
	TypeQ6_K:    {"q6_K", 256, 210, true},
	TypeQ8_K:    {"q8_K", 256, 292, true},
	TypeIQ2_XXS: {"iq2_xxs", 256, 66, true},
	TypeIQ2_XS:  {"iq2_xs", 256, 74, true},
	TypeIQ3_XXS: {"iq3_xxs", 256, 98, true},
	TypeIQ1_S:   {"iq1_s", 256, 50, true},
	TypeIQ4_NL:  {"iq4_nl", 32, 18, true},
	TypeIQ3_S:   {"iq3_s", 256, 110, true},
	TypeIQ2_S:   {"iq2_s", 256, 82, true},
	TypeIQ4_XS:  {"iq4_xs", 256, 136, true},
	TypeI8:      {"i8", 1, 1, false},
	TypeI16:     {"i16", 1, 2, false},
	TypeI32:     {"i32", 1, 4, false},
	TypeI64:     {"i64", 1, 8, false},
	TypeF64:     {"f64", 1, 8, false},
	TypeIQ1_M:   {"iq1_m", 256, 56, true},
	TypeBF16:    {"bf16", 1, 2, false},
	31:          {"q4_0_4_4(removed)", 0, 0, false},
	32:          {"q4_0_4_8(removed)", 0, 0, false},
	33:          {"q4_0_8_8(removed)", 0, 0, false},
	TypeTQ1_0:   {"tq1_0", 256, 54, true},
	TypeTQ2_0:   {"tq2_0", 256, 66, true},
	36:          {"iq4_nl_4_4(removed)", 0, 0, false},
	37:          {"iq4_nl_4_8(removed)", 0, 0, false},
	38:          {"iq4_nl_8_8(removed)", 0, 0, false},
	TypeMXFP4:   {"mxfp4", 32, 17, true},
	TypeNVFP4:   {"nvfp4", 64, 36, true},
	TypeQ1_0:    {"q1_0", 128, 18, true},
	TypeQ2_0:    {"q2_0", 64, 18, true},
}

// Known reports whether ggml defines t (an id below TypeCount that was not
// removed).
func (t GGMLType) Known() bool {
	return t < TypeCount && traits[t].blockSize > 0
}

// String returns the name ggml_type_name prints ("f32", "q4_0", "q4_K").
// Removed ids print as e.g. "q4_2(removed)", others as "type(99)".
func (t GGMLType) String() string {
	if t < TypeCount {
		return traits[t].name
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// BlockSize returns the number of elements in one block (1 for f32, 32 for
// q4_0, 256 for the K-quants), or 0 for an unknown type.
func (t GGMLType) BlockSize() int {
	if t < TypeCount {
		return traits[t].blockSize
	}
	return 0
}

// TypeSize returns the number of bytes in one block, or 0 for an unknown
// type.
func (t GGMLType) TypeSize() int {
	if t < TypeCount {
		return traits[t].typeSize
	}
	return 0
}

// IsQuantized reports whether t is a block-quantised type.
func (t GGMLType) IsQuantized() bool {
	return t < TypeCount && traits[t].quantized
}

// ParseGGMLType maps a ggml type name to its type, case-insensitively
// ("q4_k" and "Q4_K" both give TypeQ4_K).
func ParseGGMLType(name string) (GGMLType, error) {
	for i := range traits {
		t := GGMLType(i)
		if t.Known() && strings.EqualFold(traits[i].name, name) {
			return t, nil
		}
	}
	return 0, fmt.Errorf("gguf: unknown ggml type name %q", name)
}

// RowBytes returns the size in bytes of ne0 elements of type t (ggml_row_size).
// ne0 must be a non-negative multiple of the block size.
func RowBytes(t GGMLType, ne0 int64) (int64, error) {
	n, err := rowBytes(t, ne0)
	if err != nil {
		return 0, fmt.Errorf("gguf: %w", err)
	}
	return n, nil
}

func rowBytes(t GGMLType, ne0 int64) (int64, error) {
	if !t.Known() {
		return 0, fmt.Errorf("%w %s", ErrUnknownType, t)
	}
	if ne0 < 0 {
		return 0, fmt.Errorf("%s row of %d elements: negative length", t, ne0)
	}
	bs := int64(t.BlockSize())
	if ne0%bs != 0 {
		return 0, fmt.Errorf("%s row of %d elements is not a multiple of the block size %d", t, ne0, bs)
	}
	nb := ne0 / bs
	ts := int64(t.TypeSize())
	if nb > math.MaxInt64/ts {
		return 0, fmt.Errorf("%s row of %d elements: size overflows int64", t, ne0)
	}
	return nb * ts, nil
}

// tensorBytes returns the byte size of a tensor of type t and shape ne
// (ggml_nbytes for a contiguous tensor), checking for overflow.
func tensorBytes(t GGMLType, ne [4]int64) (uint64, error) {
	row, err := rowBytes(t, ne[0])
	if err != nil {
		return 0, err
	}
	size := uint64(row)
	for _, n := range ne[1:] {
		if n < 0 {
			return 0, fmt.Errorf("negative dimension %d", n)
		}
		if n != 0 && size > math.MaxInt64/uint64(n) {
			return 0, fmt.Errorf("size of shape %v overflows int64", ne)
		}
		size *= uint64(n)
	}
	return size, nil
}
