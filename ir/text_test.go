package ir

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/golden"
)

func TestGoldenAttention(t *testing.T) {
	g := attentionGraph(t)
	golden.Check(t, filepath.Join("testdata", "attention.ir"), []byte(g.String()))
	s, err := g.Specialize(attentionBindings)
	if err != nil {
		t.Fatal(err)
	}
	s.Meta["bindings"] = attentionBindings.String()
	golden.Check(t, filepath.Join("testdata", "attention_static.ir"), []byte(s.String()))
	var tab bytes.Buffer
	if err := PrintTable(&tab, g); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "attention.table"), tab.Bytes())
}

// TestGoldenFilesRoundTrip parses every testdata/*.ir and prints it back
// byte for byte, and checks the parsed graph against a fresh Verify.
func TestGoldenFilesRoundTrip(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.ir"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			g, err := ParseString(string(text))
			if err != nil {
				t.Fatal(err)
			}
			if got := g.String(); got != string(text) {
				t.Errorf("print(parse(text)) != text\n%s", golden.FirstDiff(got, string(text)))
			}
			if err := Verify(g); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestParseBuildsTheSameGraph checks that parsing is not only textually
// faithful: the parsed graph has the builder's structure, attribute types
// and constant bytes.
func TestParseBuildsTheSameGraph(t *testing.T) {
	want := attentionGraph(t)
	got, err := ParseString(want.String())
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != want.Name || len(got.Nodes) != len(want.Nodes) || len(got.Outputs) != len(want.Outputs) {
		t.Fatalf("graph %q with %d nodes", got.Name, len(got.Nodes))
	}
	for k, v := range want.Meta {
		if got.Meta[k] != v {
			t.Errorf("meta %s = %q", k, got.Meta[k])
		}
	}
	for i, w := range want.Nodes {
		n := got.Nodes[i]
		if n.ID != i || n.Op != w.Op || n.Name != w.Name || n.Layer != w.Layer || !n.Type.Equal(w.Type) || !bytes.Equal(n.Data, w.Data) {
			t.Errorf("node %d: %v %s %q layer %d %s", i, n, n.Op, n.Name, n.Layer, n.Type)
		}
		if len(n.Args) != len(w.Args) {
			t.Fatalf("node %d: %d operands", i, len(n.Args))
		}
		for j := range n.Args {
			if n.Args[j].ID != w.Args[j].ID {
				t.Errorf("node %d operand %d: %v, want %v", i, j, n.Args[j], w.Args[j])
			}
		}
		if !n.Attrs.Equal(w.Attrs) {
			t.Errorf("node %d attrs %v, want %v", i, n.Attrs, w.Attrs)
		}
		for _, k := range w.Attrs.Keys() {
			if typeName(n.Attrs[k]) != typeName(w.Attrs[k]) {
				t.Errorf("node %d attr %s: %T, want %T", i, k, n.Attrs[k], w.Attrs[k])
			}
		}
	}
	if got.Outputs[0].ID != want.Outputs[0].ID {
		t.Error("outputs")
	}
}

func TestParseLenientSpelling(t *testing.T) {
	// Comments, blank lines, CRLF, any labels, spacing, and several outputs
	// lines are accepted; Print writes the canonical form.
	in := "// a comment\r\n\r\n" +
		"graph \"g\" {\r\n" +
		"  // inside\n" +
		"\tmeta  b = \"2\"\n" +
		"  meta a=\"1\"\n" +
		"  %x = input() : f32[4,n] \"x\"\n" +
		"  %y   = scale( %x ) {  scale = 2 } : f32[4,n]  \"y\"   layer=3\n" +
		"  %z = const() : f32[1,1] data=AACAPw==\n" +
		"  %w = add(%y, %z) {} : f32[4,n]\n" +
		"  outputs(%y)\n" +
		"  outputs( %w ,%x )\n" +
		"}\n" +
		"// trailing comment\n"
	want := `graph "g" {
  meta a="1"
  meta b="2"
  %0 = input() : f32[4,n] "x"
  %1 = scale(%0) {scale=2} : f32[4,n] "y" layer=3
  %2 = const() : f32[1] data=AACAPw==
  %3 = add(%1, %2) : f32[4,n]
  outputs(%1, %3, %0)
}
`
	g, err := ParseString(in)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// malformed lists inputs Parse must reject, with the line it must name and
// a fragment of the message.
var malformed = []struct {
	name, in string
	line     int
	msg      string
}{
	{"empty", "", 1, "missing closing brace"},
	{"no header", "%0 = input() : f32[4]\n}\n", 1, "want `graph"},
	{"unquoted name", "graph g {\n}\n", 1, "quoted string"},
	{"header without brace", "graph \"g\"\n}\n", 1, "want `graph"},
	{"unknown op", "graph \"g\" {\n  %0 = frob() : f32[4]\n}\n", 2, `unknown op "frob"`},
	{"undefined operand", "graph \"g\" {\n  %0 = input() : f32[4]\n  %1 = silu(%7) : f32[4]\n}\n", 3, `"%7" is not defined`},
	{"use before def", "graph \"g\" {\n  %1 = silu(%0) : f32[4]\n  %0 = input() : f32[4]\n}\n", 2, `"%0" is not defined`},
	{"duplicate label", "graph \"g\" {\n  %0 = input() : f32[4]\n  %0 = input() : f32[4]\n}\n", 3, "defined twice"},
	{"bad dtype", "graph \"g\" {\n  %0 = input() : f33[4]\n}\n", 2, `unknown dtype "f33"`},
	{"bad dim", "graph \"g\" {\n  %0 = input() : f32[-4]\n}\n", 2, "not a non-negative integer"},
	{"bad factor", "graph \"g\" {\n  %0 = input() : f32[n*0]\n}\n", 2, "bad factor"},
	{"pad of a constant", "graph \"g\" {\n  %0 = input() : f32[pad(4,2)]\n}\n", 2, "pad of a constant"},
	{"too many dims", "graph \"g\" {\n  %0 = input() : f32[1,2,3,4,5]\n}\n", 2, "want 1 to 4 dims"},
	{"missing type", "graph \"g\" {\n  %0 = input()\n}\n", 2, "want `: type`"},
	{"no equals", "graph \"g\" {\n  %0 input() : f32[4]\n}\n", 2, "want `%N = op"},
	{"no operand list", "graph \"g\" {\n  %0 = input : f32[4]\n}\n", 2, "want op(args)"},
	{"unclosed operands", "graph \"g\" {\n  %0 = input() : f32[4]\n  %1 = silu(%0 : f32[4]\n}\n", 3, "unclosed operand list"},
	{"unclosed attributes", "graph \"g\" {\n  %0 = input() : f32[4]\n  %1 = scale(%0) {scale=2.0 : f32[4]\n}\n", 3, "unclosed attribute list"},
	{"unclosed string attribute", "graph \"g\" {\n  %0 = input() : f32[4]\n  %1 = scale(%0) {scale=2.0, s=\"}} : f32[4]\n}\n", 3, "unclosed attribute list"},
	{"bad attribute value", "graph \"g\" {\n  %0 = input() : f32[4]\n  %1 = scale(%0) {scale=} : f32[4]\n}\n", 3, `attribute "scale": empty`},
	{"bad attribute name", "graph \"g\" {\n  %0 = input() : f32[4]\n  %1 = scale(%0) {1x=2.0} : f32[4]\n}\n", 3, "attribute name"},
	{"attribute without value", "graph \"g\" {\n  %0 = input() : f32[4]\n  %1 = scale(%0) {scale} : f32[4]\n}\n", 3, "want key=value"},
	{"duplicate attribute", "graph \"g\" {\n  %0 = input() : f32[4]\n  %1 = scale(%0) {scale=1.0, scale=2.0} : f32[4]\n}\n", 3, "given twice"},
	{"missing attribute", "graph \"g\" {\n  %0 = input() : f32[4]\n  %1 = rms_norm(%0) : f32[4]\n}\n", 3, `missing attribute "eps"`},
	{"wrong declared type", "graph \"g\" {\n  %0 = input() : f32[4]\n  %1 = silu(%0) : f32[5]\n}\n", 3, "declared type f32[5], inferred f32[4]"},
	{"wrong arity", "graph \"g\" {\n  %0 = input() : f32[4]\n  %1 = add(%0) : f32[4]\n}\n", 3, "takes 2 operands, got 1"},
	{"mul_mat mismatch", "graph \"g\" {\n  %0 = input() : f32[4,2]\n  %1 = input() : f32[3,2]\n  %2 = mul_mat(%0, %1) : f32[2,2]\n}\n", 4, "inner dims differ"},
	{"reshape count", "graph \"g\" {\n  %0 = input() : f32[4,n]\n  %1 = reshape(%0) : f32[5,n]\n}\n", 3, "element count changes"},
	{"bad permutation", "graph \"g\" {\n  %0 = input() : f32[4,n]\n  %1 = permute(%0) {axes=[0,0,1,2]} : f32[4,n]\n}\n", 3, "not a permutation"},
	{"unclosed name", "graph \"g\" {\n  %0 = input() : f32[4] \"x\n}\n", 2, "unclosed name string"},
	{"bad name escape", "graph \"g\" {\n  %0 = input() : f32[4] \"\\q\"\n}\n", 2, "bad name string"},
	{"unexpected field", "graph \"g\" {\n  %0 = input() : f32[4] \"x\" color=red\n}\n", 2, `unexpected "color=red"`},
	{"bad layer", "graph \"g\" {\n  %0 = input() : f32[4] layer=-1\n}\n", 2, "bad layer"},
	{"data on non-const", "graph \"g\" {\n  %0 = input() : f32[1] data=AACAPw==\n}\n", 2, "input node with data= (only const nodes hold data)"},
	{"bad base64", "graph \"g\" {\n  %0 = const() : f32[1] data=!!!!\n}\n", 2, "bad constant data"},
	{"wrong const size", "graph \"g\" {\n  %0 = const() : f32[2] data=AACAPw==\n}\n", 2, "constant holds 4 bytes, type f32[2] needs 8"},
	{"const without data", "graph \"g\" {\n  %0 = const() : f32[2]\n}\n", 2, "constant holds 0 bytes"},
	{"symbolic const", "graph \"g\" {\n  %0 = const() : f32[n] data=\n}\n", 2, "not static"},
	{"leaf with operands", "graph \"g\" {\n  %0 = input() : f32[4]\n  %1 = weight(%0) : f32[4]\n}\n", 3, "takes 0 operands, got 1"},
	{"huge dims overflow", "graph \"g\" {\n  %0 = input() : f32[4611686018427387904,4]\n}\n", 2, "overflows"},
	{"huge product overflows", "graph \"g\" {\n  %0 = input() : f32[1099511627776,1099511627776,1,1]\n}\n", 2, "overflows"},
	{"view out of bounds", "graph \"g\" {\n  %0 = input() : f32[4]\n  %1 = view(%0) {nb=[4,16,16,16], offset=dim(4)} : f32[4]\n  outputs(%1)\n}\n", 3, "fall outside"},
	{"reshape of transposed", "graph \"g\" {\n  %0 = input() : f32[4,3]\n  %1 = transpose(%0) : f32[3,4]\n  %2 = reshape(%1) : f32[12]\n}\n", 4, "not contiguous"},
	{"meta without quotes", "graph \"g\" {\n  meta a=1\n}\n", 2, "meta a: the value must be a quoted string, got 1"},
	{"meta without key", "graph \"g\" {\n  meta =\"1\"\n}\n", 2, "meta wants key"},
	{"meta with blank key", "graph \"g\" {\n  meta  =\"1\"\n}\n", 2, "meta wants key"},
	{"outputs unclosed", "graph \"g\" {\n  %0 = input() : f32[4]\n  outputs(%0\n}\n", 3, "not closed"},
	{"outputs undefined", "graph \"g\" {\n  outputs(%3)\n}\n", 2, `"%3" is not defined`},
	{"garbage line", "graph \"g\" {\n  hello\n}\n", 2, `unexpected "hello"`},
	{"missing closing brace", "graph \"g\" {\n  %0 = input() : f32[4]\n", 2, "missing closing brace"},
	{"trailing garbage", "graph \"g\" {\n}\nmore\n", 3, "text after the closing brace"},
	{"second graph", "graph \"g\" {\n}\ngraph \"h\" {\n}\n", 3, "text after the closing brace"},
	{"trailing comment after node", "graph \"g\" {\n  %0 = input() : f32[4] // x\n}\n", 2, `unexpected "//"`},
}

func TestParseMalformed(t *testing.T) {
	for _, tc := range malformed {
		t.Run(tc.name, func(t *testing.T) {
			g, err := ParseString(tc.in)
			if err == nil {
				t.Fatalf("parsed:\n%s", g)
			}
			if want := "ir: parse line " + strconv.Itoa(tc.line) + " col "; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error %q does not start with %q", err, want)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not mention %q", err, tc.msg)
			}
		})
	}
}

