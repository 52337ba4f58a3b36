package wqconv_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/gguf/wqconv"
	"github.com/irtool/irtool/runtime/acl/layout"
)

// TestMatchesRepack: for q4_0 and q8_0 the converted buffer (values, then
// scales) is byte for byte what the CANN binding uploads today
// (layout.RepackQ4_0, layout.RepackQ8_0: ggml-cann's set_tensor layout).
func TestMatchesRepack(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	rows, cols := 5, 96
	x := make([]float32, rows*cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, c := range []struct {
		typ      gguf.GGMLType
		quantize func([]float32) ([]byte, error)
		repack   func([]byte, int64, int64) ([]byte, error)
	}{
		{gguf.TypeQ4_0, gguf.QuantizeQ4_0, layout.RepackQ4_0},
		{gguf.TypeQ8_0, gguf.QuantizeQ8_0, layout.RepackQ8_0},
	} {
		raw, err := c.quantize(x)
		if err != nil {
			t.Fatal(err)
		}
		want, err := c.repack(raw, int64(cols), int64(rows))
		if err != nil {
			t.Fatal(err)
		}
		w, err := wqconv.Convert(c.typ, raw, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w.Bytes(), want) {
			t.Errorf("%s: Bytes() differs from the binding's repacked layout", c.typ)
		}
	}
}
