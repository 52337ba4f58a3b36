package passes

import (
	"strconv"
	"strings"

	"github.com/irtool/irtool/ir"
)

// The clean-up passes: dead-code elimination, common-subexpression
// elimination and no-op elimination.

// viewRoot follows pure views (reshape, view, permute, transpose) to the
// node whose storage they alias. Writers (set_rows, cpy) stop the walk:
// reading through a writer's result is ordered after the write.
func viewRoot(n *ir.Node) *ir.Node {
	for {
		info, ok := n.Info()
		if !ok || info.Kind != ir.KindView || info.SideEffect || info.AliasArg >= len(n.Args) {
			return n
		}
		n = n.Args[info.AliasArg]
	}
}

// readsState reports whether n reads persistent state directly (not through
// a write's result). Such a read is ordered only by its position in the
// graph, so it must not be merged with another read or moved.
func readsState(n *ir.Node) bool {
	for _, a := range n.Args {
		if viewRoot(a).Op == ir.OpState {
			return true
		}
	}
	return false
}

// aliasesState reports whether n's storage is persistent state.
func aliasesState(n *ir.Node) bool { return viewRoot(n).Op == ir.OpState }

// contiguous reports whether n's elements are densely packed in ggml order
// for every binding of the symbols. It is conservative: false means
// "cannot tell".
func contiguous(n *ir.Node) bool {
	info, ok := n.Info()
	if !ok {
		return false
	}
	switch {
	case info.Kind != ir.KindView:
		return true // leaves and computed results are dense buffers
	case n.Op == ir.OpReshape:
		return true // only contiguous tensors can be reshaped
	case n.Op == ir.OpView:
		nb, _ := n.Attrs.Ints(ir.AttrNB)
		return len(nb) == ir.MaxDims && denseStrides(n.Type, nb)
	case n.Op == ir.OpPermute:
		ax, _ := n.Attrs.Ints(ir.AttrAxes)
		return isIdentityAxes(ax) && contiguous(n.Args[0])
	case info.SideEffect && info.AliasArg < len(n.Args):
		return contiguous(n.Args[info.AliasArg])
	}
	return false
}

// denseStrides reports whether nb are the dense strides of t (dims of size
// 1 may have any stride, as ggml_is_contiguous allows).
func denseStrides(t ir.Type, nb []int64) bool {
	if t.DType.Quantized() {
		return false
	}
	want := t.DType.TypeSize()
	for i, d := range t.Shape {
		if d.IsConst() && d.Val == 1 {
			continue
		}
		if want < 0 || nb[i] != want {
			return false
		}
		if !d.IsConst() {
			want = -1 // later dims of size > 1 would need a symbolic stride
			continue
		}
		want *= d.Val
	}
	return true
}

func isIdentityAxes(ax []int64) bool {
	if len(ax) != ir.MaxDims {
		return false
	}
	for i, a := range ax {
		if a != int64(i) {
			return false
		}
	}
	return true
}

func dcePass() Pass {
	return Pass{Name: "dce", Doc: "dead-code elimination: drop nodes no output or state write depends on",
		Run: func(g *ir.Graph, c *Context) (bool, error) {
			n := g.Compact()
			c.Count("removed", n)
			return n > 0, nil
		}}
}

// cseKey is the structural hash of a node: op, type, attributes, operands
// (already canonical) and, for leaves, what identifies their data.
func cseKey(n *ir.Node, id map[*ir.Node]int) (string, bool) {
	info, ok := n.Info()
	if !ok || info.SideEffect || readsState(n) {
		return "", false
	}
	var b strings.Builder
	b.WriteString(string(n.Op))
	b.WriteByte('|')
	b.WriteString(n.Type.String())
	b.WriteByte('|')
	b.WriteString(n.Attrs.String())
	b.WriteByte('|')
	args := make([]int, len(n.Args))
	for i, a := range n.Args {
		args[i] = id[a]
	}
	if info.Commutative && len(args) >= 2 && n.Args[0].Type.Equal(n.Args[1].Type) && args[1] < args[0] {
		args[0], args[1] = args[1], args[0]
	}
	for _, a := range args {
		b.WriteString(strconv.Itoa(a))
		b.WriteByte(',')
	}
	if info.Kind == ir.KindLeaf {
		b.WriteString("|" + strconv.Quote(n.Name))
		if n.Op == ir.OpConst {
			b.WriteString("|" + string(n.Data))
		}
	}
	return b.String(), true
}

