package planner_test

import (
	"strings"
	"testing"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/planner"
)

func parse(t testing.TB, src string) *ir.Graph {
	t.Helper()
	g, err := ir.ParseString(src)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func plan(t testing.TB, g *ir.Graph, opts planner.MemoryOptions) *planner.MemoryPlan {
	t.Helper()
	p, err := planner.PlanMemory(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := planner.ValidateMemoryPlan(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// node returns the first node named name.
func node(t testing.TB, g *ir.Graph, name string) *ir.Node {
	t.Helper()
	n := g.Find(name)
	if n == nil {
		t.Fatalf("no node %q", name)
	}
	return n
}

// chain: a projection, rms_norm, a scale by a weight, a projection out.
const chainIR = `graph "chain" {
  %0 = input() : f32[64,4] "x"
  %1 = weight() : f32[64,64] "w1"
  %2 = weight() : f32[64] "g"
  %3 = weight() : f32[64,16] "w2"
  %4 = mul_mat(%1, %0) : f32[64,4] "a"
  %5 = rms_norm(%4) {eps=1e-05} : f32[64,4] "b"
  %6 = mul(%5, %2) : f32[64,4] "c"
  %7 = mul_mat(%3, %6) : f32[16,4] "d"
  outputs(%7)
}`

func TestPlanGraphInPlacePolicies(t *testing.T) {
	for _, c := range []struct {
		name              string
		policy            planner.InPlacePolicy
		inplace, buffers  int
		arena, lowerBound int64
		shared            [][]string // names that share one offset
	}{
		// ggml's rule: rms_norm runs over a, mul over b.
		{"cpu", planner.CPUPolicy(), 2, 1, 1024, 1024, [][]string{{"a", "b", "c"}}},
		// Only element-wise ops on the NPU: mul over b.
		{"npu", planner.NPUPolicy(), 1, 2, 2048, 2048, [][]string{{"b", "c"}}},
		{"none", planner.InPlacePolicy{}, 0, 3, 2048, 2048, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := parse(t, chainIR)
			p := plan(t, g, planner.MemoryOptions{Policy: c.policy})
			if p.InPlace != c.inplace || len(p.Problem.Buffers) != c.buffers || p.ArenaBytes != c.arena || p.LowerBound != c.lowerBound {
				t.Errorf("in place %d, buffers %d, arena %d, LB %d; want %d, %d, %d, %d",
					p.InPlace, len(p.Problem.Buffers), p.ArenaBytes, p.LowerBound, c.inplace, c.buffers, c.arena, c.lowerBound)
			}
			for _, names := range c.shared {
				b0, ok := p.BufferOf(node(t, g, names[0]).ID)
				if !ok {
					t.Fatalf("%s has no buffer", names[0])
				}
				for _, nm := range names[1:] {
					if b, _ := p.BufferOf(node(t, g, nm).ID); b != b0 {
						t.Errorf("%s in buffer %d, %s in %d", nm, b, names[0], b0)
					}
				}
				if got := p.Buffers[b0].Nodes; len(got) != len(names) {
					t.Errorf("buffer %d holds %v, want %d nodes", b0, got, len(names))
				}
			}
			if _, ok := p.Offsets[node(t, g, "d").ID]; ok {
				t.Error("the output got an arena offset")
			}
			if _, ok := p.Offsets[node(t, g, "x").ID]; ok {
				t.Error("the input got an arena offset")
			}
		})
	}
}

func TestPlanGraphArenaIO(t *testing.T) {
	g := parse(t, chainIR)
	p := plan(t, g, planner.MemoryOptions{Policy: planner.CPUPolicy(), ArenaIO: true})
	// x (1024 B) lives until a is computed; a/b/c (1024 B) until d; d
	// (256 B) to the end.
	if p.LowerBound != 2048 || p.ArenaBytes != 2048 {
		t.Errorf("arena %d, LB %d; want 2048, 2048", p.ArenaBytes, p.LowerBound)
	}
	kinds := map[string]int{}
	for _, b := range p.Buffers {
		kinds[b.Kind]++
	}
	if kinds[planner.KindInput] != 1 || kinds[planner.KindOutput] != 1 || kinds[planner.KindTensor] != 1 {
		t.Errorf("buffer kinds %v", kinds)
	}
	out := p.Problem.Buffers[len(p.Problem.Buffers)-1]
	if out.End != len(p.Order) {
		t.Errorf("output lives over [%d, %d), want to the end %d", out.Start, out.End, len(p.Order))
	}
}

// A live view of a blocks scale from running over a, and keeps a alive
// until the view's reader.
const viewIR = `graph "view" {
  %0 = input() : f32[64,4] "x"
  %1 = weight() : f32[64,64] "w1"
  %2 = weight() : f32[64,8] "w2"
  %3 = mul_mat(%1, %0) : f32[64,4] "a"
  %4 = reshape(%3) : f32[16,16] "a2"
  %5 = scale(%3) {scale=2} : f32[64,4] "s"
  %6 = mul_mat(%4, %4) : f32[16,16] "aa"
  %7 = mul_mat(%2, %5) : f32[8,4] "o"
  outputs(%6, %7)
}`

func TestPlanGraphViewsKeepRootAlive(t *testing.T) {
	g := parse(t, viewIR)
	p := plan(t, g, planner.MemoryOptions{Policy: planner.CPUPolicy()})
	if p.InPlace != 0 {
		t.Errorf("%d in-place merges; scale must not overwrite a while its view is live", p.InPlace)
	}
	b, _ := p.BufferOf(node(t, g, "a").ID)
	if v, _ := p.BufferOf(node(t, g, "a2").ID); v != b {
		t.Errorf("view a2 in buffer %d, its root in %d", v, b)
	}
	if got := p.Problem.Buffers[b]; got.Start != 0 || got.End != 4 {
		t.Errorf("a lives over [%d, %d), want [0, 4) (its view is read at step 3)", got.Start, got.End)
	}
	if p.ArenaBytes != 2048 {
		t.Errorf("arena %d, want 2048", p.ArenaBytes)
	}
}

func TestPlanGraphDoubleUseIsNotInPlace(t *testing.T) {
	g := parse(t, `graph "sq" {
  %0 = input() : f32[64,4] "x"
  %1 = weight() : f32[64,64] "w"
  %2 = mul_mat(%1, %0) : f32[64,4] "a"
  %3 = mul(%2, %2) : f32[64,4] "sq"
  %4 = mul_mat(%1, %3) : f32[64,4] "o"
  outputs(%4)
}`)
	p := plan(t, g, planner.MemoryOptions{Policy: planner.CPUPolicy()})
	if p.InPlace != 0 || p.ArenaBytes != 2048 {
		t.Errorf("in place %d, arena %d; want 0, 2048 (ggml: n_children == 2)", p.InPlace, p.ArenaBytes)
	}
}

func TestPlanGraphWorkspaces(t *testing.T) {
	g := parse(t, chainIR)
	ws := func(n *ir.Node) int64 {
		if n.Op == ir.OpMulMat {
			return 100
		}
		return 0
	}
	p := plan(t, g, planner.MemoryOptions{Policy: planner.CPUPolicy(), Workspace: ws, Align: 64})
	if len(p.Workspaces) != 2 {
		t.Fatalf("workspaces %v, want one per mul_mat", p.Workspaces)
	}
	for id, w := range p.Workspaces {
		b := p.Problem.Buffers[w.Buffer]
		step := -1
		for s, n := range p.Order {
			if n.ID == id {
				step = s
			}
		}
		if b.Start != step || b.End != step+1 || w.Bytes != 100 || w.Offset%64 != 0 || p.Buffers[w.Buffer].Kind != planner.KindWorkspace {
			t.Errorf("workspace of %%%d: %+v, buffer %+v, at step %d", id, w, b, step)
		}
	}
	// a's workspace (128 B aligned) sits beside a; d's beside c.
	if p.LowerBound != 1024+128 || p.ArenaBytes != p.LowerBound {
		t.Errorf("arena %d, LB %d; want %d", p.ArenaBytes, p.LowerBound, 1024+128)
	}
	if _, err := planner.PlanMemory(g, planner.MemoryOptions{Workspace: func(*ir.Node) int64 { return -1 }}); err == nil || !strings.Contains(err.Error(), "negative workspace") {
		t.Errorf("negative workspace: %v", err)
	}
}

// The graph order computes A first and holds it across the large B chain;
// running the B chain first lowers the peak.
const reorderIR = `graph "reorder" {
  %0 = input() : f32[64,1] "x"
  %1 = weight() : f32[64,64] "wA"
  %2 = weight() : f32[64,1024] "wB"
  %3 = weight() : f32[1024,64] "wC"
  %4 = weight() : f32[64,8] "wO"
  %5 = mul_mat(%1, %0) : f32[64,1] "A"
  %6 = mul_mat(%2, %0) : f32[1024,1] "B1"
  %7 = silu(%6) : f32[1024,1] "B2"
  %8 = mul_mat(%3, %7) : f32[64,1] "B3"
  %9 = add(%5, %8) : f32[64,1] "D"
  %10 = mul_mat(%4, %9) : f32[8,1] "out"
  outputs(%10)
}`

func TestPlanGraphReorder(t *testing.T) {
	g := parse(t, reorderIR)
	fixed := plan(t, g, planner.MemoryOptions{Policy: planner.CPUPolicy()})
	re := plan(t, g, planner.MemoryOptions{Policy: planner.CPUPolicy(), Reorder: true})
	if fixed.OrderChanged || fixed.LowerBound != 256+4096+256 {
		t.Errorf("graph order: changed %v, LB %d; want false, 4608", fixed.OrderChanged, fixed.LowerBound)
	}
	if !re.OrderChanged || re.LowerBound != 4096+256 || re.ArenaBytes != re.LowerBound {
		t.Errorf("reordered: changed %v, LB %d, arena %d; want true, 4352, 4352", re.OrderChanged, re.LowerBound, re.ArenaBytes)
	}
	var names []string
	for _, n := range re.Order {
		names = append(names, n.Name)
	}
	if got := strings.Join(names, " "); got != "B1 B2 B3 A D out" {
		t.Errorf("order %q", got)
	}
	// Reordering never makes a graph that is already good worse.
	c := plan(t, parse(t, chainIR), planner.MemoryOptions{Policy: planner.CPUPolicy(), Reorder: true})
	if c.OrderChanged {
		t.Error("chain reordered")
	}
}

func TestPlanGraphStrategies(t *testing.T) {
	g := parse(t, viewIR)
	best := plan(t, g, planner.MemoryOptions{Policy: planner.CPUPolicy()})
	for _, s := range planner.GraphStrategies() {
		// best runs every cheap strategy, the gallocr replay and the
		// search (whose exact ladder and greedy-area seed report as search).
		ranByBest := s != planner.StrategyBest && s != planner.StrategyExact && s != planner.StrategyGreedyArea
		if _, ok := best.Strategies[s]; !ok && ranByBest {
			t.Errorf("best did not run %s: %v", s, best.Strategies)
		}
		p := plan(t, g, planner.MemoryOptions{Policy: planner.CPUPolicy(), Strategy: s})
		if p.Requested != s || p.ArenaBytes < p.LowerBound || p.ArenaBytes < best.ArenaBytes {
			t.Errorf("%s: requested %q, arena %d, LB %d, best %d", s, p.Requested, p.ArenaBytes, p.LowerBound, best.ArenaBytes)
		}
	}
}

func TestPlanGraphErrors(t *testing.T) {
	g := parse(t, chainIR)
	sym := parse(t, `graph "sym" {
  %0 = input() : f32[8,n_tokens] "x"
  %1 = scale(%0) {scale=2} : f32[8,n_tokens]
  outputs(%1)
}`)
	for _, c := range []struct {
		g    *ir.Graph
		opts planner.MemoryOptions
		want string
	}{
		{nil, planner.MemoryOptions{}, "nil graph"},
		{sym, planner.MemoryOptions{}, `graph "sym" is not static (symbols [n_tokens])`},
		{g, planner.MemoryOptions{Strategy: "magic"}, `unknown strategy "magic"`},
		{g, planner.MemoryOptions{Align: -4}, "alignment -4 out of range"},
	} {
		_, err := planner.PlanMemory(c.g, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.opts, err, c.want)
		}
	}
}

// TestValidateGraphPlanCatchesClobbers breaks valid plans in the ways a
// buggy liveness analysis would, and expects the independent check to
// notice each one.
func TestValidateGraphPlanCatchesClobbers(t *testing.T) {
	g := parse(t, viewIR)
	a, s := node(t, g, "a").ID, node(t, g, "s").ID
	for _, c := range []struct {
		name   string
		break_ func(p *planner.MemoryPlan)
		want   string
	}{
		{"scale over a live view's root", func(p *planner.MemoryPlan) { p.Offsets[s] = p.Offsets[a] }, "over %3"},
		{"misaligned", func(p *planner.MemoryPlan) { p.Offsets[s] += 4 }, "misaligned"},
		{"missing offset", func(p *planner.MemoryPlan) { delete(p.Offsets, s) }, "has no offset"},
		{"view with an offset", func(p *planner.MemoryPlan) { p.Offsets[node(t, g, "a2").ID] = 0 }, "no planned storage"},
		{"output in the arena", func(p *planner.MemoryPlan) { p.Offsets[node(t, g, "o").ID] = 0 }, "no planned storage"},
		{"operand after its user", func(p *planner.MemoryPlan) { p.Order[0], p.Order[1] = p.Order[1], p.Order[0] }, "before its operand"},
		{"node twice", func(p *planner.MemoryPlan) { p.Order[4] = p.Order[3] }, "twice"},
		{"workspace over a live value", func(p *planner.MemoryPlan) {
			p.Workspaces[s] = planner.WorkspaceSlot{Offset: p.Offsets[a], Bytes: 32}
		}, "its workspace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := plan(t, g, planner.MemoryOptions{Policy: planner.CPUPolicy(), Strategy: planner.StrategyGreedySize})
			c.break_(p)
			err := planner.ValidateMemoryPlan(p)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}
