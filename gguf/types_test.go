package gguf

import (
	"math"
	"strings"
	"testing"
)

// TestTypeTable spot-checks the table against ggml.h / ggml-common.h: ids,
// names as ggml_type_name prints them, block sizes and bytes per block.
func TestTypeTable(t *testing.T) {
	cases := []struct {
		t      GGMLType
		id     uint32
		name   string
		bs, ts int
	}{
		{TypeF32, 0, "f32", 1, 4}, {TypeF16, 1, "f16", 1, 2}, {TypeQ4_0, 2, "q4_0", 32, 18},
		{TypeQ4_1, 3, "q4_1", 32, 20}, {TypeQ5_0, 6, "q5_0", 32, 22}, {TypeQ5_1, 7, "q5_1", 32, 24},
		{TypeQ8_0, 8, "q8_0", 32, 34}, {TypeQ8_1, 9, "q8_1", 32, 36}, {TypeQ2_K, 10, "q2_K", 256, 84},
		{TypeQ3_K, 11, "q3_K", 256, 110}, {TypeQ4_K, 12, "q4_K", 256, 144}, {TypeQ5_K, 13, "q5_K", 256, 176},
		{TypeQ6_K, 14, "q6_K", 256, 210}, {TypeQ8_K, 15, "q8_K", 256, 292}, {TypeIQ2_XXS, 16, "iq2_xxs", 256, 66},
		{TypeIQ2_XS, 17, "iq2_xs", 256, 74}, {TypeIQ3_XXS, 18, "iq3_xxs", 256, 98}, {TypeIQ1_S, 19, "iq1_s", 256, 50},
		{TypeIQ4_NL, 20, "iq4_nl", 32, 18}, {TypeIQ3_S, 21, "iq3_s", 256, 110}, {TypeIQ2_S, 22, "iq2_s", 256, 82},
		{TypeIQ4_XS, 23, "iq4_xs", 256, 136}, {TypeI8, 24, "i8", 1, 1}, {TypeI16, 25, "i16", 1, 2},
		{TypeI32, 26, "i32", 1, 4}, {TypeI64, 27, "i64", 1, 8}, {TypeF64, 28, "f64", 1, 8},
		{TypeIQ1_M, 29, "iq1_m", 256, 56}, {TypeBF16, 30, "bf16", 1, 2}, {TypeTQ1_0, 34, "tq1_0", 256, 54},
		{TypeTQ2_0, 35, "tq2_0", 256, 66}, {TypeMXFP4, 39, "mxfp4", 32, 17}, {TypeNVFP4, 40, "nvfp4", 64, 36},
		{TypeQ1_0, 41, "q1_0", 128, 18}, {TypeQ2_0, 42, "q2_0", 64, 18},
	}
	known := 0
	for i := range TypeCount {
		if i.Known() {
			known++
		}
	}
	if known != len(cases) {
		t.Errorf("%d known types, the test lists %d", known, len(cases))
	}
	for _, c := range cases {
		if uint32(c.t) != c.id || c.t.String() != c.name || c.t.BlockSize() != c.bs || c.t.TypeSize() != c.ts || !c.t.Known() {
			t.Errorf("%d: got %s %d/%d", c.id, c.t, c.t.BlockSize(), c.t.TypeSize())
		}
		p, err := ParseGGMLType(strings.ToUpper(c.name))
		if err != nil || p != c.t {
			t.Errorf("ParseGGMLType(%q) = %v, %v", strings.ToUpper(c.name), p, err)
		}
		if c.t.IsQuantized() != (c.bs > 1) {
			t.Errorf("%s: IsQuantized = %v", c.t, c.t.IsQuantized())
		}
	}
	for _, id := range []uint32{4, 5, 31, 32, 33, 36, 37, 38, 43, 1 << 31} {
		ty := GGMLType(id)
		if ty.Known() || ty.BlockSize() != 0 || ty.TypeSize() != 0 {
			t.Errorf("id %d (%s) should be unknown", id, ty)
		}
		if _, err := RowBytes(ty, 32); err == nil {
			t.Errorf("RowBytes(%s) succeeded", ty)
		}
	}
	if _, err := ParseGGMLType("q4_2(removed)"); err == nil {
		t.Error("removed type parsed")
	}
}

func TestRowBytes(t *testing.T) {
	for _, c := range []struct {
		t    GGMLType
		ne0  int64
		want int64
		ok   bool
	}{
		{TypeF32, 10, 40, true}, {TypeQ4_0, 64, 36, true}, {TypeQ4_K, 512, 288, true}, {TypeQ4_0, 33, 0, false},
		{TypeF32, -1, 0, false}, {TypeF32, 1 << 62, 0, false}, {TypeQ6_K, 0, 0, true},
	} {
		got, err := RowBytes(c.t, c.ne0)
		if got != c.want || (err == nil) != c.ok {
			t.Errorf("RowBytes(%s, %d) = %d, %v", c.t, c.ne0, got, err)
		}
	}
}

func TestValueAccessors(t *testing.T) {
	if v, ok := I8(-3).Int(); !ok || v != -3 {
		t.Errorf("I8: %d %v", v, ok)
	}
	if _, ok := I8(-3).Uint(); ok {
		t.Error("negative Uint")
	}
	if _, ok := U64(1 << 63).Int(); ok {
		t.Error("u64 2^63 as int64")
	}
	if v, ok := U64(1 << 63).Uint(); !ok || v != 1<<63 {
		t.Error("u64 Uint")
	}
	if _, ok := I32s([]int32{1}).Index(0).Float(); ok {
		t.Error("Float of i32")
	}
	if xs, ok := U64s([]uint64{1 << 40}).Int32s(); ok {
		t.Errorf("2^40 fit in int32: %v", xs)
	}
	if xs, ok := U16s([]uint16{7, 9}).Int32s(); !ok || xs[1] != 9 {
		t.Errorf("u16 Int32s %v %v", xs, ok)
	}
	if xs, ok := F64s([]float64{0.5}).Float32s(); !ok || xs[0] != 0.5 {
		t.Errorf("f64 Float32s %v %v", xs, ok)
	}
	if xs, ok := I8s([]int8{-2}).Int64s(); !ok || xs[0] != -2 {
		t.Errorf("Int64s %v %v", xs, ok)
	}
	if (Value{}).IsValid() || !U8(1).IsValid() || ArrayOf(ValUint8, []Value{I8(1)}).IsValid() {
		t.Error("IsValid")
	}
	if got := Strs([]string{"a", "b"}).String(); got != `[2 × str] {"a", "b"}` {
		t.Errorf("String() = %s", got)
	}
	if got := F32(0.25).String(); got != "0.25" {
		t.Errorf("String() = %s", got)
	}
	if U8(1).Index(0).IsValid() || U8s([]uint8{1}).Index(1).IsValid() {
		t.Error("Index out of range returned a value")
	}
	if F32(0).Equal(F32(float32(negZero()))) {
		t.Error("0 == -0 bitwise")
	}
}

func negZero() float64 { return math.Copysign(0, -1) }