func csePass() Pass {
	return Pass{Name: "cse", Doc: "common-subexpression elimination by structural hashing (op, type, attributes, operands; leaves by name or data); shares the RoPE cache across layers",
		Run: func(g *ir.Graph, c *Context) (bool, error) {
			seen := map[string]*ir.Node{}
			id := make(map[*ir.Node]int, len(g.Nodes))
			repl := map[*ir.Node]*ir.Node{}
			for i, n := range g.Nodes {
				for j, a := range n.Args {
					if r, ok := repl[a]; ok {
						n.Args[j] = r
					}
				}
				id[n] = i
				key, ok := cseKey(n, id)
				if !ok {
					continue
				}
				if prev, dup := seen[key]; dup {
					repl[n] = prev
					id[n] = id[prev]
					if prev.Layer != n.Layer {
						prev.Layer = -1 // shared across layers
					}
					continue
				}
				seen[key] = n
			}
			if len(repl) == 0 {
				return false, nil
			}
			for i, o := range g.Outputs {
				if r, ok := repl[o]; ok {
					g.Outputs[i] = r
				}
			}
			kept := g.Nodes[:0]
			for _, n := range g.Nodes {
				if _, gone := repl[n]; !gone {
					kept = append(kept, n)
				}
			}
			g.Nodes = kept
			for i, n := range g.Nodes {
				n.ID = i
			}
			c.Count("merged", len(repl))
			return true, nil
		}}
}

// sameAs returns x as the replacement when the node's type equals x's.
func sameAs(x *ir.Node, n *ir.Node) *ir.Node {
	if x.Type.Equal(n.Type) {
		return x
	}
	return nil
}

// noopRules remove views and copies that do nothing.
func noopRules() []*Rule {
	permLike := OneOf(ir.OpPermute, ir.OpTransp)
	return []*Rule{
		{Name: "reshape-reshape", Doc: "reshape(reshape(x)) -> reshape(x), or x when the shapes agree",
			Pattern: Op(ir.OpReshape, Op(ir.OpReshape, Any("x"))),
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				x := m.Get("x")
				if r := sameAs(x, m.Root); r != nil {
					return r, nil
				}
				return b.Typed(ir.OpReshape, m.Root.Type, nil, x)
			}},
		{Name: "reshape-same", Doc: "reshape(x) to x's own shape -> x",
			Pattern: Op(ir.OpReshape, Any("x")),
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				return sameAs(m.Get("x"), m.Root), nil
			}},
		{Name: "permute-chain", Doc: "permute/transpose of permute/transpose -> one permute, or x when the axes cancel",
			Pattern: &Pattern{Ops: permLike.Ops, Args: []*Pattern{permLike.As("inner")}},
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				inner := m.Get("inner")
				ax := composeAxes(axesOf(inner), axesOf(m.Root))
				x := inner.Args[0]
				if isIdentityAxes(ax) {
					return sameAs(x, m.Root), nil
				}
				return b.Op(ir.OpPermute, ir.Attrs{ir.AttrAxes: ax}, x)
			}},
		{Name: "permute-identity", Doc: "permute(x){axes=[0,1,2,3]} -> x",
			Pattern: Op(ir.OpPermute, Any("x")).Where(func(n *ir.Node) bool { ax, _ := n.Attrs.Ints(ir.AttrAxes); return isIdentityAxes(ax) }),
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				return sameAs(m.Get("x"), m.Root), nil
			}},
		{Name: "view-identity", Doc: "view(x) of all of a contiguous x with its own type -> x",
			Pattern: Op(ir.OpView, Any("x")).Where(func(n *ir.Node) bool {
				off, ok := n.Attrs.Dim(ir.AttrOffset)
				return ok && off.IsConst() && off.Val == 0 && contiguous(n) && contiguous(n.Args[0])
			}),
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				return sameAs(m.Get("x"), m.Root), nil
			}},
		{Name: "cont-cont", Doc: "cont(cont(x)) -> cont(x)",
			Pattern: Op(ir.OpCont, Op(ir.OpCont, Any("x").Where(func(n *ir.Node) bool { return !aliasesState(n) }))),
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				return b.Typed(ir.OpCont, m.Root.Type, nil, m.Get("x"))
			}},
		{Name: "cont-contiguous", Doc: "cont(x) of a contiguous x of the same type that is not persistent state -> x",
			Pattern: Op(ir.OpCont, Any("x").Where(func(n *ir.Node) bool { return contiguous(n) && !aliasesState(n) })),
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				return sameAs(m.Get("x"), m.Root), nil
			}},
		{Name: "cast-same", Doc: "cast(x) to x's own dtype, x not persistent state -> x",
			Pattern: Op(ir.OpCast, Any("x").Where(func(n *ir.Node) bool { return !aliasesState(n) })),
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				return sameAs(m.Get("x"), m.Root), nil
			}},
		{Name: "scale-one", Doc: "scale(x){scale=1} -> x (x*1 is x bit for bit), x not persistent state",
			Pattern: Op(ir.OpScale, Any("x").Where(func(n *ir.Node) bool { return !aliasesState(n) })).Attr(ir.AttrScale, 1.0),
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				return sameAs(m.Get("x"), m.Root), nil
			}},
	}
}

// axesOf returns a permute's axes (transpose is [1,0,2,3]).
func axesOf(n *ir.Node) []int64 {
	if n.Op == ir.OpTransp {
		return []int64{1, 0, 2, 3}
	}
	ax, _ := n.Attrs.Ints(ir.AttrAxes)
	return ax
}

// composeAxes returns the axes of permute(permute(x, a), b): dim i of x
// goes to a[i], then to b[a[i]].
func composeAxes(a, b []int64) []int64 {
	out := make([]int64, ir.MaxDims)
	for i := range out {
		out[i] = b[a[i]]
	}
	return out
}
