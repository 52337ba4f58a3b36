package ir

import (
	"math"
	"strings"
	"testing"
)

func TestAttrFormatParse(t *testing.T) {
	tests := []struct {
		name string
		v    any
		text string
	}{
		{"int", int64(42), "42"},
		{"negative int", int64(-7), "-7"},
		{"int max", int64(math.MaxInt64), "9223372036854775807"},
		{"int min", int64(math.MinInt64), "-9223372036854775808"},
		{"float", 0.5, "0.5"},
		{"whole float", 2.0, "2.0"},
		{"negative float", -3.0, "-3.0"},
		{"eps", 1e-05, "1e-05"},
		{"float32 eps", float64(float32(1e-5)), "9.999999747378752e-06"},
		{"big float", 1e21, "1e+21"},
		{"rope base", 10000.0, "10000.0"},
		{"negative zero", math.Copysign(0, -1), "-0.0"},
		{"inf", math.Inf(1), "inf"},
		{"-inf", math.Inf(-1), "-inf"},
		{"true", true, "true"},
		{"false", false, "false"},
		{"string", "abc", `"abc"`},
		{"empty string", "", `""`},
		{"string with comma", "a,b", `"a,b"`},
		{"string with quotes", `say "hi"`, `"say \"hi\""`},
		{"string with braces", "{x} [y] (z)", `"{x} [y] (z)"`},
		{"string with equals", "k=v, k2=v2", `"k=v, k2=v2"`},
		{"string with backslash", `a\b`, `"a\\b"`},
		{"string with newline", "a\nb", `"a\nb"`},
		{"string with unicode", "héllo ✓", `"héllo ✓"`},
		{"ints", []int64{0, 2, 1, 3}, "[0,2,1,3]"},
		{"negative ints", []int64{-1, 5}, "[-1,5]"},
		{"no ints", []int64{}, "[]"},
		{"floats", []float64{1, 0.25, -1e-05}, "f[1.0,0.25,-1e-05]"},
		{"floats with inf", []float64{math.Inf(-1), 0}, "f[-inf,0.0]"},
		{"no floats", []float64{}, "f[]"},
		{"symbolic dim", S("n_tokens"), "n_tokens"},
		{"scaled dim", Scaled("kv_head", 256), "kv_head*256"},
		{"padded dim", Padded("n_tokens", 64), "pad(n_tokens,64)"},
		{"constant dim", C(128), "dim(128)"},
		{"dim named like a keyword", S("true"), "dim(true)"},
		{"dim named inf", S("inf"), "dim(inf)"},
		{"dim named nan", Scaled("nan", 2), "dim(nan*2)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := formatAttr(tc.v); got != tc.text {
				t.Fatalf("formatAttr(%#v) = %s, want %s", tc.v, got, tc.text)
			}
			back, err := parseAttr(tc.text)
			if err != nil {
				t.Fatalf("parseAttr(%s): %v", tc.text, err)
			}
			a, b := Attrs{"k": tc.v}, Attrs{"k": back}
			if !a.Equal(b) {
				t.Fatalf("parseAttr(%s) = %#v, want %#v", tc.text, back, tc.v)
			}
			// The Go type survives the round trip (an int stays an int, a
			// constant Dim stays a Dim).
			if gotT, wantT := typeName(back), typeName(tc.v); gotT != wantT {
				t.Fatalf("parseAttr(%s) gives a %s, want a %s", tc.text, gotT, wantT)
			}
		})
	}
}

func typeName(v any) string {
	switch v.(type) {
	case int64:
		return "int64"
	case float64:
		return "float64"
	case bool:
		return "bool"
	case string:
		return "string"
	case []int64:
		return "[]int64"
	case []float64:
		return "[]float64"
	case Dim:
		return "Dim"
	}
	return "other"
}

