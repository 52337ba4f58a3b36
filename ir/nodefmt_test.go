package ir_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/irtool/irtool/ir"
)

func TestNodeLine(t *testing.T) {
	g := ir.New("t")
	x, err := g.AddTyped(ir.OpInput, nil, nil, ir.Type{DType: ir.F32, Shape: ir.Shape{ir.C(4), ir.S("n"), ir.C(1), ir.C(1)}})
	if err != nil {
		t.Fatal(err)
	}
	x.Name = "x"
	y, err := g.Add("scale", []*ir.Node{x}, ir.Attrs{"scale": 0.5})
	if err != nil {
		t.Fatal(err)
	}
	y.Name, y.Layer = "half", 2
	c := &ir.Node{ID: 2, Op: ir.OpConst, Type: ir.Type{DType: ir.F32, Shape: ir.Shape{ir.C(2), ir.C(1), ir.C(1), ir.C(1)}}, Layer: -1, Data: make([]byte, 8)}

	for _, tc := range []struct{ got, want string }{
		{y.Line(), `%1 = scale(%0) {scale=0.5} : f32[4,n] "half" layer=2`},
		{fmt.Sprintf("%+v", y), `%1 = scale(%0) {scale=0.5} : f32[4,n] "half" layer=2`},
		{fmt.Sprintf("%v", y), `%1`},
		{fmt.Sprintf("%s", y), `%1`},
		{c.Line(), `%2 = const() : f32[2] data=<8 bytes>`},
		{x.Line(), `%0 = input() : f32[4,n] "x"`},
	} {
		if tc.got != tc.want {
			t.Errorf("got  %s\nwant %s", tc.got, tc.want)
		}
	}
	// The one-line form is the node's line of the text IR (data aside).
	if !strings.Contains(g.String(), "  "+y.Line()+"\n") {
		t.Errorf("%q is not a line of\n%s", y.Line(), g)
	}
}
