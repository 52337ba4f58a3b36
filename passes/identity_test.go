package passes_test

import (
	"testing"

	"github.com/irtool/irtool/internal/floatbits"
	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
)

// strayMuls puts mul(silu(x), 1) after every silu of g, in place.
func strayMuls(t *testing.T, g *ir.Graph) int {
	t.Helper()
	n := 0
	for i := 0; i < len(g.Nodes); i++ {
		s := g.Nodes[i]
		if s.Op != ir.OpSilu {
			continue
		}
		one := &ir.Node{Op: ir.OpConst, Type: ir.T(ir.F32, 1), Data: floatbits.Bytes(1), Name: s.Name + "_one", Layer: -1}
		if err := g.Bind(one); err != nil {
			t.Fatal(err)
		}
		mul, err := g.Add(ir.OpMul, []*ir.Node{s, one}, nil)
		if err != nil {
			t.Fatal(err)
		}
		mul.Name, mul.Layer = s.Name+"_times_one", s.Layer
		g.Nodes = g.Nodes[:len(g.Nodes)-1]
		g.ReplaceUses(s, mul)
		g.Insert(i+1, one)
		g.Insert(i+2, mul)
		i += 2
		n++
	}
	if err := ir.Verify(g); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestIdentityUnblocksSwiGLU: one stray mul(x, 1) after each silu of
// stories260K hides the swiglu pattern from fuse-swiglu unless the noop
// pass's mul-one rule removes it first; with it the default pipeline
// fuses every layer again, and translation validation finds the stray
// muls' removal and every other pass bit-identical.
func TestIdentityUnblocksSwiGLU(t *testing.T) {
	f, m := testmodel.Build(t, testref.Testdata("stories260K.gguf"), models.Options{NCtx: 64})
	g := m.Graph.Clone()
	if n := strayMuls(t, g); n != 5 {
		t.Fatalf("%d silu nodes, want 5", n)
	}
	var withoutNoop passes.Pipeline
	for _, p := range passes.Default() {
		if p.Name != "noop" {
			withoutNoop = append(withoutNoop, p)
		}
	}
	out, _, err := passes.Run(g, withoutNoop, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c := out.OpCounts()["swiglu"]; c != 0 {
		t.Fatalf("without noop: %d swiglu, want the stray muls to block all 5", c)
	}
	out, res, err := passes.Run(g, passes.Default(), passes.Options{Check: &passes.CheckOptions{Step: modelStep, Weights: f, Decode: 2, NCtx: 64}})
	if err != nil {
		t.Fatal(err)
	}
	if c := out.OpCounts()["swiglu"]; c != 5 {
		t.Errorf("default pipeline: %d swiglu, want 5", c)
	}
	if hits := res.Passes[0].RuleHits["mul-one"]; hits != 5 {
		t.Errorf("mul-one fired %d times, want 5", hits)
	}
	for _, c := range res.Checks {
		if !c.Identical {
			t.Errorf("%s", c)
		}
	}
}
