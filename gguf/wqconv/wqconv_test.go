package wqconv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/irtool/irtool/gguf"
)

// f16Fields are the byte offsets of each type's f16 fields in a block
// (ggml-common.h): d, then dmin or m where the type has one.
var f16Fields = map[gguf.GGMLType][]int{
	gguf.TypeQ8_0: {0}, gguf.TypeQ4_0: {0}, gguf.TypeQ5_0: {0},
	gguf.TypeQ4_1: {0, 2}, gguf.TypeQ5_1: {0, 2},
	gguf.TypeQ2_K: {80, 82}, gguf.TypeQ3_K: {108},
	gguf.TypeQ4_K: {0, 2}, gguf.TypeQ5_K: {0, 2}, gguf.TypeQ6_K: {208},
}

// randomF16 draws a finite f16: any exponent (subnormals and the largest
// values too) when wide, else a magnitude in [2⁻¹⁴, 1) as real models have.
func randomF16(r *rand.Rand, wide bool) uint16 {
	for {
		h := uint16(r.Uint32())
		if !wide {
			h = h&0x83ff | uint16(1+r.IntN(14))<<10
		}
		if finite(f16v(h)) {
			return h
		}
	}
}

// randomBlocks returns n random blocks of t: random quant bytes, random
// finite f16 fields.
func randomBlocks(r *rand.Rand, t gguf.GGMLType, n int, wide bool) []byte {
	ts := t.TypeSize()
	raw := make([]byte, n*ts)
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	for b := range n {
		for _, off := range f16Fields[t] {
			h := randomF16(r, wide)
			if t == gguf.TypeQ5_0 && math.Abs(float64(gguf.F16ToF32(h))) > 65504.0/16 {
				h &^= 0x4000 // q5_0's layout needs 16·d in f16: 2^-16 times d
			}
			binary.LittleEndian.PutUint16(raw[b*ts+off:], h)
		}
	}
	return raw
}

func ggmlValues(t *testing.T, typ gguf.GGMLType, raw []byte, n int) []float32 {
	t.Helper()
	y := make([]float32, n)
	if err := gguf.Dequantize(typ, raw, y); err != nil {
		t.Fatal(err)
	}
	return y
}

// sameValue: equal bits, or both zero (the sign of a zero product depends
// on the sign of the scale, which a mapping may flip).
func sameValue(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a == 0 && b == 0)
}

// TestExact: for q8_0, q4_0, q5_0 and q3_K, Dequant of the converted weight
// gives ggml's values bit for bit (and DequantF16 ggml's values rounded once
// to f16), on random blocks with any finite f16
// scale (subnormal, negative, zero, the largest) and on every tensor of
// those types in the reference models.
func TestExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, typ := range Types() {
		l, _ := LayoutOf(typ)
		if l.Accuracy != Exact {
			continue
		}
		t.Run(typ.String(), func(t *testing.T) {
			for _, wide := range []bool{true, false} {
				rows, cols := 7, 4*typ.BlockSize()
				raw := randomBlocks(r, typ, rows*cols/typ.BlockSize(), wide)
				// Special scales in the first blocks of row 0 (q5_0's
				// largest: 16·d must be an f16, 0x6bff).
				special := []uint16{0x0000, 0x8000, 0x0001, 0x7bff, 0xfbff}
				if l.HighBits {
					special = []uint16{0x0000, 0x8000, 0x0001, 0x6bff, 0xebff}
				}
				for i, h := range special {
					if i < cols/typ.BlockSize() {
						binary.LittleEndian.PutUint16(raw[i*typ.TypeSize()+f16Fields[typ][0]:], h)
					}
				}
				checkExact(t, typ, raw, rows, cols)
			}
		})
	}
}

