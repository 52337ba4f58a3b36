package planner

import (
	"fmt"

	"github.com/irtool/irtool/ir"
)

// ValidateMemoryPlan checks a graph plan against its graph directly, without
// trusting the liveness analysis that produced its Problem:
//
//   - Order runs every non-leaf node exactly once, after its operands;
//   - exactly the nodes that need planned storage have an offset (compute
//     nodes that are not outputs, plus inputs that are read and outputs
//     when ArenaIO), every offset and workspace is aligned and inside the
//     arena;
//   - replaying the order, no node's result or workspace is written over
//     bytes holding a value some node (or, for outputs, the caller) still
//     reads; the only exception is a node writing exactly over one of its
//     own operands that nothing reads afterwards (in-place execution), and
//     which it reads directly and only once.
//
// It also validates Problem and Assignment with Validate.
func ValidateMemoryPlan(p *MemoryPlan) error {
	if p == nil || p.Graph == nil {
		return fmt.Errorf("planner: plan: no graph")
	}
	g := p.Graph
	lay, err := ir.Layouts(g)
	if err != nil {
		return fmt.Errorf("planner: plan: %w", err)
	}
	if p.Assignment == nil || p.Problem == nil {
		return fmt.Errorf("planner: plan: no problem or assignment")
	}
	if err := Validate(p.Problem, p.Assignment); err != nil {
		return fmt.Errorf("planner: plan: %w", err)
	}
	if p.ArenaBytes != p.Assignment.Arena {
		return fmt.Errorf("planner: plan: arena %d differs from its assignment's %d", p.ArenaBytes, p.Assignment.Arena)
	}
	c := planCheck{p: p, lay: lay} // on the stack, as the checks' locals were
	if err := c.checkOrder(); err != nil {
		return err
	}
	c.findLastReads()
	if err := c.checkOffsets(); err != nil {
		return err
	}
	return c.checkClobbers()
}

// planCheck is ValidateMemoryPlan's state: each node's step in the order and
// the last step reading each storage root.
type planCheck struct {
	p        *MemoryPlan
	lay      []ir.Layout
	step     []int // node ID -> step, -1 for leaves
	isOut    []bool
	lastRead []int
}

func (c *planCheck) root(x *ir.Node) *ir.Node { return c.lay[x.ID].Root }

func (c *planCheck) size(x *ir.Node) int64 {
	b, _ := x.Type.Bytes()
	return alignUp(b, c.p.Align)
}

// needs reports whether x must have planned storage.
func (c *planCheck) needs(x *ir.Node) bool {
	info, _ := x.Info()
	switch {
	case info == nil:
		return false
	case info.Kind == ir.KindLeaf:
		return c.p.ArenaIO && x.Op == ir.OpInput && c.lastRead[x.ID] >= 0
	case info.Kind == ir.KindView:
		return false
	}
	return c.p.ArenaIO || !c.isOut[x.ID]
}

// checkOrder checks that Order runs every non-leaf node exactly once, after
// its operands, and sets c.step.
func (c *planCheck) checkOrder() error {
	p, g := c.p, c.p.Graph
	nn := len(g.Nodes)
	step := make([]int, nn)
	for i := range step {
		step[i] = -1
	}
	for s, n := range p.Order {
		if n == nil || n.ID < 0 || n.ID >= nn || g.Nodes[n.ID] != n {
			return fmt.Errorf("planner: plan: order position %d is not a node of graph %q", s, g.Name)
		}
		if n.IsLeaf() {
			return fmt.Errorf("planner: plan: order position %d is leaf %s", s, n)
		}
		if step[n.ID] >= 0 {
			return fmt.Errorf("planner: plan: %s appears twice in the order", n)
		}
		step[n.ID] = s
		for _, a := range n.Args {
			if !a.IsLeaf() && (step[a.ID] < 0 || step[a.ID] >= s) {
				return fmt.Errorf("planner: plan: %s runs before its operand %s", n, a)
			}
		}
	}
	for _, n := range g.Nodes {
		if !n.IsLeaf() && step[n.ID] < 0 {
			return fmt.Errorf("planner: plan: %s (%s %q) is missing from the order", n, n.Op, n.Name)
		}
	}
	c.step = step
	return nil
}

