package ir

import (
	"strings"
	"testing"
)

func TestDimParsePrint(t *testing.T) {
	tests := []struct {
		in   string
		want Dim
		out  string // canonical text; "" means in
	}{
		{"0", C(0), ""},
		{"64", C(64), ""},
		{" 7 ", C(7), "7"},
		{"9223372036854775807", C(9223372036854775807), ""},
		{"n_tokens", S("n_tokens"), ""},
		{"_x9", S("_x9"), ""},
		{"n_kv*64", Scaled("n_kv", 64), ""},
		{"n*1", S("n"), "n"},
		{"n*01", S("n"), "n"},
		{"pad(n_tokens,64)", Padded("n_tokens", 64), ""},
		{"pad( n_tokens , 64 )", Padded("n_tokens", 64), "pad(n_tokens,64)"},
		{"pad(n*2,32)", Dim{Sym: "n", Scale: 2, Align: 32}, ""},
		{"pad(n,1)", S("n"), "n"},
	}
	for _, tc := range tests {
		d, err := ParseDim(tc.in)
		if err != nil {
			t.Errorf("ParseDim(%q): %v", tc.in, err)
			continue
		}
		if !d.Equal(tc.want) {
			t.Errorf("ParseDim(%q) = %#v, want %#v", tc.in, d, tc.want)
		}
		out := tc.out
		if out == "" {
			out = tc.in
		}
		if d.String() != out {
			t.Errorf("ParseDim(%q).String() = %q, want %q", tc.in, d.String(), out)
		}
		again, err := ParseDim(d.String())
		if err != nil || !again.Equal(d) {
			t.Errorf("re-parse of %q: %v, %v", d.String(), again, err)
		}
	}
}

func TestDimParseErrors(t *testing.T) {
	for _, in := range []string{
		"", " ", "-1", "-0x1", "1.5", "1e3", "99999999999999999999", "+3",
		"n*0", "n*-2", "n*x", "n*", "*4", "n*2*3", "n*2000000000000",
		"9n", "n-1", "n+1", "a.b", "n tokens",
		"pad()", "pad(n)", "pad(,4)", "pad(4,2)", "pad(n,0)", "pad(n,-4)", "pad(n,x)",
		"pad(pad(n,2),4)", "pad(n,2)*3", "pad(n,2000000000)", "dim(4)",
	} {
		if d, err := ParseDim(in); err == nil {
			t.Errorf("ParseDim(%q) = %v, want an error", in, d)
		}
	}
}

func TestDimEqualNormalises(t *testing.T) {
	// The zero Scale means 1; Align 0 and 1 mean none; a constant ignores both.
	pairs := [][2]Dim{
		{Dim{Sym: "n"}, S("n")},
		{Dim{Sym: "n", Scale: 1, Align: 1}, S("n")},
		{Dim{Val: 5, Scale: 3, Align: 8}, C(5)},
		{Dim{Sym: "n", Val: 99, Scale: 1}, S("n")},
	}
	for _, p := range pairs {
		if !p[0].Equal(p[1]) || !p[1].Equal(p[0]) {
			t.Errorf("%#v and %#v should be equal", p[0], p[1])
		}
	}
	for _, p := range [][2]Dim{
		{S("n"), S("m")}, {S("n"), Scaled("n", 2)}, {S("n"), Padded("n", 64)},
		{C(64), S("n")}, {C(1), C(2)}, {Padded("n", 32), Padded("n", 64)},
	} {
		if p[0].Equal(p[1]) {
			t.Errorf("%v and %v should differ", p[0], p[1])
		}
	}
}

func TestDimEval(t *testing.T) {
	b := Bindings{"n": 5, "z": 0, "big": 1 << 61}
	tests := []struct {
		d    Dim
		want int64
		err  string
	}{
		{C(7), 7, ""},
		{S("n"), 5, ""},
		{Scaled("n", 64), 320, ""},
		{Padded("n", 64), 64, ""},
		{Padded("n", 5), 5, ""},
		{Padded("n", 4), 8, ""},
		{Padded("z", 64), 0, ""},
		{Dim{Sym: "n", Scale: 3, Align: 4}, 16, ""},
		{S("m"), 0, `"m" is not bound`},
		{Scaled("big", 4), 0, "out of range"},
		{Padded("big", 1<<62), 0, "out of range"},
	}
	for _, tc := range tests {
		v, err := tc.d.Eval(b)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v.Eval: %v, %v; want error %q", tc.d, v, err, tc.err)
			}
			continue
		}
		if err != nil || v != tc.want {
			t.Errorf("%v.Eval = %d, %v; want %d", tc.d, v, err, tc.want)
		}
	}
	if _, err := S("n").Eval(Bindings{"n": -1}); err == nil {
		t.Error("a negative binding should be rejected")
	}
}

