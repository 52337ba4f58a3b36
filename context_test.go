package irtool_test

import (
	"context"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/target"
)

func scaleOp(name string, by float32) irtool.Op {
	return irtool.Op{
		Info: ir.OpInfo{Name: ir.Op(name), MinArgs: 1, Doc: name,
			Infer: func(n *ir.Node) (ir.Type, error) { return n.Args[0].Type, nil }},
		Kernel: func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
			return kernels.Scale(dst, a[0], by)
		},
		Rule: target.OpRule{CPUOnly: "test op", Traffic: func(*ir.Node, ir.Bindings) (float64, float64, error) { return 1, 1, nil }},
	}
}

// TestContextsAreApart: what one context registers (op, kernel, rule,
// pass, strategy) the other context and the package defaults do not see,
// and the same name may mean different things in two contexts.
func TestContextsAreApart(t *testing.T) {
	a, b := irtool.NewContext(), irtool.NewContext()
	if err := a.RegisterOp(scaleOp("boost", 2)); err != nil {
		t.Fatal(err)
	}
	if err := b.RegisterOp(scaleOp("boost", 3)); err != nil {
		t.Fatalf("the same name in another context: %v", err)
	}
	if err := a.RegisterOp(scaleOp("boost", 4)); err == nil {
		t.Error("a second definition of boost in one context was accepted")
	}
	if _, ok := ir.Lookup("boost"); ok {
		t.Error("boost leaked into ir's default op set")
	}
	if _, ok := target.DefaultRules().Lookup("boost"); ok {
		t.Error("boost leaked into target's default rules")
	}
	if err := a.RegisterOp(scaleOp("rms_norm", 2)); err == nil {
		t.Error("a context redefined the built-in op rms_norm")
	}
	bad := scaleOp("half-defined", 1)
	bad.Rule.Traffic = nil
	if err := a.RegisterOp(bad); err == nil || !strings.Contains(err.Error(), "cost") {
		t.Errorf("an op without a cost rule: %v", err)
	}
	if _, ok := a.Ops.Lookup("half-defined"); ok {
		t.Error("a failed RegisterOp left the op defined")
	}

	// A pass of context a rewrites scale{2} into a's boost; context b and
	// the default registry do not know the pass.
	rule := &passes.Rule{Name: "scale2-to-boost", Doc: "scale(x){scale=2} -> boost(x)",
		Pattern: passes.Op(ir.OpScale, passes.Any("x")).Where(func(n *ir.Node) bool {
			s, _ := n.Attrs.Float("scale")
			return s == 2
		}),
		Build: func(bd *passes.Builder, m *passes.Match) (*ir.Node, error) {
			return bd.Op("boost", nil, m.Get("x"))
		}}
	if err := a.Passes.Register(passes.RulePass("use-boost", "test", rule)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Passes.Parse("use-boost"); err == nil {
		t.Error("context b knows a's pass")
	}
	if _, err := passes.Parse("use-boost"); err == nil {
		t.Error("the default registry knows a's pass")
	}
	g := a.Ops.New("g")
	x, _ := g.AddTyped(ir.OpInput, nil, nil, ir.T(ir.F32, 4))
	x.Name = "x"
	y, _ := g.Add(ir.OpScale, []*ir.Node{x}, ir.Attrs{"scale": 2.0})
	g.Outputs = []*ir.Node{y}
	pipe, err := a.Passes.Parse("use-boost")
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := passes.Run(g, pipe, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Outputs[0]; got.Op != "boost" {
		t.Fatalf("after use-boost the output is %s", got.Op)
	}
	if err := ir.Verify(out); err != nil {
		t.Errorf("the rewritten graph does not verify: %v", err)
	}

	// A planner strategy of context a.
	p := &planner.Problem{Buffers: []planner.Buffer{{ID: 0, Start: 0, End: 2, Size: 8}, {ID: 1, Start: 1, End: 3, Size: 8}}}
	stack := func(_ context.Context, p *planner.Problem, _ planner.Options) (*planner.Assignment, error) {
		a := &planner.Assignment{}
		for _, b := range p.Buffers {
			a.Offsets = append(a.Offsets, a.Arena)
			a.Arena += b.Size
		}
		return a, nil
	}
	if err := a.Strategies.Register("stack", stack); err != nil {
		t.Fatal(err)
	}
	if _, rep, err := a.Strategies.Solve(context.Background(), p, "stack", planner.Options{}); err != nil || rep.Arena != 16 {
		t.Errorf("a's strategy: %v, %v", rep, err)
	}
	if _, _, err := b.Strategies.Solve(context.Background(), p, "stack", planner.Options{}); err == nil {
		t.Error("context b runs a's strategy")
	}
	if _, _, err := planner.Solve(context.Background(), p, "stack", planner.Options{}); err == nil {
		t.Error("the package-level Solve runs a's strategy")
	}
	overlap := func(_ context.Context, p *planner.Problem, _ planner.Options) (*planner.Assignment, error) {
		return &planner.Assignment{Offsets: make([]int64, len(p.Buffers)), Arena: 8}, nil
	}
	if err := b.Strategies.Register("overlap", overlap); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Strategies.Solve(context.Background(), p, "overlap", planner.Options{}); err == nil {
		t.Error("an overlapping assignment was accepted")
	}
}

// TestContextOpFolds: constant folding evaluates a context's op with the
// context's kernels (FoldOptions.Kernels) and leaves it alone without them.
func TestContextOpFolds(t *testing.T) {
	c := irtool.NewContext()
	if err := c.RegisterOp(scaleOp("boost", 2)); err != nil {
		t.Fatal(err)
	}
	g := c.Ops.New("g")
	data := make([]byte, 16)
	for i, v := range []float32{1, 2, 3, 4} {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
	}
	k := &ir.Node{Op: ir.OpConst, Type: ir.T(ir.F32, 4), Data: data, Layer: -1}
	g.Nodes = append(g.Nodes, k)
	y, err := g.Add("boost", []*ir.Node{k}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g.Outputs = []*ir.Node{y}
	pipe, err := c.Passes.Parse("fold")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		kernels *eval.KernelSet
		folded  bool
	}{{nil, false}, {c.Kernels, true}} {
		out, _, err := passes.Run(g, pipe, passes.Options{Fold: passes.FoldOptions{Kernels: tc.kernels}})
		if err != nil {
			t.Fatal(err)
		}
		o := out.Outputs[0]
		if (o.Op == ir.OpConst) != tc.folded {
			t.Fatalf("kernels %v: output is %s, folded want %v", tc.kernels != nil, o.Op, tc.folded)
		}
		if tc.folded {
			for i, want := range []float32{2, 4, 6, 8} {
				if got := math.Float32frombits(binary.LittleEndian.Uint32(o.Data[4*i:])); got != want {
					t.Errorf("folded value %d = %v, want %v", i, got, want)
				}
			}
		}
	}
}
