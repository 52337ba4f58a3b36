package ir_test

import (
	"fmt"
	"testing"

	"github.com/irtool/irtool/ir"
)

// TestAttrAccessors checks each typed accessor: the default when the
// attribute is absent, the value when present, and an integer where a
// float is read.
func TestAttrAccessors(t *testing.T) {
	for _, c := range []struct {
		name  string
		got   func(ir.Attrs) any
		attrs ir.Attrs
		want  any
	}{
		{"eps default", func(a ir.Attrs) any { return a.Eps() }, nil, 0.0},
		{"eps", func(a ir.Attrs) any { return a.Eps() }, ir.Attrs{ir.AttrEps: 1e-6}, 1e-6},
		{"scale default", func(a ir.Attrs) any { return a.Scale() }, nil, 1.0},
		{"scale from int", func(a ir.Attrs) any { return a.Scale() }, ir.Attrs{ir.AttrScale: int64(2)}, 2.0},
		{"max_bias default", func(a ir.Attrs) any { return a.MaxBias() }, nil, 0.0},
		{"max_bias", func(a ir.Attrs) any { return a.MaxBias() }, ir.Attrs{ir.AttrMaxBias: 8.0}, 8.0},
		{"window default", func(a ir.Attrs) any { return a.Window() }, nil, int64(0)},
		{"window", func(a ir.Attrs) any { return a.Window() }, ir.Attrs{ir.AttrWindow: int64(512)}, int64(512)},
		{"bias default", func(a ir.Attrs) any { return a.Bias() }, nil, 0.0},
		{"bias", func(a ir.Attrs) any { return a.Bias() }, ir.Attrs{ir.AttrBias: 0.5}, 0.5},
		{"k", func(a ir.Attrs) any { return a.K() }, ir.Attrs{ir.AttrK: int64(2)}, int64(2)},
		{"concat dim", func(a ir.Attrs) any { return a.ConcatDim() }, ir.Attrs{ir.AttrDim: int64(1)}, int64(1)},
		{"transfer", func(a ir.Attrs) any { return a.From() + ">" + a.To() }, ir.Attrs{ir.AttrFrom: "cpu", ir.AttrTo: "npu"}, "cpu>npu"},
		{"rope defaults", func(a ir.Attrs) any { return a.Rope() }, nil,
			ir.RopeAttrs{FreqBase: 10000, FreqScale: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1}},
		{"rope", func(a ir.Attrs) any { return a.Rope() },
			ir.Attrs{ir.AttrNDims: int64(64), ir.AttrMode: int64(ir.RopeModeNeox), ir.AttrNCtxOrig: int64(4096),
				ir.AttrFreqBase: 1e6, ir.AttrFreqScale: 0.25, ir.AttrExtFactor: 1.0, ir.AttrAttnFactor: 2.0,
				ir.AttrBetaFast: 16.0, ir.AttrBetaSlow: int64(2)},
			ir.RopeAttrs{NDims: 64, Mode: ir.RopeModeNeox, NCtxOrig: 4096, FreqBase: 1e6, FreqScale: 0.25, ExtFactor: 1,
				AttnFactor: 2, BetaFast: 16, BetaSlow: 2}},
	} {
		if got := c.got(c.attrs); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// ExampleAttrs_Rope reads a rope node's parameters: the attributes it
// carries, and ggml's defaults for the rest.
func ExampleAttrs_Rope() {
	a := ir.Attrs{ir.AttrNDims: int64(128), ir.AttrMode: int64(ir.RopeModeNeox), ir.AttrFreqBase: 1e6}
	r := a.Rope()
	fmt.Println(r.NDims, r.Mode, r.FreqBase, r.FreqScale, r.AttnFactor)
	// Output: 128 2 1e+06 1 1
}