func TestAttrParseLenient(t *testing.T) {
	// Spellings Print never writes but Parse accepts, with what they mean.
	tests := []struct {
		in   string
		want any
	}{
		{" 5 ", int64(5)},
		{"+5", int64(5)},
		{"-0", int64(0)},
		{"1e5", 100000.0},
		{"1E5", 100000.0},
		{".5", 0.5},
		{"5.", 5.0},
		{"+inf", math.Inf(1)},
		{"[ 1 , 2 ]", []int64{1, 2}},
		{"f[ 1 , inf ]", []float64{1, math.Inf(1)}},
		{"dim( 4 )", C(4)},
		{"dim(n)", S("n")},
		{"pad( n , 8 )", Padded("n", 8)},
	}
	for _, tc := range tests {
		got, err := parseAttr(tc.in)
		if err != nil {
			t.Errorf("parseAttr(%q): %v", tc.in, err)
			continue
		}
		if !(Attrs{"k": got}).Equal(Attrs{"k": tc.want}) {
			t.Errorf("parseAttr(%q) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
	nan, err := parseAttr("nan")
	if f, ok := nan.(float64); err != nil || !ok || !math.IsNaN(f) {
		t.Errorf("parseAttr(nan) = %v, %v", nan, err)
	}
}

func TestAttrParseErrors(t *testing.T) {
	for _, in := range []string{
		"", "  ", `"abc`, `"a"b"`, `'a'`, "[1,2", "[1,x]", "[1.5]", "[[1]]", "f[1,2", "f[x]",
		"1x", "0x10", "1e400", "-nan", "--1", "9223372036854775808", "dim(-1)", "dim()",
		"n*0", "pad(n)", "a b", "@", "True!",
	} {
		if v, err := parseAttr(in); err == nil {
			t.Errorf("parseAttr(%q) = %#v, want an error", in, v)
		}
	}
}

func TestAttrsAccessors(t *testing.T) {
	a := Attrs{
		"i": int64(3), "f": 0.5, "b": true, "s": "x",
		"is": []int64{1, 2}, "fs": []float64{1}, "d": Scaled("n", 2),
	}
	if v, ok := a.Int("i"); !ok || v != 3 {
		t.Error("Int")
	}
	if _, ok := a.Int("f"); ok {
		t.Error("Int of a float")
	}
	if v, ok := a.Float("f"); !ok || v != 0.5 {
		t.Error("Float")
	}
	if v, ok := a.Float("i"); !ok || v != 3 {
		t.Error("Float converts an int")
	}
	if v, ok := a.Bool("b"); !ok || !v {
		t.Error("Bool")
	}
	if v, ok := a.Str("s"); !ok || v != "x" {
		t.Error("Str")
	}
	if v, ok := a.Ints("is"); !ok || len(v) != 2 {
		t.Error("Ints")
	}
	if v, ok := a.Dim("d"); !ok || !v.Equal(Scaled("n", 2)) {
		t.Error("Dim")
	}
	if v, ok := a.Dim("i"); !ok || !v.Equal(C(3)) {
		t.Error("Dim converts an int")
	}
	if _, ok := a.Dim("s"); ok {
		t.Error("Dim of a string")
	}
	if _, ok := a.Int("missing"); ok {
		t.Error("missing key")
	}
	var none Attrs
	if _, ok := none.Float("x"); ok || none.String() != "" || len(none.Keys()) != 0 {
		t.Error("nil Attrs")
	}
	if got := strings.Join(a.Keys(), ","); got != "b,d,f,fs,i,is,s" {
		t.Errorf("Keys = %s", got)
	}
	want := `b=true, d=n*2, f=0.5, fs=f[1.0], i=3, is=[1,2], s="x"`
	if got := a.String(); got != want {
		t.Errorf("String = %s\nwant     %s", got, want)
	}
}

func TestAttrsCloneAndEqual(t *testing.T) {
	a := Attrs{"axes": []int64{0, 2, 1, 3}, "fs": []float64{1, 2}, "eps": 1e-5}
	c := a.Clone()
	if !a.Equal(c) {
		t.Fatal("clone differs")
	}
	c["axes"].([]int64)[0] = 9
	c["fs"].([]float64)[0] = 9
	c["eps"] = 2.0
	if a["axes"].([]int64)[0] != 0 || a["fs"].([]float64)[0] != 1 || a["eps"] != 1e-5 {
		t.Error("Clone shares storage with the original")
	}
	if a.Equal(c) {
		t.Error("Equal misses a difference")
	}
	if Attrs(nil).Clone() != nil {
		t.Error("Clone of nil")
	}
	if !Attrs(nil).Equal(Attrs{}) {
		t.Error("nil and empty attrs should be equal")
	}
	if (Attrs{"a": int64(1)}).Equal(Attrs{"b": int64(1)}) {
		t.Error("different keys")
	}
	// Equal compares values as printed: an int and a float differ.
	if (Attrs{"a": int64(1)}).Equal(Attrs{"a": 1.0}) {
		t.Error("int 1 and float 1.0 should differ")
	}
}