func TestParseTooLongLine(t *testing.T) {
	in := "graph \"g\" {\n  %0 = const() : f32[1] data=" + strings.Repeat("A", maxLine) + "\n}\n"
	_, err := ParseString(in)
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "line longer than 67108864 bytes (64 MiB, the limit of one line of IR text)") {
		t.Errorf("got %v", err)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestParseReaderError(t *testing.T) {
	if _, err := Parse(failingReader{}); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("got %v", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("full") }

func TestPrintWriterError(t *testing.T) {
	g := attentionGraph(t)
	if err := Print(failingWriter{}, g); err == nil {
		t.Error("Print ignored a write error")
	}
	if err := PrintTable(failingWriter{}, g); err == nil {
		t.Error("PrintTable ignored a write error")
	}
}

func TestPrintUnverifiedGraph(t *testing.T) {
	// Print and PrintTable describe broken graphs rather than panic.
	g := New("broken")
	x := &Node{Op: OpInput, Type: T(F32, 4), Layer: -1}
	y := &Node{ID: 1, Op: OpSilu, Type: T(F32, 4), Args: []*Node{nil, {Op: OpInput}}, Layer: -1}
	g.Nodes = []*Node{x, y}
	g.Outputs = []*Node{nil, y}
	if s := g.String(); !strings.Contains(s, "silu(%?, %?)") || !strings.Contains(s, "outputs(%?, %1)") {
		t.Errorf("Print:\n%s", s)
	}
	var b bytes.Buffer
	if err := PrintTable(&b, g); err != nil || !strings.Contains(b.String(), "(%?, %0)") {
		t.Errorf("PrintTable:\n%s", b.String())
	}
}

// FuzzParse: Parse never panics, every error names a line, and what it
// accepts prints to a canonical text that parses back to itself.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.ir"))
	for _, path := range files {
		if b, err := os.ReadFile(path); err == nil {
			f.Add(string(b))
		}
	}
	for _, tc := range malformed {
		f.Add(tc.in)
	}
	f.Add(rankGraphText(0, "send(%4)")) // the collectives
	f.Add(rankGraphText(1, "recv(%4)"))
	f.Add("graph \"g\" {\n  %0 = input() : f32[4,n]\n  %1 = scale(%0) {scale=dim(true), s=\"a,b}\", l=f[1.0,-inf], i=[1,2]} : f32[4,n]\n  outputs(%1)\n}\n")
	f.Add("graph \"g\" {\n  %0 = input() : f32[4,n]\n  %1 = scale(%0) {foo=1, scael=2.0} : f32[4,n-1x]\n  outputs(%1)\n}\n")
	f.Add("GGUF\x03\x00\x00\x00graph \"g\" {\n}\n")
	f.Add("graph \"g\" {\n  %0 = input() : f32[n]\n  %1 = view(%0) {nb=[4,4,4,4], offset=dim(9223372036854775807)} : f32[1]\n  outputs(%1)\n}\n")
	f.Add("graph \"g\" {\n  %0 = input() : f32[4]\n  %1 = view(%0) {nb=[4,4,4,4], offset=dim(20)} : f32[1]\n  outputs(%1)\n}\n")
	f.Add("graph \"g\" {\n  meta weights=\"a\\x00b\"\n  %0 = input() : f32[4]\n  outputs(%0)\n}\n")
	f.Fuzz(func(t *testing.T, in string) {
		g, err := ParseString(in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "ir: parse line ") {
				t.Fatalf("error does not name a line: %v", err)
			}
			// The column lies on the line named (or just past its end).
			var pe *ParseError
			if errors.As(err, &pe) {
				lines := strings.Split(in, "\n")
				if pe.Line < 1 || pe.Col < 1 || pe.Line <= len(lines) && pe.Col > len(lines[pe.Line-1])+1 {
					t.Fatalf("error at %d:%d is outside the input: %v", pe.Line, pe.Col, err)
				}
			}
			return
		}
		text := g.String()
		g2, err := ParseString(text)
		if err != nil {
			t.Fatalf("printed graph does not parse: %v\n%s", err, text)
		}
		if text2 := g2.String(); text2 != text {
			t.Fatalf("print(parse(print(parse(x)))) != print(parse(x))\n%s", golden.FirstDiff(text2, text))
		}
		if err := Verify(g2); err != nil {
			t.Fatalf("parsed graph fails Verify: %v", err)
		}
	})
}