func checkExact(t *testing.T, typ gguf.GGMLType, raw []byte, rows, cols int) {
	t.Helper()
	w, err := Convert(typ, raw, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	want := ggmlValues(t, typ, raw, rows*cols)
	got, got16 := Dequant(w), DequantF16(w)
	for i := range want {
		if !sameValue(got[i], want[i]) {
			t.Fatalf("%s [%d×%d] element %d (row %d col %d): Dequant %g (%#x), ggml %g (%#x)",
				typ, rows, cols, i, i/cols, i%cols, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
		// In f16 arithmetic the product is ggml's value rounded once;
		// a HighBits layout's two terms (each at most 8·|d|), each
		// rounded to f16 and their sum rounded, lie within 2 f16 ulps of
		// 16·|d| of it.
		w16 := gguf.F16ToF32(gguf.F32ToF16(want[i]))
		if w.HighBits {
			d := gguf.F16ToF32(w.Scale[i/w.Span])
			if e := math.Abs(float64(got16[i] - w16)); e > 2*f16ULP(16*d) {
				t.Fatalf("%s element %d: DequantF16 %g, f16(ggml) %g", typ, i, got16[i], w16)
			}
			continue
		}
		if !sameValue(got16[i], w16) {
			t.Fatalf("%s element %d: DequantF16 %g, f16(ggml) %g", typ, i, got16[i], w16)
		}
	}
}

// TestLayouts pins each type's device layout and bytes per weight (the
// table in docs/LOWERING.md) and checks DeviceBytes against a conversion.
func TestLayouts(t *testing.T) {
	cases := []struct {
		typ    gguf.GGMLType
		dtype  Dtype
		span   int
		offset bool
		acc    Accuracy
		bpw    float64
	}{
		{gguf.TypeQ4_0, Int4, 32, false, Exact, 0.5625},
		{gguf.TypeQ4_1, Int4, 32, true, RoundedParams, 0.625},
		{gguf.TypeQ5_0, Int4, 32, false, Exact, 0.6875},
		{gguf.TypeQ5_1, Int8, 32, true, RoundedParams, 1.125},
		{gguf.TypeQ8_0, Int8, 32, false, Exact, 1.0625},
		{gguf.TypeQ2_K, Int8, 32, true, Requantised, 1.125},
		{gguf.TypeQ3_K, Int8, 256, false, Exact, 1.0078125},
		{gguf.TypeQ4_K, Int4, 32, true, RoundedParams, 0.625},
		{gguf.TypeQ5_K, Int8, 32, true, RoundedParams, 1.125},
		{gguf.TypeQ6_K, Int8, 32, false, Requantised, 1.0625},
	}
	if len(cases) != len(Types()) {
		t.Fatalf("%d cases for %d types", len(cases), len(Types()))
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range cases {
		l, err := LayoutOf(c.typ)
		if err != nil {
			t.Fatal(err)
		}
		if l.Dtype != c.dtype || l.Span != c.span || l.Offset != c.offset || l.Accuracy != c.acc || l.BytesPerWeight() != c.bpw {
			t.Errorf("%s: layout %+v (%g B/w), want %s span %d offset %v %s %g B/w", c.typ, l, l.BytesPerWeight(), c.dtype, c.span, c.offset, c.acc, c.bpw)
		}
		rows, cols := 3, 512
		w, err := Convert(c.typ, randomBlocks(r, c.typ, rows*cols/c.typ.BlockSize(), false), rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := w.DeviceBytes(), l.DeviceBytes(rows, cols); got != want || float64(got) != c.bpw*float64(rows*cols) {
			t.Errorf("%s: DeviceBytes %d, Layout.DeviceBytes %d, want %g", c.typ, got, want, c.bpw*float64(rows*cols))
		}
		if int64(len(w.Bytes())) != w.DeviceBytes() {
			t.Errorf("%s: Bytes() is %d bytes, DeviceBytes %d", c.typ, len(w.Bytes()), w.DeviceBytes())
		}
		if err := w.Check(); err != nil {
			t.Errorf("%s: %v", c.typ, err)
		}
		if w.Groups() != cols/c.span || len(w.Scale) != rows*w.Groups() || c.offset != (len(w.Offset) == len(w.Scale)) {
			t.Errorf("%s: %d groups per row, %d scales, %d offsets", c.typ, w.Groups(), len(w.Scale), len(w.Offset))
		}
	}
}

// TestCheck: the group-size rules of aclnnWeightQuantBatchMatmulV2.
func TestCheck(t *testing.T) {
	cases := []struct {
		typ     gguf.GGMLType
		cols    int
		group   int
		wantErr string
	}{
		{gguf.TypeQ4_0, 32, 0, ""},    // one group covers the row: per channel
		{gguf.TypeQ4_0, 64, 32, ""},   // per group of 32
		{gguf.TypeQ3_K, 256, 0, ""},   // one super-block: per channel
		{gguf.TypeQ3_K, 512, 256, ""}, // per super-block
		{gguf.TypeQ4_K, 256, 32, ""},
		{gguf.TypeQ8_0, 65536, 32, "outside aclnnWeightQuantBatchMatmulV2's [1, 65535]"},
	}
	for _, c := range cases {
		l, _ := LayoutOf(c.typ)
		w := &Weights{Layout: l, Experts: 1, Rows: 4, Cols: c.cols}
		if g := w.GroupSize(); g != c.group {
			t.Errorf("%s k=%d: group size %d, want %d", c.typ, c.cols, g, c.group)
		}
		err := w.Check()
		if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("%s k=%d: Check() = %v, want %q", c.typ, c.cols, err, c.wantErr)
		}
	}
	d := &Weights{Layout: Layout{Type: gguf.TypeF32, Dtype: F16, Span: 64}, Experts: 1, Rows: 2, Cols: 64}
	if err := d.Check(); err == nil || !strings.Contains(err.Error(), "f16 values are not a WQBMM weight") {
		t.Errorf("f16 Check() = %v", err)
	}
}

// TestErrors: unsupported types and bad shapes are errors naming the type
// and dimensions.
func TestErrors(t *testing.T) {
	cases := []struct {
		typ                 gguf.GGMLType
		raw                 int
		experts, rows, cols int
		want                string
	}{
		{gguf.TypeIQ4_NL, 18, 1, 1, 32, "iq4_nl: no aclnnWeightQuantBatchMatmulV2 mapping"},
		{gguf.TypeF32, 128, 1, 1, 32, "f32: no aclnnWeightQuantBatchMatmulV2 mapping"},
		{gguf.TypeQ4_K, 144, 1, 1, 128, "q4_K [1×1×128]: 128 columns is not a multiple of the q4_K block size 256"},
		{gguf.TypeQ8_0, 34, 1, 2, 32, "q8_0 [1×2×32]: have 34 bytes, want 2×34 bytes of blocks"},
		{gguf.TypeQ8_0, 0, 1, 0, 32, "q8_0 [1×0×32]: every dimension must be at least 1"},
		{gguf.TypeQ6_K, 210, 2, 1, 256, "q6_K [2×1×256]: have 210 bytes, want 2×210 bytes of blocks"},
		{gguf.TypeQ8_0, 34, 1, math.MaxInt32 + 1, 32, "have 34 bytes"},
	}
	for _, c := range cases {
		_, err := ConvertExperts(c.typ, make([]byte, c.raw), c.experts, c.rows, c.cols)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.typ, err, c.want)
		}
	}
	if _, err := LayoutOf(gguf.TypeIQ2_XS); !errors.Is(err, ErrUnsupported) {
		t.Errorf("LayoutOf(iq2_xs): %v, want ErrUnsupported", err)
	}
	// A lossy mapping refuses a non-finite scale, naming the block.
	raw := make([]byte, 2*144)
	binary.LittleEndian.PutUint16(raw[144:], 0x7c00) // d = +Inf in block 1
	raw[144+4] = 1                                   // sub-block 0: sc = 1
	if _, err := Convert(gguf.TypeQ4_K, raw, 1, 512); err == nil || !strings.Contains(err.Error(), "q4_K [1×1×512]: expert 0 row 0 block 1: sub-block 0: non-finite scale") {
		t.Errorf("q4_K with d = Inf: %v", err)
	}
	if _, err := Dense(gguf.TypeIQ1_S, make([]byte, 50), 1, 256); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Dense(iq1_s): %v", err)
	}
}

// TestExperts: a 3-D weight converts to the per-expert conversions laid
// end to end.
func TestExperts(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, typ := range Types() {
		E, rows, cols := 3, 2, 512
		per := rows * cols / typ.BlockSize() * typ.TypeSize()
		raw := randomBlocks(r, typ, E*rows*cols/typ.BlockSize(), false)
		all, err := ConvertExperts(typ, raw, E, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		var data []byte
		var scale, off []uint16
		for e := range E {
			w, err := Convert(typ, raw[e*per:(e+1)*per], rows, cols)
			if err != nil {
				t.Fatal(err)
			}
			data = append(data, w.Data...)
			scale = append(scale, w.Scale...)
			off = append(off, w.Offset...)
		}
		if string(data) != string(all.Data) || !equal16(scale, all.Scale) || !equal16(off, all.Offset) {
			t.Errorf("%s: ConvertExperts differs from the experts converted one by one", typ)
		}
		if all.DeviceBytes() != int64(E)*all.Layout.DeviceBytes(rows, cols) {
			t.Errorf("%s: %d device bytes for %d experts of %d", typ, all.DeviceBytes(), E, all.Layout.DeviceBytes(rows, cols))
		}
	}
}

func equal16(a, b []uint16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestGetRows: get_rows on the converted layout equals Dequant's rows, for
// the int4 layout and its widened int8 copy; out-of-range ids are errors.
func TestGetRows(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, typ := range Types() {
		rows, cols := 9, 256
		w, err := Convert(typ, randomBlocks(r, typ, rows*cols/typ.BlockSize(), false), rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		all := Dequant(w)
		ids := []int32{8, 0, 3, 3}
		for _, v := range []*Weights{w, w.Widen()} {
			got, err := v.GetRows(ids)
			if err != nil {
				t.Fatal(err)
			}
			for i, id := range ids {
				for c := range cols {
					if !sameValue(got[i*cols+c], all[int(id)*cols+c]) {
						t.Fatalf("%s (%s): row %d col %d: %g, Dequant %g", typ, v.Dtype, id, c, got[i*cols+c], all[int(id)*cols+c])
					}
				}
			}
		}
		if w.Dtype == Int4 && !w.HighBits && (w.Widen().Dtype != Int8 || len(w.Widen().Data) != rows*cols) {
			t.Errorf("%s: Widen gave %s with %d bytes", typ, w.Widen().Dtype, len(w.Widen().Data))
		}
		if _, err := w.GetRows([]int32{9}); err == nil || !strings.Contains(err.Error(), "row 9 (index 0) outside the "+typ.String()+" table's 9 rows") {
			t.Errorf("%s: get_rows out of range: %v", typ, err)
		}
	}
}

// TestDense: the f16 fallback is exact for f16 and one rounding of ggml's
// value otherwise.
func TestDense(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, typ := range []gguf.GGMLType{gguf.TypeQ6_K, gguf.TypeQ4_K, gguf.TypeF16} {
		rows, cols := 2, 256
		var raw []byte
		if typ == gguf.TypeF16 {
			raw = make([]byte, 2*rows*cols)
			for i := 0; i < len(raw); i += 2 {
				binary.LittleEndian.PutUint16(raw[i:], randomF16(r, true))
			}
		} else {
			raw = randomBlocks(r, typ, rows*cols/typ.BlockSize(), false)
		}
		w, err := Dense(typ, raw, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		want := ggmlValues(t, typ, raw, rows*cols)
		for i, v := range Dequant(w) {
			if !sameValue(v, gguf.F16ToF32(gguf.F32ToF16(want[i]))) {
				t.Fatalf("%s element %d: %g, want f16(%g)", typ, i, v, want[i])
			}
		}
		if w.DeviceBytes() != int64(2*rows*cols) || w.Layout.DeviceBytes(rows, cols) != int64(2*rows*cols) {
			t.Errorf("%s dense: %d bytes", typ, w.DeviceBytes())
		}
	}
}

// TestInt4Packing: element 2i in the low nibble, 2i+1 in the high one,
// two's complement (aclnnConvertWeightToINT4Pack's order); for q4_0 the
// nibble is ggml's unsigned nibble xor 8, as ggml-cann writes it.
func TestInt4Packing(t *testing.T) {
	blk := make([]byte, 18)
	binary.LittleEndian.PutUint16(blk, 0x3c00)
	for j := range 16 {
		blk[2+j] = byte(j) | byte(15-j)<<4 // element j = j, element j+16 = 15−j
	}
	w, err := Convert(gguf.TypeQ4_0, blk, 1, 32)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 32 {
		u := i
		if i >= 16 {
			u = 31 - i
		}
		if got := w.Value(0, 0, i); int(got) != u-8 {
			t.Errorf("element %d: %d, want %d", i, got, u-8)
		}
		nib := w.Data[i/2] >> (4 * (i % 2)) & 0x0f
		if nib != byte(u)^8 {
			t.Errorf("element %d: nibble %#x, want %#x", i, nib, byte(u)^8)
		}
	}
}

// TestParallel: a weight large enough to be converted by several workers
// gives the bytes of its rows converted one at a time, and of two bad
// blocks the first is reported.
func TestParallel(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	typ := gguf.TypeQ4_K
	rows, cols := 256, 1024
	rowBytes := cols / 256 * 144
	raw := randomBlocks(r, typ, rows*cols/256, false)
	all, err := Convert(typ, raw, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		w, err := Convert(typ, raw[i*rowBytes:(i+1)*rowBytes], 1, cols)
		if err != nil {
			t.Fatal(err)
		}
		if string(w.Data) != string(all.Data[i*cols/2:(i+1)*cols/2]) || !equal16(w.Scale, all.Scale[i*cols/32:(i+1)*cols/32]) ||
			!equal16(w.Offset, all.Offset[i*cols/32:(i+1)*cols/32]) {
			t.Fatalf("row %d differs", i)
		}
	}
	for _, row := range []int{250, 3} {
		b := raw[row*rowBytes+144:]
		binary.LittleEndian.PutUint16(b, 0x7e00) // d = NaN in block 1
		b[4] = 1
	}
	if _, err := Convert(typ, raw, rows, cols); err == nil || !strings.Contains(err.Error(), "expert 0 row 3 block 1: sub-block 0: non-finite scale") {
		t.Errorf("two bad blocks: %v", err)
	}
}

// TestEdgeBlocks: blocks at the corners of the lossy mappings. A zero step
// (q4_1 with d = 0, a q4_K sub-block with sc = 0) is exact; a group whose
// offset would overflow f16 (a step far below its values' f16 resolution),
// a constant q2_K group and an all-zero q6_K block stay within the bounds.
func TestEdgeBlocks(t *testing.T) {
	h := func(v float32) [2]byte {
		var b [2]byte
		binary.LittleEndian.PutUint16(b[:], gguf.F32ToF16(v))
		return b
	}
	q41 := func(d, m float32, qs byte) []byte {
		b := make([]byte, 20)
		dd, mm := h(d), h(m)
		copy(b, dd[:])
		copy(b[2:], mm[:])
		for j := range 16 {
			b[4+j] = qs + byte(j)
		}
		return b
	}
	q4K := func(d, dmin float32, sc0, m0 byte) []byte {
		b := make([]byte, 144)
		dd, mm := h(d), h(dmin)
		copy(b, dd[:])
		copy(b[2:], mm[:])
		for j := range 12 {
			b[4+j] = 0x55
		}
		b[4], b[8] = sc0, m0 // sub-block 0: scale sc0, min m0
		for j := range 128 {
			b[16+j] = byte(j * 7)
		}
		return b
	}
	q2K := func() []byte {
		b := make([]byte, 84)
		dd, mm := h(0.01), h(0.02)
		copy(b[80:], dd[:])
		copy(b[82:], mm[:])
		for j := range 16 {
			b[j] = 0x30 // sc = 0, m = 3: every value −0.06
		}
		return b
	}
	cases := []struct {
		name  string
		typ   gguf.GGMLType
		raw   []byte
		exact bool
	}{
		{"q4_1 d=0", gguf.TypeQ4_1, q41(0, -3.5, 0x21), true},
		{"q4_1 d=2^-24 m=60000", gguf.TypeQ4_1, q41(0x1p-24, 60000, 0x31), false},
		{"q4_1 d=1 m=-65504", gguf.TypeQ4_1, q41(1, -65504, 0x0f), false},
		{"q4_K sc=0", gguf.TypeQ4_K, q4K(0.5, 0.25, 0, 37), false},
		{"q4_K d=0", gguf.TypeQ4_K, q4K(0, 0.25, 9, 37), true},
		{"q2_K constant", gguf.TypeQ2_K, q2K(), false},
		{"q6_K zero", gguf.TypeQ6_K, make([]byte, 210), true},
	}
	for _, c := range cases {
		w, err := Convert(c.typ, c.raw, 1, c.typ.BlockSize())
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		want := ggmlValues(t, c.typ, c.raw, c.typ.BlockSize())
		got := Dequant(w)
		var s stats
		s.add(want, got, 32)
		if c.exact && s.exactGrp != s.groups || s.maxRel > bounds[c.typ] {
			t.Errorf("%s: %v (bound %g, exact %v)", c.name, &s, bounds[c.typ], c.exact)
		}
	}
	// The q4_K sub-block with sc = 0 holds −dmin·m exactly.
	w, err := Convert(gguf.TypeQ4_K, q4K(0.5, 0.25, 0, 37), 1, 256)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range Dequant(w)[:32] {
		if v != -0.25*37 {
			t.Fatalf("sub-block 0 element %d: %g, want %g", i, v, -0.25*37)
		}
	}
}

// f16ULP is the spacing of f16 values at v (the subnormal spacing below
// 2^-14).
func f16ULP(v float32) float64 {
	a := math.Abs(float64(v))
	if a < 0x1p-14 {
		return 0x1p-24
	}
	return math.Ldexp(1, math.Ilogb(a)-10)
}

// TestQ5_0Bytes pins q5_0's int4 + high-bit layout on one hand-made block
// (d = 1, fifth bits of elements 0 and 31 set, qs[j] = j): the low nibbles
// minus 8 as int4 (even column in the low nibble), the f16 scale, then
// the bitmask of fifth bits (bit c%8 of byte c/8), 22 bytes as the block;
// and a block whose 16·d is beyond f16 is refused.
func TestQ5_0Bytes(t *testing.T) {
	blk := make([]byte, 22)
	binary.LittleEndian.PutUint16(blk, 0x3c00)
	binary.LittleEndian.PutUint32(blk[2:], 0x80000001)
	for j := range 16 {
		blk[6+j] = byte(j)
	}
	w, err := Convert(gguf.TypeQ5_0, blk, 1, 32)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0x98, 0xba, 0xdc, 0xfe, 0x10, 0x32, 0x54, 0x76, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88,
		0x00, 0x3c, 0x01, 0x00, 0x00, 0x80}
	if got := w.Bytes(); !bytes.Equal(got, want) {
		t.Errorf("bytes % x\nwant  % x", got, want)
	}
	checkExact(t, gguf.TypeQ5_0, blk, 1, 32)
	binary.LittleEndian.PutUint16(blk, 0x6c00) // 4096: 16·d = 65536
	if _, err := Convert(gguf.TypeQ5_0, blk, 1, 32); err == nil || !strings.Contains(err.Error(), "16·d is beyond f16") {
		t.Errorf("d = 4096: %v", err)
	}
}
