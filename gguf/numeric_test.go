package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/irtool/irtool/internal/testref"
)

// TestF32ToF16MatchesNumpy converts synth-llama's F32 master weights and
// compares with synth-llama-F16.gguf, whose 2-D matrices are numpy's
// astype(float16) of the same weights (written by llama.cpp's gguf-py).
func TestF32ToF16MatchesNumpy(t *testing.T) {
	f32 := openT(t, testref.Testdata("synth-llama-F32.gguf"))
	f16 := openT(t, testref.Testdata("synth-llama-F16.gguf"))
	n := 0
	for _, ti := range f16.Tensors {
		if ti.Type != TypeF16 {
			continue
		}
		master, err := f32.TensorFloat32(ti.Name)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := f16.TensorData(ti.Name)
		for i, x := range master {
			got := F32ToF16(x)
			if w := binary.LittleEndian.Uint16(want[2*i:]); got != w {
				t.Fatalf("%s[%d]: F32ToF16(%g) = %#04x, numpy %#04x", ti.Name, i, x, got, w)
			}
		}
		n += len(master)
	}
	if n == 0 {
		t.Fatal("no f16 tensors found")
	}
	t.Logf("%d values converted identically to numpy", n)
}

// TestF16RoundTripAndRounding checks every half value: F16ToF32 then
// F32ToF16 gives it back, and the float32 midpoint between two neighbours
// rounds to the even one while the floats just either side of it round to
// the nearer one (IEEE 754 round-to-nearest-even, what F16C does).
func TestF16RoundTripAndRounding(t *testing.T) {
	for h := range 1 << 16 {
		f := F16ToF32(uint16(h))
		got := F32ToF16(f)
		if math.IsNaN(float64(f)) {
			if got&0x7c00 != 0x7c00 || got&0x3ff == 0 || got&0x200 == 0 || got&0x8000 != uint16(h)&0x8000 {
				t.Fatalf("NaN %#04x -> %#04x, want a quiet NaN of the same sign", h, got)
			}
			continue
		}
		if got != uint16(h) {
			t.Fatalf("%#04x -> %g -> %#04x", h, f, got)
		}
	}
	for _, sign := range []uint16{0, 0x8000} {
		for a := uint16(0); a < 0x7c00; a++ {
			b := a + 1
			fa := float64(F16ToF32(a | sign))
			fb := 65536.0 // the value Inf (0x7c00) stands in for when rounding
			if b < 0x7c00 {
				fb = float64(F16ToF32(b | sign))
			} else if sign != 0 {
				fb = -fb
			}
			mid := float32((fa + fb) / 2) // exact: halves have 11-bit significands
			even := a
			if a&1 == 1 {
				even = b
			}
			if got := F32ToF16(mid); got != even|sign {
				t.Fatalf("midpoint %g of %#04x and %#04x -> %#04x, want %#04x", mid, a|sign, b|sign, got, even|sign)
			}
			towardA := math.Nextafter32(mid, float32(fa))
			towardB := math.Nextafter32(mid, float32(fb))
			if got := F32ToF16(towardA); got != a|sign {
				t.Fatalf("%g (just toward %#04x) -> %#04x", towardA, a|sign, got)
			}
			if got := F32ToF16(towardB); got != b|sign {
				t.Fatalf("%g (just toward %#04x) -> %#04x", towardB, b|sign, got)
			}
		}
	}
	for _, c := range []struct {
		in   float32
		want uint16
	}{
		{float32(math.Inf(1)), 0x7c00}, {float32(math.Inf(-1)), 0xfc00}, {1e10, 0x7c00}, {-1e10, 0xfc00},
		{1e-10, 0}, {-1e-10, 0x8000}, {math.SmallestNonzeroFloat32, 0}, {65504, 0x7bff}, {1, 0x3c00},
		{float32(math.NaN()), 0x7e00},
	} {
		if got := F32ToF16(c.in); got != c.want {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
}

func TestBF16(t *testing.T) {
	for h := range 1 << 16 {
		f := BF16ToF32(uint16(h))
		if math.IsNaN(float64(f)) {
			if g := F32ToBF16(f); g&0x7f80 != 0x7f80 || g&0x40 == 0 {
				t.Fatalf("NaN %#04x -> %#04x", h, g)
			}
			continue
		}
		if g := F32ToBF16(f); g != uint16(h) {
			t.Fatalf("%#04x -> %#04x", h, g)
		}
	}
	// 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125: ties to even (1.0).
	if g := F32ToBF16(1 + 1.0/256); g != 0x3f80 {
		t.Errorf("tie rounded to %#04x", g)
	}
	if g := F32ToBF16(1 + 3.0/256); g != 0x3f82 {
		t.Errorf("tie rounded to %#04x, want 0x3f82 (even)", g)
	}
}

// TestQuantizeMatchesReference quantises synth-llama's F32 master weights
// and compares with the Q8_0 and Q4_0 files that llama.cpp's gguf-py wrote
// from the same weights.
func TestQuantizeMatchesReference(t *testing.T) {
	master := openT(t, testref.Testdata("synth-llama-F32.gguf"))
	for _, c := range []struct {
		file string
		typ  GGMLType
		q    func([]float32) ([]byte, error)
	}{
		{"synth-llama-Q8_0.gguf", TypeQ8_0, QuantizeQ8_0},
		{"synth-llama-Q4_0.gguf", TypeQ4_0, QuantizeQ4_0},
	} {
		t.Run(c.typ.String(), func(t *testing.T) {
			f := openT(t, testref.Testdata(c.file))
			blocks, bad := 0, 0
			for _, ti := range f.Tensors {
				if ti.Type != c.typ {
					continue
				}
				x, err := master.TensorFloat32(ti.Name)
				if err != nil {
					t.Fatal(err)
				}
				got, err := c.q(x)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := f.TensorData(ti.Name)
				bs := c.typ.TypeSize()
				for i := 0; i < len(want); i += bs {
					blocks++
					if !bytes.Equal(got[i:i+bs], want[i:i+bs]) {
						bad++
						if bad <= 3 {
							t.Errorf("%s block %d: got % x, gguf-py % x", ti.Name, i/bs, got[i:i+bs], want[i:i+bs])
						}
					}
				}
			}
			if blocks == 0 {
				t.Fatal("no blocks compared")
			}
			if bad > 0 {
				t.Errorf("%d of %d blocks differ", bad, blocks)
			}
			t.Logf("%d blocks identical to gguf-py's", blocks-bad)
		})
	}
}

// TestQuantizeEdgeCases covers all-zero blocks, ties and refusals.
func TestQuantizeEdgeCases(t *testing.T) {
	zero := make([]float32, 32)
	for _, q := range []func([]float32) ([]byte, error){QuantizeQ8_0, QuantizeQ4_0} {
		b, err := q(zero)
		if err != nil {
			t.Fatal(err)
		}
		back := make([]float32, 32)
		typ := TypeQ8_0
		if len(b) == 18 {
			typ = TypeQ4_0
		}
		if err := Dequantize(typ, b, back); err != nil {
			t.Fatal(err)
		}
		for _, v := range back {
			if v != 0 {
				t.Fatalf("%s of zeros dequantises to %v", typ, back)
			}
		}
		if _, err := q(make([]float32, 31)); err == nil {
			t.Error("31 values accepted")
		}
		bad := make([]float32, 32)
		bad[3] = float32(math.NaN())
		if _, err := q(bad); err == nil {
			t.Error("NaN accepted")
		}
	}
	// Q8_0: the largest magnitude maps to ±127 and x = 63.5/127*amax rounds away from zero.
	x := make([]float32, 32)
	x[0], x[1], x[2] = 127, -63.5, 0.5
	b, _ := QuantizeQ8_0(x)
	if int8(b[2]) != 127 || int8(b[3]) != -64 || int8(b[4]) != 1 {
		t.Errorf("q8_0 quants %d %d %d, want 127 -64 1", int8(b[2]), int8(b[3]), int8(b[4]))
	}
	// Q4_0: d = max/-8 with max the signed value of largest magnitude.
	x[0], x[1], x[2] = -8, 4, 1
	b, _ = QuantizeQ4_0(x)
	if d := F16ToF32(binary.LittleEndian.Uint16(b)); d != 1 {
		t.Errorf("q4_0 d = %v, want 1", d)
	}
	if b[2]&0xf != 0 || b[3]&0xf != 12 || b[4]&0xf != 9 {
		t.Errorf("q4_0 nibbles %d %d %d, want 0 12 9", b[2]&0xf, b[3]&0xf, b[4]&0xf)
	}
}

// TestDequantizeErrors checks argument validation.
func TestDequantizeErrors(t *testing.T) {
	dst := make([]float32, 32)
	if err := Dequantize(TypeIQ2_XXS, make([]byte, 66), make([]float32, 256)); !errors.Is(err, ErrUnsupported) {
		t.Errorf("iq2_xxs: %v", err)
	}
	if err := Dequantize(TypeQ4_0, make([]byte, 17), dst); err == nil {
		t.Error("short source accepted")
	}
	if err := Dequantize(TypeQ4_0, make([]byte, 18), dst[:31]); err == nil {
		t.Error("partial block accepted")
	}
	if err := Dequantize(GGMLType(1000), nil, nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("type 1000: %v", err)
	}
	for _, ty := range []GGMLType{TypeF32, TypeF16, TypeBF16, TypeQ4_0, TypeQ4_1, TypeQ5_0, TypeQ5_1, TypeQ8_0,
		TypeQ2_K, TypeQ3_K, TypeQ4_K, TypeQ5_K, TypeQ6_K, TypeIQ4_NL, TypeIQ4_XS} {
		if !CanDequantize(ty) {
			t.Errorf("CanDequantize(%s) = false", ty)
		}
		// Random bytes never make it panic.
		n := ty.BlockSize() * 4
		src := bytes.Repeat([]byte{0xA5, 0x3C, 0xFF, 0x00, 0x7B}, ty.TypeSize()*4)
		if err := Dequantize(ty, src, make([]float32, n)); err != nil {
			t.Errorf("%s: %v", ty, err)
		}
	}
}

// TestDequantizeFormulas checks each block layout on hand-made blocks whose
// values follow directly from ggml's formulas.
func TestDequantizeFormulas(t *testing.T) {
	h := func(x float32) []byte { v := F32ToF16(x); return []byte{byte(v), byte(v >> 8)} }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	rep := func(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }
	cases := []struct {
		typ  GGMLType
		blk  []byte
		want func(i int) float32
	}{
		// q4_0: nibble 0x3 low, 0xC high: (3-8)*0.5 and (12-8)*0.5.
		{TypeQ4_0, cat(h(0.5), rep(0xC3, 16)), func(i int) float32 { return []float32{-2.5, 2}[i/16] }},
		// q4_1: 3*0.5+1, 12*0.5+1.
		{TypeQ4_1, cat(h(0.5), h(1), rep(0xC3, 16)), func(i int) float32 { return []float32{2.5, 7}[i/16] }},
		// q5_0: qh all ones adds 16: (3+16-16)*0.5, (12+16-16)*0.5.
		{TypeQ5_0, cat(h(0.5), rep(0xFF, 4), rep(0xC3, 16)), func(i int) float32 { return []float32{1.5, 6}[i/16] }},
		// q5_1: (3+16)*0.5+1, (12+16)*0.5+1.
		{TypeQ5_1, cat(h(0.5), h(1), rep(0xFF, 4), rep(0xC3, 16)), func(i int) float32 { return []float32{10.5, 15}[i/16] }},
		// q8_0: -3*0.25.
		{TypeQ8_0, cat(h(0.25), rep(0xFD, 32)), func(int) float32 { return -0.75 }},
		// q2_K: scale nibble 2, min nibble 1, quants 0b11: 2*2*3 - 0.5*1 = 11.5.
		{TypeQ2_K, cat(rep(0x12, 16), rep(0xFF, 64), h(2), h(0.5)), func(int) float32 { return 11.5 }},
		// q3_K: hmask set (no -4), quant 3, 6-bit scale 33 (-32 = 1): 1*1*3 = 3.
		{TypeQ3_K, cat(rep(0xFF, 32), rep(0xFF, 64), rep(0x11, 8), rep(0xAA, 4), h(1)), func(int) float32 { return 3 }},
		// q4_K: scales 1, mins 1 (j<4: low 6 bits; j>=4 from the nibbles): 1*1*q - 0.5.
		{TypeQ4_K, cat(h(1), h(0.5), []byte{1, 1, 1, 1, 1, 1, 1, 1, 0x11, 0x11, 0x11, 0x11}, rep(0x52, 128)),
			func(i int) float32 { return []float32{1.5, 4.5}[(i/32)%2] }},
		// q5_K: as q4_K with every fifth bit set: +16.
		{TypeQ5_K, cat(h(1), h(0.5), []byte{1, 1, 1, 1, 1, 1, 1, 1, 0x11, 0x11, 0x11, 0x11}, rep(0xFF, 32), rep(0x52, 128)),
			func(i int) float32 { return []float32{17.5, 20.5}[(i/32)%2] }},
		// iq4_nl: nibble 0x3 low (kvalues[3] = -65), 0xC high (kvalues[12] = 53), d 0.5.
		{TypeIQ4_NL, cat(h(0.5), rep(0xC3, 16)), func(i int) float32 { return []float32{-32.5, 26.5}[i/16] }},
		// iq4_xs: scales_l 0x21 (sub-blocks 1 (even), 2 (odd)), scales_h 0b10 per
		// sub-block (+32): ls 33 / 34, dl = 0.5·1 / 0.5·2; nibbles 0x3 / 0xC.
		{TypeIQ4_XS, cat(h(0.5), []byte{0xAA, 0xAA}, rep(0x21, 4), rep(0xC3, 128)),
			func(i int) float32 { return []float32{-32.5, 26.5, -65, 53}[(i/32)%2*2+(i%32)/16] }},
		// q6_K: ql 0x21, qh 0 -> quants 1 and 2 (minus 32), scale 2, d 0.5.
		{TypeQ6_K, cat(rep(0x21, 128), rep(0, 64), rep(2, 16), h(0.5)),
			func(i int) float32 { return []float32{-31, -31, -30, -30}[(i%128)/32] }},
	}
	for _, c := range cases {
		if len(c.blk) != c.typ.TypeSize() {
			t.Fatalf("%s: test block is %d bytes, want %d", c.typ, len(c.blk), c.typ.TypeSize())
		}
		dst := make([]float32, c.typ.BlockSize())
		if err := Dequantize(c.typ, c.blk, dst); err != nil {
			t.Fatal(err)
		}
		for i, v := range dst {
			if w := c.want(i); v != w {
				t.Errorf("%s[%d] = %v, want %v", c.typ, i, v, w)
				break
			}
		}
	}
}
