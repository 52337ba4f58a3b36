package passes

import (
	"fmt"
	"slices"

	"github.com/irtool/irtool/ir"
)

// merge-qkv: projections that multiply the same activation by different
// weights (Q, K and V; gate and up) become one matmul by the weights joined
// along their rows, followed by views that pick each projection's rows.
// The product of a row is the same dot product as before, so the numbers
// do not change. The joined weight is a concat node of the weight leaves:
// it depends on weights only, so a runtime computes it once at load time
// (the reference executor simply runs it every step), and constant folding
// never copies it (weights are not constants).

// mergeMember is one projection of a group.
type mergeMember struct {
	mm   *ir.Node // mul_mat(w, x) or mul_mat_add(w, x, bias)
	rows int64    // w's ne1
}

// mergeable reports whether n is a projection of x by a 2-D weight leaf.
func mergeable(n *ir.Node) bool {
	if n.Op != ir.OpMulMat && n.Op != ir.OpMulMatAdd {
		return false
	}
	w := n.Args[0]
	s := w.Type.Shape
	if w.Op != ir.OpWeight || !s[0].IsConst() || !s[1].IsConst() || !s[2].Equal(ir.C(1)) || !s[3].Equal(ir.C(1)) {
		return false
	}
	x := n.Args[1].Type.Shape
	if !x[2].Equal(ir.C(1)) || !x[3].Equal(ir.C(1)) {
		return false
	}
	if n.Op == ir.OpMulMatAdd {
		bias := n.Args[2]
		bs := bias.Type.Shape
		if bias.Op != ir.OpWeight || bias.Type.DType != ir.F32 || !bs[0].Equal(s[1]) || bs.Rank() != 1 {
			return false
		}
	}
	return true
}

func mergeQKVPass() Pass {
	return Pass{Name: "merge-qkv", Doc: "merge projections of one activation by different weights (Q/K/V, gate/up) into one matmul by the concatenated weights, with views for each part (off by default: --merge-qkv)",
		Run: func(g *ir.Graph, c *Context) (bool, error) {
			changed := false
			// One group at a time: merging replaces nodes other groups may
			// use as their shared input.
			for {
				x, grp := nextGroup(g)
				if x == nil {
					break
				}
				if err := mergeGroup(g, x, grp); err != nil {
					return changed, fmt.Errorf("merging the projections of %s (%s %q): %w", x, x.Op, x.Name, err)
				}
				c.Count("groups", 1)
				c.Count("merged", len(grp))
				changed = true
			}
			if changed {
				c.Count("removed", g.Compact())
			}
			return changed, nil
		}}
}

// nextGroup returns the first activation (in graph order) that two or more
// mergeable projections of the same kind share, with those projections.
func nextGroup(g *ir.Graph) (*ir.Node, []mergeMember) {
	groups := map[*ir.Node][]mergeMember{}
	var order []*ir.Node
	for _, n := range g.Nodes {
		if !mergeable(n) {
			continue
		}
		x := n.Args[1]
		if grp := groups[x]; len(grp) > 0 {
			f := grp[0].mm
			if f.Op != n.Op || f.Args[0].Type.DType != n.Args[0].Type.DType || !f.Args[0].Type.Shape[0].Equal(n.Args[0].Type.Shape[0]) {
				continue
			}
		} else {
			order = append(order, x)
		}
		groups[x] = append(groups[x], mergeMember{mm: n, rows: n.Args[0].Type.Shape[1].Val})
	}
	for _, x := range order {
		if len(groups[x]) >= 2 {
			return x, groups[x]
		}
	}
	return nil, nil
}

