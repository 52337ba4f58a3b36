package passes_test

import (
	"testing"

	"github.com/irtool/irtool/internal/floatbits"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/passes"
)

func constF32(g *ir.Graph, name string, vals []float32) *ir.Node {
	n := &ir.Node{ID: len(g.Nodes), Op: ir.OpConst, Type: ir.T(ir.F32, len(vals)), Data: floatbits.Bytes(vals...), Name: name, Layer: -1}
	g.Nodes = append(g.Nodes, n)
	return n
}

// TestFoldGuards: the size cap keeps large results out of the program
// unless raised; what is folded computes what the graph computed.
func TestFoldGuards(t *testing.T) {
	build := func(n int) *ir.Graph {
		g := ir.New("fold")
		a, b := make([]float32, n), make([]float32, n)
		for i := range a {
			a[i], b[i] = float32(i)*0.5, 1/float32(i+1)
		}
		ca, cb := constF32(g, "a", a), constF32(g, "b", b)
		s, err := g.Add(ir.OpAdd, []*ir.Node{ca, cb}, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.Name = "sum"
		x, _ := g.AddTyped(ir.OpInput, nil, nil, ir.T(ir.F32, n))
		x.Name = "x"
		y, _ := g.Add(ir.OpMul, []*ir.Node{x, s}, nil)
		g.Outputs = []*ir.Node{y}
		return g
	}
	fold := mustParse(t, "fold")
	for _, c := range []struct {
		n      int
		opts   passes.FoldOptions
		folded bool
		why    string
	}{
		{1000, passes.FoldOptions{}, true, ""},
		{20000, passes.FoldOptions{}, false, "skipped_too_big"}, // 80 KB > 64 KiB
		{20000, passes.FoldOptions{MaxBytes: 1 << 20}, true, ""},
		{1000, passes.FoldOptions{MaxBytes: 1024}, false, "skipped_too_big"},
	} {
		g := build(c.n)
		out, res, err := passes.Run(g, fold, passes.Options{Fold: c.opts})
		if err != nil {
			t.Fatal(err)
		}
		st := res.Passes[0]
		if st.Changed != c.folded || (c.why != "" && st.Stats[c.why] != 1) {
			t.Errorf("n=%d %+v: changed %v stats %v", c.n, c.opts, st.Changed, st.Stats)
		}
		if c.folded {
			if k := out.Find("sum"); k == nil || k.Op != ir.OpConst {
				t.Fatalf("n=%d: sum not folded", c.n)
			}
			want, err := execute(g, 0)
			if err != nil {
				t.Fatal(err)
			}
			got, err := execute(out, 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := sameBits(want, got); err != nil {
				t.Errorf("n=%d: %v", c.n, err)
			}
		}
	}
}
