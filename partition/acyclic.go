package partition

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"gonum.org/v1/gonum/graph/simple"
	"gonum.org/v1/gonum/graph/topo"

	"github.com/irtool/irtool/ir"
)

// CheckAcyclic verifies that the segments of a partition can run one after
// another: the graph whose vertices are segments, with an edge from the
// segment producing a value to every other segment consuming it (directly
// or through views and copies), has no cycle. segOf gives each node's
// segment, or -1 for nodes in none (leaves, views, transfers). A cycle would
// mean two segments each waiting for the other, which no schedule can run;
// the error names the segments involved.
func CheckAcyclic(g *ir.Graph, segOf []int) error {
	if len(segOf) != len(g.Nodes) {
		return fmt.Errorf("partition: check: %d segment entries for %d nodes", len(segOf), len(g.Nodes))
	}
	dg := simple.NewDirectedGraph()
	for _, s := range segOf {
		if s >= 0 && dg.Node(int64(s)) == nil {
			dg.AddNode(simple.Node(s))
		}
	}
	memo := make(map[int][]int)
	var producers func(i int) []int
	producers = func(i int) []int {
		if segOf[i] >= 0 {
			return []int{segOf[i]}
		}
		if p, ok := memo[i]; ok {
			return p
		}
		memo[i] = nil // guards against malformed self-references
		set := map[int]bool{}
		for _, a := range g.Nodes[i].Args {
			if a.ID < 0 || a.ID >= len(g.Nodes) || g.Nodes[a.ID] != a {
				continue
			}
			for _, p := range producers(a.ID) {
				set[p] = true
			}
		}
		out := make([]int, 0, len(set))
		for p := range set {
			out = append(out, p)
		}
		sort.Ints(out)
		memo[i] = out
		return out
	}
	for i, n := range g.Nodes {
		s := segOf[i]
		if s < 0 {
			continue
		}
		for _, a := range n.Args {
			if a.ID < 0 || a.ID >= len(g.Nodes) || g.Nodes[a.ID] != a {
				return fmt.Errorf("partition: check: %s (%s %q) has an operand outside the graph", n, n.Op, n.Name)
			}
			for _, p := range producers(a.ID) {
				if p != s && !dg.HasEdgeFromTo(int64(p), int64(s)) {
					dg.SetEdge(dg.NewEdge(simple.Node(p), simple.Node(s)))
				}
			}
		}
	}
	if _, err := topo.Sort(dg); err != nil {
		var u topo.Unorderable
		if errors.As(err, &u) {
			var parts []string
			for _, comp := range u {
				ids := make([]int, len(comp))
				for i, x := range comp {
					ids[i] = int(x.ID())
				}
				sort.Ints(ids)
				parts = append(parts, fmt.Sprint(ids))
			}
			sort.Strings(parts)
			return fmt.Errorf("partition: segments form a cycle: %s", strings.Join(parts, ", "))
		}
		return fmt.Errorf("partition: check: %w", err)
	}
	return nil
}
