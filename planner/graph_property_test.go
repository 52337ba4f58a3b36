package planner_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/internal/floatbits"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/planner"
)

// weightMap is a eval.WeightSource over in-memory tensors.
type weightMap map[string][]byte

func (w weightMap) TensorData(name string) ([]byte, error) {
	if b, ok := w[name]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("no weight %q", name)
}

// randomGraph builds a random static DAG of f32 tensors from the ops the
// planner treats differently: element-wise ops that may run in place
// (also reading one value twice), row ops, matmuls, reshape and transpose
// views (consumed by cont or by later ops), several inputs and outputs.
func randomGraph(rng *rand.Rand, nOps int) (*ir.Graph, weightMap, map[string][]byte) {
	g := ir.New("random")
	w, in := weightMap{}, map[string][]byte{}
	var pool []*ir.Node // values ops may read
	add := func(n *ir.Node, err error) *ir.Node {
		if err != nil {
			panic(err)
		}
		pool = append(pool, n)
		return n
	}
	leaf := func(op ir.Op, name string, dims ...any) *ir.Node {
		n, err := g.AddTyped(op, nil, nil, ir.T(ir.F32, dims...))
		if err != nil {
			panic(err)
		}
		n.Name = name
		ne, _ := n.Type.Shape.Ne()
		data := floatbits.Bytes(floatbits.Rand(rng, int(ne[0]*ne[1]*ne[2]*ne[3]), 1)...)
		if op == ir.OpWeight {
			w[name] = data
		} else {
			in[name] = data
		}
		return n
	}
	tokens := int64(1 + rng.IntN(4))
	for i := 0; i < 1+rng.IntN(2); i++ {
		pool = append(pool, leaf(ir.OpInput, fmt.Sprintf("x%d", i), []int64{16, 32}[rng.IntN(2)], tokens))
	}
	dims := func(n *ir.Node) [4]int64 { ne, _ := n.Type.Shape.Ne(); return ne }
	contiguous := func(n *ir.Node) bool { return n.Op != ir.OpTransp }
	for len(g.Nodes) < nOps+8 {
		v := pool[rng.IntN(len(pool))]
		ne := dims(v)
		switch rng.IntN(9) {
		case 0:
			add(g.Add(ir.OpScale, []*ir.Node{v}, ir.Attrs{"scale": 0.5}))
		case 1:
			add(g.Add(ir.OpSilu, []*ir.Node{v}, nil))
		case 2:
			add(g.Add(ir.OpRMSNorm, []*ir.Node{v}, ir.Attrs{"eps": 1e-5}))
		case 3, 4:
			op := []ir.Op{ir.OpAdd, ir.OpMul}[rng.IntN(2)]
			var same []*ir.Node
			for _, u := range pool {
				if dims(u) == ne {
					same = append(same, u)
				}
			}
			b := same[rng.IntN(len(same))] // may be v itself
			if rng.IntN(4) == 0 {
				b = leaf(ir.OpWeight, fmt.Sprintf("g%d", len(g.Nodes)), ne[0])
			}
			add(g.Add(op, []*ir.Node{v, b}, nil))
		case 5, 6:
			if !contiguous(v) {
				continue
			}
			m := []int64{16, 32}[rng.IntN(2)]
			wt := leaf(ir.OpWeight, fmt.Sprintf("w%d", len(g.Nodes)), ne[0], m)
			add(g.Add(ir.OpMulMat, []*ir.Node{wt, v}, nil))
		case 7:
			if !contiguous(v) || ne[0]%2 != 0 {
				continue
			}
			add(g.AddTyped(ir.OpReshape, []*ir.Node{v}, nil, ir.T(ir.F32, ne[0]/2, ne[1]*2)))
		case 8:
			if !contiguous(v) {
				continue
			}
			t := add(g.Add(ir.OpTransp, []*ir.Node{v}, nil))
			pool = pool[:len(pool)-1] // only cont reads a transpose
			add(g.AddTyped(ir.OpCont, []*ir.Node{t}, nil, ir.T(ir.F32, ne[1], ne[0])))
		}
	}
	last := g.Nodes[len(g.Nodes)-1]
	g.Outputs = []*ir.Node{last}
	if rng.IntN(2) == 0 {
		if o := pool[rng.IntN(len(pool))]; !o.IsLeaf() && o != last {
			g.Outputs = append(g.Outputs, o)
		}
	}
	if err := ir.Verify(g); err != nil {
		panic(err)
	}
	return g, w, in
}