func TestBindingsString(t *testing.T) {
	b := Bindings{"n_tokens": 5, "n_kv": 32, "a": 0}
	if got, want := b.String(), "a=0,n_kv=32,n_tokens=5"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := (Bindings{}).String(); got != "" {
		t.Errorf("empty bindings print %q", got)
	}
}

func TestShapeBasics(t *testing.T) {
	s := Sh(64, "n_tokens", Padded("n", 4))
	if s.Rank() != 3 || s[3].Val != 1 {
		t.Errorf("Sh: %v rank %d", s, s.Rank())
	}
	if got := Sh().Rank(); got != 1 {
		t.Errorf("rank of the scalar shape: %d", got)
	}
	if got := Sh(1, 1, 1, "n").Rank(); got != 4 {
		t.Errorf("rank of [1,1,1,n]: %d", got)
	}
	if got := Sh(int64(3), 4, 5, 6, 7); !got.Equal(Sh(3, 4, 5, 6)) {
		t.Errorf("Sh ignores dims beyond %d: %v", MaxDims, got)
	}
	if !s.Equal(Sh(C(64), S("n_tokens"), Dim{Sym: "n", Align: 4})) {
		t.Error("Equal should normalise dims")
	}
	if s.IsStatic() || !Sh(1, 2).IsStatic() {
		t.Error("IsStatic")
	}
	if _, err := s.Ne(); err == nil {
		t.Error("Ne of a symbolic shape should fail")
	}
	if ne, err := Sh(2, 3).Ne(); err != nil || ne != [MaxDims]int64{2, 3, 1, 1} {
		t.Errorf("Ne = %v, %v", ne, err)
	}
	if got := Sh("b", "a", "b", Scaled("c", 2)).Symbols(); strings.Join(got, ",") != "a,b,c" {
		t.Errorf("Symbols = %v", got)
	}
	ev, err := s.Eval(Bindings{"n_tokens": 3, "n": 3})
	if err != nil || !ev.Equal(Sh(64, 3, 4)) {
		t.Errorf("Eval = %v, %v", ev, err)
	}
	if _, err := s.Eval(Bindings{"n": 3}); err == nil {
		t.Error("Eval with a missing binding should fail")
	}
}

func TestShPanicsOnBadDim(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Sh(1.5) should panic (a programming error)")
		}
	}()
	Sh(1.5)
}

func TestTypeParsePrint(t *testing.T) {
	tests := []struct {
		in   string
		want Type
		out  string
	}{
		{"f32[64]", T(F32, 64), ""},
		{"f32[64,1]", T(F32, 64), "f32[64]"},
		{"f32[64,1,1,1]", T(F32, 64), "f32[64]"},
		{"f32[1]", T(F32), ""},
		{"i32[n_tokens]", T(I32, "n_tokens"), ""},
		{"f16[64,n_kv,1,2]", T(F16, 64, "n_kv", 1, 2), ""},
		{"f32[n_kv,pad(n_tokens,64)]", T(F32, "n_kv", Padded("n_tokens", 64)), ""},
		{"q4_K[256,n*2]", T(Q4_K, 256, Scaled("n", 2)), ""},
		{"bf16[0]", T(BF16, 0), ""},
		{"f32[ 4 , n ]", T(F32, 4, "n"), "f32[4,n]"},
	}
	for _, tc := range tests {
		got, err := ParseType(tc.in)
		if err != nil {
			t.Errorf("ParseType(%q): %v", tc.in, err)
			continue
		}
		if !got.Equal(tc.want) {
			t.Errorf("ParseType(%q) = %v, want %v", tc.in, got, tc.want)
		}
		out := tc.out
		if out == "" {
			out = tc.in
		}
		if got.String() != out {
			t.Errorf("ParseType(%q).String() = %q, want %q", tc.in, got.String(), out)
		}
	}
	for _, in := range []string{
		"", "f32", "f32[]", "f32[", "f32]", "[4]", "f33[4]", "F32[4]", "f32[4]x",
		"f32[1,2,3,4,5]", "f32[-1]", "f32[4,]", "f32[[4]]", "f32(4)", "type99[4]",
	} {
		if ty, err := ParseType(in); err == nil {
			t.Errorf("ParseType(%q) = %v, want an error", in, ty)
		}
	}
}

