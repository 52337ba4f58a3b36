package ir

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
)

// Limits of IR text (docs/IR.md, "Limits"): each refusal names the line
// (TestParseTooLongLine checks the 64 MiB line).
func TestParseLimits(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"a view offset of 2^63-1 on a symbolic graph", "graph \"g\" {\n  %0 = input() : f32[n]\n  %1 = view(%0) {nb=[4,4,4,4], offset=dim(9223372036854775807)} : f32[1]\n  outputs(%1)\n}\n", "ir: parse line 3"},
		{"a view offset past its static operand", "graph \"g\" {\n  %0 = input() : f32[4]\n  %1 = view(%0) {nb=[4,4,4,4], offset=dim(20)} : f32[1]\n  outputs(%1)\n}\n", "offset 20 is past the end of its operand f32[4] (16 bytes)"},
		{"a negative view offset", "graph \"g\" {\n  %0 = input() : f32[4]\n  %1 = view(%0) {nb=[4,4,4,4], offset=dim(-4)} : f32[1]\n  outputs(%1)\n}\n", "not a non-negative integer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseString(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse = %v, want %q", err, tc.want)
			}
		})
	}
}

// A file with more than MaxNodes nodes is refused at the first node past
// the limit (the count comes before parsing for a file; a stream is
// counted as it is parsed).
func TestParseNodeCap(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 7 MB text")
	}
	var b strings.Builder
	b.WriteString("graph \"g\" {\n")
	for i := 0; i <= MaxNodes; i++ {
		b.WriteString("  %" + strconv.Itoa(i) + " = input() : f32[4]\n")
	}
	b.WriteString("}\n")
	want := fmt.Sprintf("ir: parse line %d col 3: more than 262144 nodes (the limit of IR text)", MaxNodes+2)
	if _, err := ParseString(b.String()); err == nil || !strings.Contains(err.Error(), strings.Replace(want, "col 3", "col 1", 1)) {
		t.Errorf("Parse of a seekable text = %v, want %q", err, want)
	}
	stream := struct{ io.Reader }{strings.NewReader(b.String())}
	if _, err := Parse(stream); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Parse of a stream = %v, want %q", err, want)
	}
}
