// Package irgonum adapts an *ir.Graph to gonum's graph interfaces, so gonum's
// algorithms (topological sorts, dominators, reachability, cycle search) can
// run on the IR without copying it into a gonum graph first.
//
// Package ir itself depends only on the standard library; this adaptor is
// kept apart so that the IR does not pull gonum into every user. The view is
// read-only: it snapshots the edges when it is made and never modifies the
// IR graph. Edges run from an operand to its user, the direction data flows,
// so a topological order of the view is an execution order of the graph.
package irgonum

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/graph"
	"gonum.org/v1/gonum/graph/iterator"
	"gonum.org/v1/gonum/graph/topo"

	"github.com/irtool/irtool/ir"
)

// Node is a gonum node standing for one IR node. Its gonum ID is the node's
// position in Graph.Nodes, which is ir.Node.ID in a verified graph.
type Node struct {
	*ir.Node
	id int64
}

// ID returns the gonum ID: the node's position in the IR graph's node list.
func (n Node) ID() int64 { return n.id }

// Edge is a data dependency: To uses the value of From as an operand.
type Edge struct{ F, T Node }

// From returns the operand.
func (e Edge) From() graph.Node { return e.F }

// To returns the user.
func (e Edge) To() graph.Node { return e.T }

// ReversedEdge returns the edge with its ends swapped.
func (e Edge) ReversedEdge() graph.Edge { return Edge{F: e.T, T: e.F} }

// Graph is a read-only graph.Directed view of an IR graph. An operand used
// twice by the same node gives a single edge. Operands that are not nodes of
// the graph are left out and counted by Dangling.
type Graph struct {
	nodes    []Node
	ids      map[*ir.Node]int64
	from     [][]int64 // users, in node order, without repeats
	to       [][]int64 // operands, in first-use order, without repeats
	dangling int
}

var _ graph.Directed = (*Graph)(nil)

// New builds the view of g. Later changes to g are not reflected.
func New(g *ir.Graph) *Graph {
	v := &Graph{ids: make(map[*ir.Node]int64, len(g.Nodes))}
	for i, n := range g.Nodes {
		if n == nil {
			continue
		}
		if _, dup := v.ids[n]; dup {
			continue
		}
		v.ids[n] = int64(i)
	}
	v.nodes = make([]Node, len(g.Nodes))
	v.from = make([][]int64, len(g.Nodes))
	v.to = make([][]int64, len(g.Nodes))
	for i, n := range g.Nodes {
		v.nodes[i] = Node{Node: n, id: int64(i)}
		if n == nil || v.ids[n] != int64(i) {
			continue
		}
		for _, a := range n.Args {
			j, ok := v.ids[a]
			if !ok {
				v.dangling++
				continue
			}
			if !containsID(v.to[i], j) {
				v.to[i] = append(v.to[i], j)
				v.from[j] = append(v.from[j], int64(i))
			}
		}
	}
	return v
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// Dangling is the number of operand references to nodes outside the graph
// (or to nil), which the view leaves out.
func (v *Graph) Dangling() int { return v.dangling }

func (v *Graph) has(id int64) bool {
	return id >= 0 && id < int64(len(v.nodes)) && v.nodes[id].Node != nil && v.ids[v.nodes[id].Node] == id
}

// Node returns the node with the given ID, or nil.
func (v *Graph) Node(id int64) graph.Node {
	if !v.has(id) {
		return nil
	}
	return v.nodes[id]
}

// IRNode returns the IR node with the given gonum ID, or nil.
func (v *Graph) IRNode(id int64) *ir.Node {
	if !v.has(id) {
		return nil
	}
	return v.nodes[id].Node
}

// Nodes returns every node in IR order.
func (v *Graph) Nodes() graph.Nodes {
	out := make([]graph.Node, 0, len(v.nodes))
	for i := range v.nodes {
		if v.has(int64(i)) {
			out = append(out, v.nodes[i])
		}
	}
	if len(out) == 0 {
		return graph.Empty
	}
	return iterator.NewOrderedNodes(out)
}

func (v *Graph) list(ids []int64) graph.Nodes {
	if len(ids) == 0 {
		return graph.Empty
	}
	out := make([]graph.Node, len(ids))
	for i, id := range ids {
		out[i] = v.nodes[id]
	}
	return iterator.NewOrderedNodes(out)
}

// From returns the users of the node.
func (v *Graph) From(id int64) graph.Nodes {
	if !v.has(id) {
		return graph.Empty
	}
	return v.list(v.from[id])
}

// To returns the operands of the node.
func (v *Graph) To(id int64) graph.Nodes {
	if !v.has(id) {
		return graph.Empty
	}
	return v.list(v.to[id])
}

// HasEdgeFromTo reports whether node vid uses node uid as an operand.
func (v *Graph) HasEdgeFromTo(uid, vid int64) bool {
	return v.has(uid) && v.has(vid) && containsID(v.to[vid], uid)
}

// HasEdgeBetween reports whether either node uses the other.
func (v *Graph) HasEdgeBetween(xid, yid int64) bool {
	return v.HasEdgeFromTo(xid, yid) || v.HasEdgeFromTo(yid, xid)
}

// Edge returns the edge from operand uid to user vid, or nil.
func (v *Graph) Edge(uid, vid int64) graph.Edge {
	if !v.HasEdgeFromTo(uid, vid) {
		return nil
	}
	return Edge{F: v.nodes[uid], T: v.nodes[vid]}
}

// TopoSort orders g's nodes with gonum's topo.Sort, independently of the
// node list's own order: a second opinion on ir.Verify's acyclicity check.
// It fails when an operand is not a node of the graph or when the operand
// edges form a cycle (the error then wraps a topo.Unorderable naming the
// cyclic components by position).
func TopoSort(g *ir.Graph) ([]*ir.Node, error) {
	if g == nil {
		return nil, errors.New("irgonum: nil graph")
	}
	v := New(g)
	if v.dangling > 0 {
		return nil, fmt.Errorf("irgonum: graph %q: %d operand(s) are not nodes of the graph", g.Name, v.dangling)
	}
	sorted, err := topo.Sort(v)
	if err != nil {
		return nil, fmt.Errorf("irgonum: graph %q: %w", g.Name, err)
	}
	out := make([]*ir.Node, len(sorted))
	for i, n := range sorted {
		out[i] = n.(Node).Node
	}
	return out, nil
}

// Acyclic reports, via TopoSort, whether the graph's operand edges form a DAG.
func Acyclic(g *ir.Graph) error {
	_, err := TopoSort(g)
	return err
}