func TestDTypes(t *testing.T) {
	for _, dt := range []DType{F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, I8, I16, I32, I64, F64, BF16} {
		if !dt.Known() {
			t.Errorf("%d not known", dt)
		}
		back, ok := ParseDType(dt.String())
		if !ok || back != dt {
			t.Errorf("ParseDType(%q) = %v, %v", dt.String(), back, ok)
		}
		if dt.Quantized() != (dt.BlockSize() > 1) || dt.Quantized() && (dt.IsFloat() || dt.IsInt()) {
			t.Errorf("%s: inconsistent classification", dt)
		}
	}
	if DType(99).Known() || DType(99).String() != "type99" {
		t.Error("unknown dtype")
	}
	// Sizes as ggml's type traits give them.
	for _, c := range []struct {
		dt   DType
		n    int64
		want int64
	}{
		{F32, 64, 256}, {F16, 64, 128}, {BF16, 3, 6}, {Q4_0, 64, 36}, {Q8_0, 32, 34},
		{Q4_K, 512, 288}, {Q6_K, 256, 210}, {I64, 2, 16}, {Q2_K, 0, 0},
	} {
		got, err := c.dt.RowBytes(c.n)
		if err != nil || got != c.want {
			t.Errorf("%s.RowBytes(%d) = %d, %v; want %d", c.dt, c.n, got, err, c.want)
		}
	}
	for _, c := range []struct {
		dt DType
		n  int64
	}{{Q4_0, 33}, {Q4_K, 32}, {F32, -1}, {F32, 1 << 62}, {DType(99), 1}} {
		if _, err := c.dt.RowBytes(c.n); err == nil {
			t.Errorf("%s.RowBytes(%d) should fail", c.dt, c.n)
		}
	}
}

func TestTypeBytes(t *testing.T) {
	for _, c := range []struct {
		ty   Type
		want int64
		err  string
	}{
		{T(F32, 64, 3), 768, ""},
		{T(Q8_0, 64, 2, 2), 272, ""},
		{T(F16, 0, 5), 0, ""},
		{T(F32, 4, "n"), 0, "not static"},
		{T(Q4_0, 16), 0, "block size"},
		{T(F32, 1<<40, 1<<40), 0, "overflows"},
		{T(F32, 1<<62), 0, "overflows"},
		{Type{DType: F32, Shape: Shape{C(2), C(-3), C(1), C(1)}}, 0, "negative"},
	} {
		got, err := c.ty.Bytes()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v.Bytes() = %d, %v; want error %q", c.ty, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%v.Bytes() = %d, %v; want %d", c.ty, got, err, c.want)
		}
	}
}

func TestNumel(t *testing.T) {
	eq := [][2]Shape{
		{Sh(64, "n"), Sh("n", 64)},
		{Sh(64, "n"), Sh(Scaled("n", 64))},
		{Sh(4, 16, "n"), Sh(64, "n")},
		{Sh(2, Scaled("n", 8), "m"), Sh("m", 16, "n")},
		{Sh(Padded("n", 64), 2), Sh(2, Padded("n", 64))},
		{Sh(1, 1, 1, 1), Sh()},
	}
	for _, p := range eq {
		if !p[0].Numel().Equal(p[1].Numel()) {
			t.Errorf("Numel(%v) = %v, Numel(%v) = %v: want equal", p[0], p[0].Numel(), p[1], p[1].Numel())
		}
	}
	ne := [][2]Shape{
		{Sh(64, "n"), Sh(64, "m")},
		{Sh(64, "n"), Sh(32, "n")},
		{Sh("n", "n"), Sh("n")},
		{Sh(Padded("n", 64)), Sh("n")},
		{Sh(Padded("n", 64)), Sh(Padded("n", 32))},
		{Sh(64, "n"), Sh(64)},
	}
	for _, p := range ne {
		if p[0].Numel().Equal(p[1].Numel()) {
			t.Errorf("Numel(%v) and Numel(%v) both %v: want different", p[0], p[1], p[0].Numel())
		}
	}
	if got := Sh(64, Scaled("n", 2), Padded("m", 4)).Numel().String(); got != "128*n*pad(m,4)" {
		t.Errorf("Numel string %q", got)
	}
}

// FuzzParseBindings: ParseBindings never panics, and what it accepts prints
// (Bindings.String) to text that parses back to the same bindings.
func FuzzParseBindings(f *testing.F) {
	for _, s := range []string{"n_kv=32,n_tokens=5", "", " n_tokens = 7 ", "a=1,a=2", "x=-1", "1x=3", "n=99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		b, err := ParseBindings(in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "ir: binding ") {
				t.Fatalf("error does not name the binding: %v", err)
			}
			return
		}
		back, err := ParseBindings(b.String())
		if err != nil {
			t.Fatalf("%q printed as %q, which does not parse: %v", in, b.String(), err)
		}
		if back.String() != b.String() {
			t.Fatalf("%q: %q reparses as %q", in, b.String(), back.String())
		}
	})
}

func TestBindingsFor(t *testing.T) {
	g, err := ParseString(`graph "g" {
  %0 = input() : f32[64,n_tokens] "x"
  outputs(%0)
}`)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Bindings{"n_tokens": 3, "n_kv": 9}.For(g)
	if err != nil || b.String() != "n_tokens=3" {
		t.Errorf("For = %s, %v; want n_tokens=3", b, err)
	}
	if _, err := (Bindings{"n_kv": 9}).For(g); err == nil || !strings.Contains(err.Error(), `graph "g": symbol "n_tokens" is not bound (have n_kv=9)`) {
		t.Errorf("unbound symbol: %v", err)
	}
}