// TestVerifiedGraphsRoundTrip: any graph Verify accepts prints to text that
// parses back to the same text, and graphs whose text could not be read back
// are rejected by Verify (so the text format never loses a verified graph).
func TestVerifiedGraphsRoundTrip(t *testing.T) {
	// The attribute cases use an op registered without a list of
	// attribute names (OpInfo.Attrs), which takes any.
	ops := NewOpSet()
	if err := ops.Register(OpInfo{Name: "tagged", Kind: KindLeaf, Check: func(*Node) error { return nil }}); err != nil {
		t.Fatal(err)
	}
	base := func(mod func(g *Graph, x *Node)) *Graph {
		g := ops.New("g")
		x, err := g.AddTyped("tagged", nil, nil, T(F32, 4, "n"))
		if err != nil {
			t.Fatal(err)
		}
		g.Outputs = []*Node{x}
		mod(g, x)
		return g
	}
	ok := []struct {
		name string
		mod  func(g *Graph, x *Node)
	}{
		{"plain", func(g *Graph, x *Node) {}},
		{"odd graph name", func(g *Graph, x *Node) { g.Name = "a {b} \"c\"\n\td" }},
		{"empty graph name", func(g *Graph, x *Node) { g.Name = "" }},
		{"odd node name", func(g *Graph, x *Node) { x.Name = "x = y } // z \x00 \u2028" }},
		{"odd meta", func(g *Graph, x *Node) { g.Meta = map[string]string{"a.b-c": "v\n\"w\"", "k k": ""} }},
		{"string attrs", func(g *Graph, x *Node) { x.Attrs = Attrs{"s": "a,b}{\"\\", "t": "\xff", "u": ""} }},
		{"keyword dims", func(g *Graph, x *Node) {
			x.Attrs = Attrs{"a": S("true"), "b": S("nan"), "c": Padded("inf", 8), "d": C(0), "e": S("f")}
		}},
		{"float edge cases", func(g *Graph, x *Node) {
			x.Attrs = Attrs{"a": 5e-324, "b": 1.7976931348623157e308, "c": -0.0, "d": []float64{}, "e": []int64{}}
		}},
		{"layer", func(g *Graph, x *Node) { x.Layer = 123456 }},
		{"zero-size const", func(g *Graph, x *Node) {
			c, err := g.AddTyped(OpConst, nil, nil, T(F32, 0))
			if err != nil {
				t.Fatal(err)
			}
			g.Outputs = append(g.Outputs, c)
		}},
		{"no outputs", func(g *Graph, x *Node) { g.Outputs = nil }},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			g := base(tc.mod)
			if err := Verify(g); err != nil {
				t.Fatal(err)
			}
			text := g.String()
			p, err := ops.ParseString(text)
			if err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			again := p.String()
			if tc.name != "zero-size const" && again != text {
				// A const with nil Data prints no data= and reads back with
				// an empty slice, which prints as "data=": one step to the
				// fixed point.
				t.Fatalf("round trip differs\n%s", golden.FirstDiff(again, text))
			}
			if p2, err := ops.ParseString(again); err != nil || p2.String() != again {
				t.Fatalf("not a fixed point: %v", err)
			}
		})
	}
	bad := []struct {
		name, err string
		mod       func(g *Graph, x *Node)
	}{
		{"meta key with =", "meta key", func(g *Graph, x *Node) { g.Meta = map[string]string{"a=b": "v"} }},
		{"empty meta key", "meta key", func(g *Graph, x *Node) { g.Meta = map[string]string{"": "v"} }},
		{"padded meta key", "meta key", func(g *Graph, x *Node) { g.Meta = map[string]string{" a": "v"} }},
		{"meta key with newline", "meta key", func(g *Graph, x *Node) { g.Meta = map[string]string{"a\nb": "v"} }},
		{"negative dim", "negative dimension", func(g *Graph, x *Node) { x.Type = T(F32, -1, "n") }},
		{"bad symbol", "not an identifier", func(g *Graph, x *Node) { x.Type = T(F32, 4, "n tokens") }},
		{"negative factor", "factor", func(g *Graph, x *Node) { x.Type = T(F32, 4, Scaled("n", -2)) }},
		{"huge alignment", "alignment", func(g *Graph, x *Node) { x.Type = T(F32, 4, Padded("n", 1<<40)) }},
		{"negative dim attr", "negative dimension", func(g *Graph, x *Node) { x.Attrs = Attrs{"o": C(-8)} }},
		{"int attr", "unsupported type int", func(g *Graph, x *Node) { x.Attrs = Attrs{"o": 8} }},
		{"float32 attr", "unsupported type float32", func(g *Graph, x *Node) { x.Attrs = Attrs{"o": float32(1)} }},
		{"nil attr", "unsupported type <nil>", func(g *Graph, x *Node) { x.Attrs = Attrs{"o": nil} }},
		{"bad attr key", "not an identifier", func(g *Graph, x *Node) { x.Attrs = Attrs{"a=b": int64(1)} }},
		{"data on an input", "only const nodes hold data", func(g *Graph, x *Node) { x.Data = []byte{} }},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			g := base(tc.mod)
			wantVerifyError(t, g, tc.err)
		})
	}
}
