package viz_test

import (
	"testing"

	"github.com/irtool/irtool/ir"
)

// opFused is a fused op registered for these tests only, so that the views'
// treatment of fused ops is checked without depending on package passes.
const opFused ir.Op = "viz_test_rms_norm_mul"

func init() {
	ir.MustRegister(ir.OpInfo{Name: opFused, MinArgs: 2, Fused: true, ElementWise: true,
		Doc:   "test only: rms_norm(x) * w",
		Infer: func(n *ir.Node) (ir.Type, error) { return n.Args[0].Type, nil }})
}

// tinyGraph is two "layers" of y = W · (rms_norm(x) * g) + x with a symbolic
// token count.
func tinyGraph(t testing.TB) *ir.Graph {
	t.Helper()
	return mustParse(t, `graph "tiny" {
  %0 = input() : f32[32,n_tokens] "x"
  %1 = rms_norm(%0) {eps=1e-05} : f32[32,n_tokens] "norm-0" layer=0
  %2 = weight() : f32[32] "blk.0.norm.weight" layer=0
  %3 = mul(%1, %2) : f32[32,n_tokens] "normed-0" layer=0
  %4 = weight() : q8_0[32,32] "blk.0.proj.weight" layer=0
  %5 = reshape(%3) : f32[32,n_tokens] "normed-0 (view)" layer=0
  %6 = mul_mat(%4, %5) : f32[32,n_tokens] "proj-0" layer=0
  %7 = add(%6, %0) : f32[32,n_tokens] "out-0" layer=0
  %8 = rms_norm(%7) {eps=1e-05} : f32[32,n_tokens] "norm-1" layer=1
  %9 = weight() : f32[32] "blk.1.norm.weight" layer=1
  %10 = mul(%8, %9) : f32[32,n_tokens] "normed-1" layer=1
  %11 = weight() : f16[32,32] "blk.1.proj.weight" layer=1
  %12 = mul_mat(%11, %10) : f32[32,n_tokens] "proj-1" layer=1
  %13 = add(%12, %7) : f32[32,n_tokens] "out-1" layer=1
  outputs(%13)
}
`)
}

func mustParse(t testing.TB, src string) *ir.Graph {
	t.Helper()
	g, err := ir.ParseString(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := ir.Verify(g); err != nil {
		t.Fatal(err)
	}
	return g
}

// fuseNorms rewrites every mul(rms_norm(x), w) of g into the test's fused
// op and drops the dead nodes, as a fusion pass would: the result is
// renumbered, which is what the report's keys must see through.
func fuseNorms(t testing.TB, g *ir.Graph) *ir.Graph {
	t.Helper()
	out := g.Clone()
	for i := 0; i < len(out.Nodes); i++ {
		n := out.Nodes[i]
		if n.Op != ir.OpMul || n.Args[0].Op != ir.OpRMSNorm {
			continue
		}
		f := &ir.Node{Op: opFused, Args: []*ir.Node{n.Args[0].Args[0], n.Args[1]}, Type: n.Type,
			Attrs: n.Args[0].Attrs.Clone(), Name: n.Name, Layer: n.Layer}
		out.Insert(i, f)
		out.ReplaceUses(n, f)
		i++
	}
	out.Compact()
	if err := ir.Verify(out); err != nil {
		t.Fatal(err)
	}
	return out
}
