package irgonum

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/topo"

	"github.com/irtool/irtool/ir"
)

// diamond: x -> a, x -> b, add(a, b) -> c, and d = mul(c, c) using c twice.
func diamond(t *testing.T) (*ir.Graph, []*ir.Node) {
	t.Helper()
	g := ir.New("diamond")
	x, err := g.AddTyped(ir.OpInput, nil, nil, ir.T(ir.F32, 4, "n"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := g.Add(ir.OpSilu, []*ir.Node{x}, nil)
	b, _ := g.Add(ir.OpScale, []*ir.Node{x}, ir.Attrs{"scale": 2.0})
	c, _ := g.Add(ir.OpAdd, []*ir.Node{a, b}, nil)
	d, err := g.Add(ir.OpMul, []*ir.Node{c, c}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g.Outputs = []*ir.Node{d}
	if err := ir.Verify(g); err != nil {
		t.Fatal(err)
	}
	return g, []*ir.Node{x, a, b, c, d}
}

func ids(it graph.Nodes) []int64 {
	var out []int64
	for it.Next() {
		out = append(out, it.Node().ID())
	}
	return out
}

func eq(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestView(t *testing.T) {
	g, n := diamond(t)
	v := New(g)
	if got := ids(v.Nodes()); !eq(got, []int64{0, 1, 2, 3, 4}) {
		t.Errorf("Nodes = %v", got)
	}
	from := map[int64][]int64{0: {1, 2}, 1: {3}, 2: {3}, 3: {4}, 4: nil}
	to := map[int64][]int64{0: nil, 1: {0}, 2: {0}, 3: {1, 2}, 4: {3}}
	for id := int64(0); id < 5; id++ {
		if got := ids(v.From(id)); !eq(got, from[id]) {
			t.Errorf("From(%d) = %v, want %v", id, got, from[id])
		}
		if got := ids(v.To(id)); !eq(got, to[id]) {
			t.Errorf("To(%d) = %v, want %v", id, got, to[id])
		}
		if v.Node(id).ID() != id || v.IRNode(id) != n[id] {
			t.Errorf("Node(%d)", id)
		}
	}
	// d uses c twice: one edge.
	if v.From(3).Len() != 1 || v.To(4).Len() != 1 {
		t.Error("repeated operand gives more than one edge")
	}
	if !v.HasEdgeFromTo(0, 1) || v.HasEdgeFromTo(1, 0) || !v.HasEdgeBetween(1, 0) || v.HasEdgeBetween(1, 2) {
		t.Error("HasEdge*")
	}
	e := v.Edge(3, 4)
	if e == nil || e.From().ID() != 3 || e.To().ID() != 4 {
		t.Fatalf("Edge(3,4) = %v", e)
	}
	if r := e.ReversedEdge(); r.From().ID() != 4 || r.To().ID() != 3 {
		t.Error("ReversedEdge")
	}
	if v.Edge(4, 3) != nil || v.Edge(0, 4) != nil {
		t.Error("Edge against the flow")
	}
	// Unknown ids.
	for _, id := range []int64{-1, 5, 1 << 40} {
		if v.Node(id) != nil || v.IRNode(id) != nil || v.From(id).Len() != 0 || v.To(id).Len() != 0 || v.HasEdgeBetween(id, 0) {
			t.Errorf("id %d should not exist", id)
		}
	}
	// The node wrapper gives access to the IR node.
	if nd := v.Node(2).(Node); nd.Op != ir.OpScale {
		t.Errorf("node 2 is %s", nd.Op)
	}
	if New(ir.New("empty")).Nodes().Len() != 0 {
		t.Error("empty graph")
	}
}

func TestViewIsASnapshot(t *testing.T) {
	g, n := diamond(t)
	before := g.String()
	v := New(g)
	if g.String() != before {
		t.Fatal("New modified the graph")
	}
	n[4].Args = []*ir.Node{n[0], n[0]}
	if !v.HasEdgeFromTo(3, 4) || v.HasEdgeFromTo(0, 4) {
		t.Error("the view follows later changes")
	}
}

func TestTopoSort(t *testing.T) {
	g, _ := diamond(t)
	order, err := TopoSort(g)
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != len(g.Nodes) {
		t.Fatalf("%d nodes sorted", len(order))
	}
	pos := map[*ir.Node]int{}
	for i, n := range order {
		pos[n] = i
	}
	for _, n := range g.Nodes {
		for _, a := range n.Args {
			if pos[a] >= pos[n] {
				t.Errorf("%v sorted after its user %v", a, n)
			}
		}
	}
	if err := Acyclic(g); err != nil {
		t.Error(err)
	}
}

func TestTopoSortFindsCycle(t *testing.T) {
	g, n := diamond(t)
	// x = silu(c): x -> a -> c -> x. ir.Verify reports it as an operand used
	// before its definition; gonum sees the cycle itself.
	n[0].Op, n[0].Args = ir.OpSilu, []*ir.Node{n[3]}
	if ir.Verify(g) == nil {
		t.Fatal("Verify accepted a cycle")
	}
	_, err := TopoSort(g)
	var unorderable topo.Unorderable
	if !errors.As(err, &unorderable) {
		t.Fatalf("TopoSort error %v, want topo.Unorderable", err)
	}
	if len(unorderable) != 1 || len(unorderable[0]) != 4 {
		t.Errorf("cyclic components %v, want one of 4 nodes (x, a, b, c)", unorderable)
	}
	if !strings.Contains(err.Error(), `graph "diamond"`) {
		t.Errorf("error does not name the graph: %v", err)
	}
	// A node list out of order but acyclic sorts fine: gonum does not rely
	// on the list order.
	g2, m := diamond(t)
	g2.Nodes[1], g2.Nodes[4] = g2.Nodes[4], g2.Nodes[1]
	order, err := TopoSort(g2)
	if err != nil {
		t.Fatal(err)
	}
	if order[len(order)-1] != m[4] || order[0] != m[0] {
		t.Errorf("order %v", order)
	}
}

func TestTopoSortDangling(t *testing.T) {
	g, n := diamond(t)
	n[1].Args = []*ir.Node{{Op: ir.OpInput}}
	v := New(g)
	if v.Dangling() != 1 {
		t.Errorf("Dangling = %d", v.Dangling())
	}
	if _, err := TopoSort(g); err == nil || !strings.Contains(err.Error(), "not nodes of the graph") {
		t.Errorf("TopoSort: %v", err)
	}
	if _, err := TopoSort(nil); err == nil {
		t.Error("nil graph")
	}
}

func TestDuplicateAndNilNodes(t *testing.T) {
	g, n := diamond(t)
	g.Nodes = append(g.Nodes, n[1], nil)
	v := New(g)
	if got := ids(v.Nodes()); !eq(got, []int64{0, 1, 2, 3, 4}) {
		t.Errorf("Nodes = %v", got)
	}
	if v.Node(5) != nil || v.Node(6) != nil {
		t.Error("duplicate or nil entries are nodes")
	}
	if _, err := TopoSort(g); err != nil {
		t.Error(err)
	}
}

// TestGoldenGraph runs the view over the IR package's golden attention
// graph and checks it against ir.Graph.Users.
func TestGoldenGraph(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "testdata", "attention.ir"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := ir.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	v := New(g)
	users := g.Users()
	for _, n := range g.Nodes {
		var want []int64
		for _, u := range users[n.ID] {
			if !containsID(want, int64(u.ID)) {
				want = append(want, int64(u.ID))
			}
		}
		if got := ids(v.From(int64(n.ID))); !eq(got, want) {
			t.Errorf("From(%d) = %v, users %v", n.ID, got, want)
		}
	}
	order, err := TopoSort(g)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[*ir.Node]bool{}
	for _, n := range order {
		for _, a := range n.Args {
			if !seen[a] {
				t.Errorf("%v (%q) comes before its operand %v", n, n.Name, a)
			}
		}
		seen[n] = true
	}
	if len(seen) != len(g.Nodes) {
		t.Errorf("sorted %d of %d nodes", len(seen), len(g.Nodes))
	}
}
