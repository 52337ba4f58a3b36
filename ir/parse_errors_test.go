package ir

import (
	"errors"
	"strings"
	"testing"
)

// TestParseErrorPositions: every parse error names the line and the column
// of what is wrong (the attribute, the dim, the operand), and near misses
// of an attribute or op name get a suggestion.
func TestParseErrorPositions(t *testing.T) {
	const base = `graph "t" {
  meta n_ctx="16"
  %0 = input() : f32[4,n_tokens] "x"
  %1 = scale(%0) {scale=2.0} : f32[4,n_tokens] "y"
  outputs(%1)
}
`
	cases := []struct {
		name     string
		old, new string // replaced in base
		at       string // the error points at the first occurrence of this text on its line (after new's start)
		want     string
	}{
		{"unknown attribute", "{scale=2.0}", "{foo=1, scale=2.0}", "foo=", `unknown attribute "foo" of scale (it takes scale)`},
		{"misspelt attribute", "{scale=2.0}", "{scael=2.0}", "scael", `unknown attribute "scael" of scale (it takes scale); did you mean "scale"?`},
		{"symbol for a number", "{scale=2.0}", "{scale=abc}", "abc", `attribute scale = abc is a shape expression`},
		{"bad attribute value", "{scale=2.0}", "{scale=[1,x]}", "[1,x]", `attribute "scale"`},
		{"missing attribute", "{scale=2.0}", "", "scale(", `missing attribute "scale"`},
		{"bad dim", `f32[4,n_tokens] "x"`, `f32[4,n_tok-ens] "x"`, "n_tok-ens", `dim 1: dimension "n_tok-ens"`},
		{"bad first dim", `f32[4,n_tokens] "x"`, `f32[-4,n_tokens] "x"`, "-4", `dim 0`},
		{"size overflows on its own line", `f32[4,n_tokens] "x"`, `f32[4611686018427387904,2] "x"`, "f32[46", `the size overflows int64`},
		{"spaces in the dims", `f32[4,n_tokens] "x"`, `f32[4, n-1] "x"`, "n-1", `dim 1: dimension "n-1"`},
		{"unknown dtype", `f32[4,n_tokens] "x"`, `q9[4,n_tokens] "x"`, "q9[", `unknown dtype "q9"`},
		{"misspelt op", "scale(%0)", "scael(%0)", "scael", `unknown op "scael"; did you mean "scale"?`},
		{"undefined operand", "scale(%0)", "scale(%7)", "%7", `"%7" is not defined`},
		{"undefined output", "outputs(%1)", "outputs(%1, %9)", "%9", `"%9" is not defined`},
		{"bad layer", `"y"`, `"y" layer=x`, "layer=x", `bad layer`},
		{"meta not quoted", `meta n_ctx="16"`, `meta n_ctx=16`, "16", `meta n_ctx: the value must be a quoted string`},
		{"meta twice", `meta n_ctx="16"`, "meta n_ctx=\"16\"\n  meta n_ctx=\"8\"", `n_ctx="8"`, `meta n_ctx given twice`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(base, c.old) {
				t.Fatalf("base has no %q", c.old)
			}
			text := strings.Replace(base, c.old, c.new, 1)
			// The expected place: the line holding `at` (searched from
			// where the replacement starts), and its column.
			from := strings.Index(text, c.new)
			if c.new == "" {
				from = 0
			}
			abs := from + strings.Index(text[from:], c.at)
			line := strings.Count(text[:abs], "\n") + 1
			col := abs - strings.LastIndex(text[:abs], "\n")
			_, err := ParseFile("m.ir", strings.NewReader(text))
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("err %v, want a *ParseError\n%s", err, text)
			}
			if pe.Line != line || pe.Col != col || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %q at %d:%d, want %q at %d:%d", err, pe.Line, pe.Col, c.want, line, col)
			}
			if prefix := "m.ir:"; !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("err %q does not start with %q", err, prefix)
			}
		})
	}
}

// TestParseBinary: a binary file is named as such, not printed.
func TestParseBinary(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"gguf", "GGUF\x03\x00\x00\x00\x13\x00\x00\x00graph", "this is a GGUF file"},
		{"nul", "graph \"g\" {\n\x00\x01\x02}\n", "binary data (a NUL byte at offset 12)"},
		{"not utf-8", "graph \"g\" {\n\xff\xfe\xfd\xfc\xfb\xfa hello\n}\n", "binary data (not UTF-8)"},
	} {
		_, err := ParseFile("x.ir", strings.NewReader(c.in))
		if err == nil || !strings.HasPrefix(err.Error(), "x.ir:1:1: ") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want x.ir:1:1: ... %q", c.name, err, c.want)
		}
		if err != nil && strings.ContainsAny(err.Error(), "\x00\x03\xff") {
			t.Errorf("%s: the error prints the binary data: %q", c.name, err)
		}
	}
}

func TestSuggest(t *testing.T) {
	names := []string{"scale", "eps", "n_dims", "freq_base"}
	for _, c := range []struct{ in, want string }{
		{"scael", "scale"}, {"esp", "eps"}, {"n_dim", "n_dims"}, {"freqbase", "freq_base"},
		{"foo", ""}, {"x", ""}, {"", ""},
	} {
		got := suggest(c.in, names)
		if c.want == "" && got != "" || c.want != "" && got != `; did you mean "`+c.want+`"?` {
			t.Errorf("suggest(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
