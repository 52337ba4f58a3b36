package jsonout_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/jsonout"
)

// TestJSONNonFinite: NaN and infinities encode as null.
func TestJSONNonFinite(t *testing.T) {
	rows, bad := jsonout.Floats([][]float32{{1, float32(math.NaN())}, {float32(math.Inf(-1)), 0.5}})
	if !bad {
		t.Error("non-finite values not reported")
	}
	var buf bytes.Buffer
	if err := jsonout.Write(&buf, rows); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(strings.Fields(buf.String()), ""); got != "[[1,null],[null,0.5]]" {
		t.Errorf("got %s", got)
	}
	// A value encoding/json refuses still gives valid JSON, with the error.
	buf.Reset()
	if err := jsonout.Write(&buf, map[string]float64{"x": math.NaN()}); err == nil {
		t.Error("no error for a raw NaN")
	}
	if !json.Valid(buf.Bytes()) || !strings.Contains(buf.String(), `"error"`) {
		t.Errorf("output %q", buf.String())
	}
}

// Write: two-space indent, the struct's field order, HTML unescaped, one
// trailing newline.
func TestWriteLayout(t *testing.T) {
	var buf bytes.Buffer
	v := struct {
		B string `json:"b"`
		A []int  `json:"a"`
	}{"<x> & y", []int{1}}
	if err := jsonout.Write(&buf, v); err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"b\": \"<x> & y\",\n  \"a\": [\n    1\n  ]\n}\n"; buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}