// findLastReads sets c.isOut and c.lastRead: the last step reading a
// storage root's value (directly or through views); outputs are read after
// the last step.
func (c *planCheck) findLastReads() {
	p, g, step, root := c.p, c.p.Graph, c.step, c.root
	nn := len(g.Nodes)
	steps := len(p.Order)
	isOut := make([]bool, nn)
	for _, o := range g.Outputs {
		isOut[root(o).ID] = true
	}
	lastRead := make([]int, nn)
	for i := range lastRead {
		lastRead[i] = -1
	}
	for _, n := range p.Order {
		for _, a := range n.Args {
			r := root(a).ID
			lastRead[r] = max(lastRead[r], step[n.ID])
		}
	}
	for id := range isOut {
		if isOut[id] {
			lastRead[id] = steps
		}
	}
	c.isOut, c.lastRead = isOut, lastRead
}

// checkOffsets checks that exactly the nodes needing storage have an
// offset, and that every offset and workspace is aligned and in the arena.
func (c *planCheck) checkOffsets() error {
	p, g, step, size := c.p, c.p.Graph, c.step, c.size
	nn := len(g.Nodes)
	for _, n := range g.Nodes {
		off, has := p.Offsets[n.ID]
		if c.needs(n) != has {
			if has {
				return fmt.Errorf("planner: plan: %s (%s %q) has an offset but no planned storage", n, n.Op, n.Name)
			}
			return fmt.Errorf("planner: plan: %s (%s %q) has no offset", n, n.Op, n.Name)
		}
		if has && (off < 0 || off%p.Align != 0 || off+size(n) > p.ArenaBytes) {
			return fmt.Errorf("planner: plan: %s (%s %q): bytes [%d, %d) misaligned or outside the %d-byte arena", n, n.Op, n.Name, off, off+size(n), p.ArenaBytes)
		}
	}
	for id, w := range p.Workspaces {
		if id < 0 || id >= nn || step[id] < 0 {
			return fmt.Errorf("planner: plan: workspace of unknown node %%%d", id)
		}
		if w.Offset < 0 || w.Offset%p.Align != 0 || w.Offset+alignUp(w.Bytes, p.Align) > p.ArenaBytes {
			return fmt.Errorf("planner: plan: workspace of %%%d: bytes [%d, %d) misaligned or outside the arena", id, w.Offset, w.Offset+w.Bytes)
		}
	}
	return nil
}

// checkClobbers replays the order and checks that no result or workspace
// is written over a value still read, in-place execution aside.
func (c *planCheck) checkClobbers() error {
	p, g, size, lastRead := c.p, c.p.Graph, c.size, c.lastRead
	type value struct {
		n        *ir.Node
		off, top int64
	}
	var live []value
	for _, n := range g.Nodes {
		if n.Op == ir.OpInput && c.needs(n) {
			live = append(live, value{n, p.Offsets[n.ID], p.Offsets[n.ID] + size(n)})
		}
	}
	for s, n := range p.Order {
		kept := live[:0]
		for _, v := range live {
			if lastRead[v.n.ID] >= s {
				kept = append(kept, v)
			}
		}
		live = kept
		if w, ok := p.Workspaces[n.ID]; ok && w.Bytes > 0 {
			top := w.Offset + alignUp(w.Bytes, p.Align)
			for _, v := range live {
				if v.off < top && w.Offset < v.top {
					return clobber(s, n, "its workspace", w.Offset, top, v.n, v.off, v.top, lastRead[v.n.ID])
				}
			}
		}
		off, has := p.Offsets[n.ID]
		if !has {
			continue
		}
		top := off + size(n)
		for _, v := range live {
			if v.off >= top || off >= v.top {
				continue
			}
			if !inPlaceOK(n, v.n, c.root, lastRead, s) || v.off != off || v.top != top {
				return clobber(s, n, "its result", off, top, v.n, v.off, v.top, lastRead[v.n.ID])
			}
		}
		live = append(live, value{n, off, top})
	}
	return nil
}

// inPlaceOK reports whether n may overwrite operand y's storage: n reads y
// directly, exactly once, through no view, and nothing reads y later.
func inPlaceOK(n, y *ir.Node, root func(*ir.Node) *ir.Node, lastRead []int, s int) bool {
	if lastRead[y.ID] != s {
		return false
	}
	direct := 0
	for _, a := range n.Args {
		if root(a) == y {
			if a != y {
				return false
			}
			direct++
		}
	}
	return direct == 1
}

func clobber(s int, n *ir.Node, what string, off, top int64, y *ir.Node, yoff, ytop int64, last int) error {
	return fmt.Errorf("planner: plan: step %d: %s (%s %q) writes %s at bytes [%d, %d) over %s (%s %q) at [%d, %d), still read at step %d",
		s, n, n.Op, n.Name, what, off, top, y, y.Op, y.Name, yoff, ytop, last)
}
