package planner

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/irtool/irtool/ir"
)

// orderGraph holds what the reordering heuristics need: the non-leaf nodes
// in graph order, their dependencies (operands and state chains), and the
// bytes each one allocates.
type orderGraph struct {
	g     *ir.Graph
	nodes []*ir.Node
	pos   []int   // node ID -> index in nodes, -1 for leaves
	deps  [][]int // index -> indexes it must follow (deduplicated)
	size  []int64 // node ID -> bytes of its result (0: view, leaf, output)
	kind  []ir.Kind
	side  []bool
	root  func(*ir.Node) *ir.Node
}

// newOrderGraph collects dependencies: operands, and for every piece of
// persistent state (a KV cache) the chain of nodes touching it (its
// views, the writes into it, the readers of those views) in graph order,
// so that no read moves across a write that the IR links only through the
// cache's address.
func newOrderGraph(g *ir.Graph, lay []ir.Layout) (*orderGraph, error) {
	og := &orderGraph{g: g, nodes: graphOrder(g), root: func(x *ir.Node) *ir.Node { return lay[x.ID].Root }}
	nn := len(g.Nodes)
	og.pos = make([]int, nn)
	for i := range og.pos {
		og.pos[i] = -1
	}
	for i, n := range og.nodes {
		og.pos[n.ID] = i
	}
	og.kind = make([]ir.Kind, nn)
	og.side = make([]bool, nn)
	for _, n := range g.Nodes {
		info, ok := n.Info()
		if !ok {
			return nil, fmt.Errorf("planner: %s: unknown op %q", n, n.Op)
		}
		og.kind[n.ID], og.side[n.ID] = info.Kind, info.SideEffect
	}
	isOut := make([]bool, nn)
	for _, o := range g.Outputs {
		isOut[og.root(o).ID] = true
	}
	og.size = make([]int64, nn)
	for _, n := range og.nodes {
		if og.kind[n.ID] == ir.KindCompute && !isOut[n.ID] {
			b, err := n.Type.Bytes()
			if err != nil {
				return nil, fmt.Errorf("planner: %s (%s %q): %w", n, n.Op, n.Name, err)
			}
			og.size[n.ID] = b
		}
	}
	og.deps = make([][]int, len(og.nodes))
	lastTouch := map[int]int{}
	for i, n := range og.nodes {
		add := func(p int) {
			if p >= 0 && !containsInt(og.deps[i], p) {
				og.deps[i] = append(og.deps[i], p)
			}
		}
		for _, a := range n.Args {
			add(og.pos[a.ID])
		}
		var touched []int
		if r := og.root(n); r.Op == ir.OpState {
			touched = append(touched, r.ID)
		}
		for _, a := range n.Args {
			if r := og.root(a); r.Op == ir.OpState && !containsInt(touched, r.ID) {
				touched = append(touched, r.ID)
			}
		}
		for _, s := range touched {
			if p, ok := lastTouch[s]; ok {
				add(p)
			}
			lastTouch[s] = i
		}
	}
	return og, nil
}

// reads reports whether n runs a kernel that reads its operands.
func (og *orderGraph) reads(n *ir.Node) bool {
	return og.kind[n.ID] == ir.KindCompute || og.side[n.ID]
}

// greedyOrder returns a topological order chosen greedily to keep few
// bytes live: at each step it runs the ready node
// with the smallest net allocation (bytes it allocates minus bytes of the
// tensors whose last reader it is; views and in-place results allocate
// nothing), the earliest in the graph's order on ties. Besides operand
// edges, every node touching a given piece of persistent state (a KV
// cache: its views, the writes into it, the readers of those views) keeps
// its relative order, so no read moves across a write that the IR links
// only through the cache's address.
func (og *orderGraph) greedyOrder() []*ir.Node {
	nodes, kind, size, root, reads := og.nodes, og.kind, og.size, og.root, og.reads
	succ := make([][]int, len(nodes))
	npred := make([]int, len(nodes))
	for i, ds := range og.deps {
		for _, p := range ds {
			succ[p] = append(succ[p], i)
			npred[i]++
		}
	}
	pending := make([]int, len(og.g.Nodes))
	rootsOf := make([][]int, len(nodes))
	for i, n := range nodes {
		if !reads(n) {
			continue
		}
		for _, a := range n.Args {
			r := root(a).ID
			if size[r] > 0 && !containsInt(rootsOf[i], r) {
				rootsOf[i] = append(rootsOf[i], r)
				pending[r]++
			}
		}
	}
	score := func(i int) int64 {
		n := nodes[i]
		if !reads(n) {
			return 0
		}
		var freed int64
		for _, r := range rootsOf[i] {
			if pending[r] == 1 {
				freed += size[r]
			}
		}
		alloc := size[n.ID]
		if alloc > 0 {
			for _, a := range n.Args {
				if kind[a.ID] == ir.KindCompute && pending[a.ID] == 1 && size[a.ID] == alloc && a.Type.DType == n.Type.DType {
					alloc = 0 // may run in place
					break
				}
			}
		}
		return alloc - freed
	}
	var ready []int
	for i := range nodes {
		if npred[i] == 0 {
			ready = append(ready, i)
		}
	}
	out := make([]*ir.Node, 0, len(nodes))
	for len(ready) > 0 {
		best, bestScore := -1, int64(0)
		for k, i := range ready {
			s := score(i)
			if best < 0 || s < bestScore || (s == bestScore && i < ready[best]) {
				best, bestScore = k, s
			}
		}
		i := ready[best]
		ready = append(ready[:best], ready[best+1:]...)
		out = append(out, nodes[i])
		for _, r := range rootsOf[i] {
			pending[r]--
		}
		for _, j := range succ[i] {
			if npred[j]--; npred[j] == 0 {
				ready = append(ready, j)
			}
		}
	}
	return out
}

// dfsOrder returns the post-order of a depth-first walk from the outputs
// that visits a node's dependencies in decreasing order of (estimated peak
// of the dependency's cone - its result size), the Sethi-Ullman rule: the
// branch needing the most scratch memory runs first, while the others'
// results are not yet live. Nodes no output depends on follow in graph
// order.
func (og *orderGraph) dfsOrder() []*ir.Node {
	nodes := og.nodes
	res := make([]int64, len(nodes))  // bytes a node's value holds live
	peak := make([]int64, len(nodes)) // estimated peak of computing it
	sorted := make([][]int, len(nodes))
	for i, n := range nodes {
		ds := slices.Clone(og.deps[i])
		slices.SortStableFunc(ds, func(a, b int) int {
			return cmp.Compare(peak[b]-res[b], peak[a]-res[a])
		})
		sorted[i] = ds
		var running, pk int64
		for _, d := range ds {
			pk = max(pk, running+peak[d])
			running += res[d]
		}
		res[i] = og.size[n.ID]
		if og.kind[n.ID] == ir.KindView {
			if p := og.pos[og.root(n).ID]; p >= 0 {
				res[i] = res[p]
			}
		}
		peak[i] = max(pk, running+res[i])
	}
	out := make([]*ir.Node, 0, len(nodes))
	done := make([]bool, len(nodes))
	var visit func(i int)
	visit = func(i int) {
		if done[i] {
			return
		}
		done[i] = true
		for _, d := range sorted[i] {
			visit(d)
		}
		out = append(out, nodes[i])
	}
	for _, o := range og.g.Outputs {
		if p := og.pos[o.ID]; p >= 0 {
			visit(p)
		}
	}
	for i := range nodes {
		visit(i)
	}
	return out
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
