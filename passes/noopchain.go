package passes

import "github.com/irtool/irtool/ir"

// noopPass is the noop pass: one linear sweep that forwards chains of
// views and reshapes that keep their operand as it is (the rules
// view-identity and reshape-same), then the worklist driver with every
// noop rule for the rest. The driver replaces one root at a time, moving
// the node list each time, so a chain of k such nodes would cost k times
// the graph; the sweep removes them all at once.
func noopPass() Pass {
	p := RulePass("noop", "no-op elimination: reshape/view/permute/cont/cast chains that do nothing, scale by 1, mul/div by a constant 1, add of a constant -0", append(noopRules(), identityRules()...)...)
	rules := p.Run
	p.Run = func(g *ir.Graph, c *Context) (bool, error) {
		views, reshapes := forwardIdentities(g)
		c.Hit("view-identity", views)
		c.Hit("reshape-same", reshapes)
		if views+reshapes > 0 {
			c.Count("sweeps", 1)
		}
		changed, err := rules(g, c)
		return changed || views+reshapes > 0, err
	}
	return p
}

// identityOf returns the operand n stands for when n is a view or reshape
// that does nothing (the conditions of the rules view-identity and
// reshape-same), else nil.
func identityOf(n *ir.Node) *ir.Node {
	if len(n.Args) != 1 {
		return nil
	}
	x := n.Args[0]
	switch n.Op {
	case ir.OpReshape:
	case ir.OpView:
		off, ok := n.Attrs.Dim(ir.AttrOffset)
		if !ok || !off.IsConst() || off.Val != 0 || !contiguous(n) || !contiguous(x) {
			return nil
		}
	default:
		return nil
	}
	return sameAs(x, n)
}

// forwardIdentities makes every use of an identity view or reshape a use
// of its operand (through chains of them) and removes them, in one pass
// over the graph; it returns how many views and reshapes it removed.
func forwardIdentities(g *ir.Graph) (views, reshapes int) {
	fwd := map[*ir.Node]*ir.Node{}
	for _, n := range g.Nodes {
		for i, a := range n.Args {
			if r, ok := fwd[a]; ok {
				n.Args[i] = r
			}
		}
		if x := identityOf(n); x != nil {
			fwd[n] = x
			if n.Op == ir.OpView {
				views++
			} else {
				reshapes++
			}
		}
	}
	if len(fwd) == 0 {
		return 0, 0
	}
	for i, o := range g.Outputs {
		if r, ok := fwd[o]; ok {
			g.Outputs[i] = r
		}
	}
	kept := g.Nodes[:0]
	for _, n := range g.Nodes {
		if _, gone := fwd[n]; !gone {
			kept = append(kept, n)
		}
	}
	clear(g.Nodes[len(kept):])
	g.Nodes = kept
	for i, n := range g.Nodes {
		n.ID = i
	}
	return views, reshapes
}