// execute runs g (optionally with a plan) and returns its outputs.
func execute(t *testing.T, g *ir.Graph, w weightMap, in map[string][]byte, p *planner.MemoryPlan) [][]float32 {
	t.Helper()
	var eo eval.ExecOptions
	if p != nil {
		eo = eval.ExecOptions{Offsets: p.Offsets, ArenaSize: p.ArenaBytes, Order: p.OrderIDs()}
	}
	ex, err := eval.NewExecutor(g, w, eo)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range in {
		if ex.HasInput(name) {
			if err := ex.SetInput(name, data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := ex.Run(); err != nil {
		t.Fatal(err)
	}
	var out [][]float32
	for i := range g.Outputs {
		v, _, err := ex.Output(i)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestPlanGraphRandomProperty plans random graphs under random options and
// checks, for every plan: the independent validator finds no overlap,
// best is never worse than greedy-size nor below the lower bound, and
// running the graph inside the arena gives bit-identical outputs.
func TestPlanGraphRandomProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	n := 300
	if testing.Short() {
		n = 40
	}
	policies := []planner.InPlacePolicy{planner.CPUPolicy(), planner.NPUPolicy(), {}}
	for i := 0; i < n; i++ {
		g, w, in := randomGraph(rng, 4+rng.IntN(30))
		want := execute(t, g, w, in, nil)
		opts := planner.MemoryOptions{
			Policy:  policies[rng.IntN(len(policies))],
			ArenaIO: rng.IntN(2) == 0,
			Reorder: rng.IntN(2) == 0,
			Align:   []int64{16, 32, 64}[rng.IntN(3)],
		}
		other := planner.GraphStrategies()[rng.IntN(len(planner.GraphStrategies()))]
		for _, s := range []string{planner.StrategyBest, other} {
			opts.Strategy = s
			p, err := planner.PlanMemory(g, opts)
			if err != nil {
				t.Fatalf("graph %d %+v: %v", i, opts, err)
			}
			if err := planner.ValidateMemoryPlan(p); err != nil {
				t.Fatalf("graph %d: %v", i, err)
			}
			if p.ArenaBytes < p.LowerBound {
				t.Fatalf("graph %d %s: arena %d below the lower bound %d", i, s, p.ArenaBytes, p.LowerBound)
			}
			if gs, ok := p.Strategies[planner.StrategyGreedySize]; s == planner.StrategyBest && (!ok || p.ArenaBytes > gs) {
				t.Fatalf("graph %d: best %d, greedy-size %d", i, p.ArenaBytes, gs)
			}
			if _, _, ok := sameBits(want, execute(t, g, w, in, p)); !ok {
				var sb strings.Builder
				ir.Print(&sb, g)
				t.Fatalf("graph %d (%s, policy %q, io %v, reorder %v, align %d): planned outputs differ\n%s",
					i, s, opts.Policy.Name, opts.ArenaIO, opts.Reorder, opts.Align, sb.String())
			}
		}
	}
}

// TestExecutorRejectsBadOrders: eval.ExecOptions.Order must run every
// op once, after its operands.
func TestExecutorRejectsBadOrders(t *testing.T) {
	g := parse(t, chainIR)
	w := weightMap{}
	for _, n := range g.Leaves(ir.OpWeight) {
		b, _ := n.Type.Bytes()
		w[n.Name] = make([]byte, b)
	}
	for _, c := range []struct {
		order []int
		want  string
	}{
		{[]int{5, 4, 6, 7}, "before its operand"},
		{[]int{4, 5, 5, 6, 7}, "twice"},
		{[]int{4, 5, 7}, "before its operand"},
		{[]int{4, 5, 6}, "misses"},
		{[]int{4, 5, 6, 7, 99}, "names node %99"},
	} {
		_, err := eval.NewExecutor(g, w, eval.ExecOptions{Order: c.order})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("order %v: %v, want %q", c.order, err, c.want)
		}
	}
	// Leaves may be listed; they are skipped.
	if _, err := eval.NewExecutor(g, w, eval.ExecOptions{Order: []int{0, 1, 2, 3, 4, 5, 6, 7}}); err != nil {
		t.Error(err)
	}
}