// mergeGroup rewrites one group. New nodes go where the first projection
// was; the weight leaves they read move up to just before them.
func mergeGroup(g *ir.Graph, x *ir.Node, grp []mergeMember) error {
	first := grp[0].mm
	b := &Builder{g: g, root: first, Name: first.Name, Layer: first.Layer}
	ws, biases := make([]*ir.Node, len(grp)), []*ir.Node{}
	var total int64
	for i, m := range grp {
		ws[i] = m.mm.Args[0]
		if m.mm.Op == ir.OpMulMatAdd {
			biases = append(biases, m.mm.Args[2])
		}
		total += m.rows
	}
	w, err := b.unchecked(ir.OpConcat, ir.Attrs{ir.AttrDim: int64(1)}, ws...)
	if err != nil {
		return err
	}
	args := []*ir.Node{w, x}
	if len(biases) > 0 {
		bias, err := b.unchecked(ir.OpConcat, ir.Attrs{ir.AttrDim: int64(0)}, biases...)
		if err != nil {
			return err
		}
		args = append(args, bias)
	}
	merged, err := b.unchecked(first.Op, nil, args...)
	if err != nil {
		return err
	}
	// Each projection becomes a view of its rows of the merged product;
	// reshapes that split the rows into heads become views too (a reshape
	// needs a contiguous source, and these rows are strided).
	rowBytes := 4 * total
	var off int64
	repl := map[*ir.Node]*ir.Node{}
	for _, m := range grp {
		b.Name, b.Layer = m.mm.Name, m.mm.Layer
		t := m.mm.Type
		nb := []int64{4, rowBytes, 0, 0}
		if t.Shape[1].IsConst() {
			nb[2], nb[3] = rowBytes*t.Shape[1].Val, rowBytes*t.Shape[1].Val
		}
		v, err := b.unchecked(ir.OpView, nil, merged)
		if err != nil {
			return err
		}
		v.Type, v.Attrs = t, ir.Attrs{ir.AttrOffset: ir.C(4 * off), ir.AttrNB: nb}
		if err := ir.CheckNode(v); err != nil {
			return err
		}
		repl[m.mm] = v
		for _, u := range g.Users()[m.mm.ID] {
			if u.Op != ir.OpReshape || repl[u] != nil {
				continue
			}
			s := u.Type.Shape
			if !s[0].IsConst() || !s[1].IsConst() || s[0].Val*s[1].Val != m.rows || !s[2].Equal(t.Shape[1]) || !s[3].Equal(ir.C(1)) {
				continue
			}
			b.Name, b.Layer = u.Name, u.Layer
			hv, err := b.unchecked(ir.OpView, nil, merged)
			if err != nil {
				return err
			}
			hv.Type, hv.Attrs = u.Type, ir.Attrs{ir.AttrOffset: ir.C(4 * off), ir.AttrNB: []int64{4, 4 * s[0].Val, rowBytes, nb[3]}}
			if err := ir.CheckNode(hv); err != nil {
				return err
			}
			repl[u] = hv
		}
		off += m.rows
	}
	// Splice: the weight leaves that came later, then the new nodes, where
	// the first projection was. Leaves have no operands, so moving them up
	// keeps the order topological.
	var moved []*ir.Node
	for _, l := range slices.Concat(ws, biases) {
		if l.ID > first.ID && !slices.Contains(moved, l) {
			moved = append(moved, l)
		}
	}
	nodes := make([]*ir.Node, 0, len(g.Nodes)+len(b.created))
	for _, n := range g.Nodes {
		if n == first {
			nodes = append(nodes, moved...)
			nodes = append(nodes, b.created...)
		}
		if slices.Contains(moved, n) || repl[n] != nil {
			continue
		}
		nodes = append(nodes, n)
	}
	g.Nodes = nodes
	for i, n := range g.Nodes {
		n.ID = i
	}
	for old, nw := range repl {
		g.ReplaceUses(old, nw)
	}
	return nil
}

// unchecked makes a node without the position checks of add (mergeGroup
// places the nodes itself); the type comes from the registry when it can
// be inferred.
func (b *Builder) unchecked(op ir.Op, attrs ir.Attrs, args ...*ir.Node) (*ir.Node, error) {
	n := &ir.Node{Op: op, Args: args, Attrs: attrs, Name: b.Name, Layer: b.Layer}
	if err := b.g.Bind(n); err != nil {
		return nil, err
	}
	if info, ok := n.Info(); ok && info.Infer != nil {
		t, err := info.Infer(n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		n.Type = t
		if err := ir.CheckNode(n); err != nil {
			return nil, err
		}
	}
	b.created = append(b.created, n)
	return n, nil
}
