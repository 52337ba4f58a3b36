package passes

import (
	"fmt"
	"slices"
	"strings"

	"github.com/irtool/irtool/ir"
)

// Pattern describes a node to match: its op, result dtype, attributes and
// operands, with a capture name and predicates. Patterns are plain data
// built with Op and Any and refined with the chaining methods:
//
//	// mul(rms_norm(x), w) where the rms_norm has no other user
//	Op(ir.OpMul, Op(ir.OpRMSNorm, Any("x")).As("norm").OneUse(), Any("w"))
//
// A pattern with operand patterns matches only nodes with exactly that many
// operands, unless Variadic is set; a nil operand pattern matches anything.
type Pattern struct {
	Ops      []ir.Op                 // the node's op is one of these (empty: any op)
	DTypes   []ir.DType              // the result dtype is one of these (empty: any)
	Attrs    ir.Attrs                // attributes the node must hold with these values
	Args     []*Pattern              // operand patterns
	AnyArity bool                    // Args == nil: any operands (set by Any and Op without operands)
	Variadic bool                    // more operands than len(Args) are allowed
	Commute  bool                    // also try operands 0 and 1 swapped when their types are equal
	Bind     string                  // capture name ("" for none)
	Single   bool                    // the node has exactly one use and is not a graph output
	Pred     []func(n *ir.Node) bool // node predicates, all must hold
}

// Op returns a pattern matching a node of op whose operands match args
// (exactly len(args) operands; with no args, any operands).
func Op(op ir.Op, args ...*Pattern) *Pattern {
	return &Pattern{Ops: []ir.Op{op}, Args: args, AnyArity: len(args) == 0}
}

// OneOf returns a pattern matching a node of any of the ops with any
// operands.
func OneOf(ops ...ir.Op) *Pattern { return &Pattern{Ops: ops, AnyArity: true} }

// Any returns a pattern matching any node and capturing it as name.
func Any(name string) *Pattern { return &Pattern{Bind: name, AnyArity: true} }

// As sets the capture name.
func (p *Pattern) As(name string) *Pattern { p.Bind = name; return p }

// OneUse requires the node to have exactly one use and not be a graph
// output: the condition for folding an intermediate into a fused op.
func (p *Pattern) OneUse() *Pattern { p.Single = true; return p }

// DType restricts the result dtype.
func (p *Pattern) DType(dts ...ir.DType) *Pattern { p.DTypes = dts; return p }

// Attr requires attribute key to equal v (compared as the text format
// prints them, so 1.0 and float64(1) are equal).
func (p *Pattern) Attr(key string, v any) *Pattern {
	if p.Attrs == nil {
		p.Attrs = ir.Attrs{}
	}
	p.Attrs[key] = v
	return p
}

// Where adds a node predicate.
func (p *Pattern) Where(f func(n *ir.Node) bool) *Pattern { p.Pred = append(p.Pred, f); return p }

// Commutative lets operands 0 and 1 match in either order when their types
// are equal (then ggml's add and mul do not depend on the order).
func (p *Pattern) Commutative() *Pattern { p.Commute = true; return p }

// AllowMore lets the node have more operands than the pattern lists.
func (p *Pattern) AllowMore() *Pattern { p.Variadic = true; return p }

// String prints the pattern as an s-expression: "mul(rms_norm(x)#1:norm, w)".
// {k=v} are required attributes, "?" marks node predicates, "#1" a node
// that must have one use, ":name" a capture and "..." further operands.
func (p *Pattern) String() string {
	if p == nil {
		return "_"
	}
	var b strings.Builder
	switch len(p.Ops) {
	case 0:
		if p.Bind != "" {
			b.WriteString(p.Bind)
		} else {
			b.WriteString("_")
		}
	case 1:
		b.WriteString(string(p.Ops[0]))
	default:
		parts := make([]string, len(p.Ops))
		for i, o := range p.Ops {
			parts[i] = string(o)
		}
		b.WriteString("(" + strings.Join(parts, "|") + ")")
	}
	if len(p.Ops) > 0 && !p.AnyArity {
		b.WriteByte('(')
		for i, a := range p.Args {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(a.String())
		}
		if p.Variadic {
			b.WriteString(", ...")
		}
		b.WriteByte(')')
	}
	if len(p.Attrs) > 0 {
		b.WriteString("{" + p.Attrs.String() + "}")
	}
	if len(p.Pred) > 0 {
		b.WriteString("?")
	}
	if p.Single {
		b.WriteString("#1")
	}
	if len(p.Ops) > 0 && p.Bind != "" {
		b.WriteString(":" + p.Bind)
	}
	return b.String()
}

// Match is the result of matching a rule: the root node and the captures.
type Match struct {
	Root *ir.Node
	caps []capture // in the order bound
	x    *graphIndex
}

// capture is one bound name.
type capture struct {
	name string
	n    *ir.Node
}

// Get returns the node captured as name (nil when the name was not bound).
func (m *Match) Get(name string) *ir.Node {
	for _, c := range m.caps {
		if c.name == name {
			return c.n
		}
	}
	return nil
}

// Uses returns how many operand slots use n (a graph output counts as one).
func (m *Match) Uses(n *ir.Node) int { return m.x.useCount(n) }

// Users returns the nodes that use n, in graph order.
func (m *Match) Users(n *ir.Node) []*ir.Node { return m.x.usersOf(n) }

// Pos returns n's position in the graph.
func (m *Match) Pos(n *ir.Node) int { return m.x.pos(n) }

// UsedAfterRoot reports whether every user of n comes after the root, so
// that a replacement placed at the root can serve them all.
func (m *Match) UsedAfterRoot(n *ir.Node) bool {
	for _, u := range m.x.usersOf(n) {
		if m.x.pos(u) <= m.x.pos(m.Root) && u != m.Root {
			return false
		}
	}
	return true
}

// match tries p against n, recording captures in m.caps. On failure the
// captures made by this call are undone.
func (m *Match) match(p *Pattern, n *ir.Node) bool {
	if p == nil {
		return true
	}
	if len(p.Ops) > 0 && !slices.Contains(p.Ops, n.Op) {
		return false
	}
	if len(p.DTypes) > 0 && !slices.Contains(p.DTypes, n.Type.DType) {
		return false
	}
	for k, v := range p.Attrs {
		w, ok := n.Attrs[k]
		if !ok || !(ir.Attrs{k: v}).Equal(ir.Attrs{k: w}) {
			return false
		}
	}
	if p.Single && (m.x.useCount(n) != 1 || m.x.isOut(n)) {
		return false
	}
	for _, f := range p.Pred {
		if !f(n) {
			return false
		}
	}
	mark := len(m.caps)
	if p.Bind != "" {
		if prev := m.Get(p.Bind); prev != nil {
			if prev != n {
				return false
			}
		} else {
			m.caps = append(m.caps, capture{p.Bind, n})
		}
	}
	if p.AnyArity {
		return true
	}
	if len(n.Args) < len(p.Args) || len(n.Args) > len(p.Args) && !p.Variadic {
		m.caps = m.caps[:mark]
		return false
	}
	if m.matchArgs(p, n, false) {
		return true
	}
	if p.Commute && len(p.Args) >= 2 && n.Args[0].Type.Equal(n.Args[1].Type) && m.matchArgs(p, n, true) {
		return true
	}
	m.caps = m.caps[:mark]
	return false
}

// matchArgs matches p's operand patterns against n's operands, the first
// two swapped when swap is set; on failure it undoes its captures.
func (m *Match) matchArgs(p *Pattern, n *ir.Node, swap bool) bool {
	mark := len(m.caps)
	for i, ap := range p.Args {
		j := i
		if swap && i < 2 {
			j = 1 - i
		}
		if !m.match(ap, n.Args[j]) {
			m.caps = m.caps[:mark]
			return false
		}
	}
	return true
}

// Rule is a declarative rewrite: when Pattern matches a node (the root) and
// Cond holds, Build makes the replacement of the root. Build may return an
// existing node (the rewrite then only forwards uses), a new node made with
// the Builder, or nil to decline.
type Rule struct {
	Name    string
	Doc     string
	Pattern *Pattern
	Cond    func(m *Match) bool
	Build   func(b *Builder, m *Match) (*ir.Node, error)
}

// Builder makes the nodes of a replacement. They are placed immediately
// before the root, inherit its layer and name unless told otherwise, and
// are checked against the op registry as they are made.
type Builder struct {
	g       *ir.Graph
	root    *ir.Node
	x       *graphIndex
	created []*ir.Node
	extra   [][2]*ir.Node // additional (old, new) replacements
	// Name and Layer label the nodes made next (default: the root's).
	Name  string
	Layer int
}

func newBuilder(g *ir.Graph, root *ir.Node, x *graphIndex) *Builder {
	return &Builder{g: g, root: root, x: x, Name: root.Name, Layer: root.Layer}
}

// Graph returns the graph being rewritten (read only).
func (b *Builder) Graph() *ir.Graph { return b.g }

// Op makes a node whose type the registry infers.
func (b *Builder) Op(op ir.Op, attrs ir.Attrs, args ...*ir.Node) (*ir.Node, error) {
	info, ok := b.g.Lookup(op)
	if !ok {
		return nil, fmt.Errorf("unknown op %q", op)
	}
	if info.Infer == nil {
		return nil, fmt.Errorf("op %q needs a declared type (use Typed)", op)
	}
	n := &ir.Node{Op: op, Args: args, Attrs: attrs, Name: b.Name, Layer: b.Layer}
	if err := b.g.Bind(n); err != nil {
		return nil, err
	}
	if len(args) < info.MinArgs || len(args) > max(info.MaxArgs, info.MinArgs) {
		return nil, fmt.Errorf("%s takes %d to %d operands, got %d", op, info.MinArgs, max(info.MaxArgs, info.MinArgs), len(args))
	}
	for i, a := range args {
		if a == nil {
			return nil, fmt.Errorf("%s: operand %d is nil", op, i)
		}
	}
	t, err := info.Infer(n)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	n.Type = t
	return b.add(n)
}

// Typed makes a node with a declared type (reshape, view, cont, const...).
func (b *Builder) Typed(op ir.Op, t ir.Type, attrs ir.Attrs, args ...*ir.Node) (*ir.Node, error) {
	return b.add(&ir.Node{Op: op, Args: args, Attrs: attrs, Type: t, Name: b.Name, Layer: b.Layer})
}

// Const makes a const leaf holding data.
func (b *Builder) Const(t ir.Type, data []byte) (*ir.Node, error) {
	return b.add(&ir.Node{Op: ir.OpConst, Type: t, Data: data, Name: b.Name, Layer: b.Layer})
}

func (b *Builder) add(n *ir.Node) (*ir.Node, error) {
	if err := b.g.Bind(n); err != nil {
		return nil, err
	}
	if err := ir.CheckNode(n); err != nil {
		return nil, err
	}
	for i, a := range n.Args {
		if a == b.root {
			return nil, fmt.Errorf("%s: operand %d is the node being replaced", n.Op, i)
		}
		if slices.Contains(b.created, a) {
			continue
		}
		p, ok := b.x.at(a)
		if !ok {
			return nil, fmt.Errorf("%s: operand %d (%s %q) is not a node of the graph", n.Op, i, a.Op, a.Name)
		}
		if p > b.x.pos(b.root) {
			return nil, fmt.Errorf("%s: operand %d (%s %q) comes after the node being replaced", n.Op, i, a.Op, a.Name)
		}
	}
	b.created = append(b.created, n)
	return n, nil
}

// Replace also replaces every use of old (a node of the graph other than
// the root, all of whose users come after the root) by new, which must have
// old's type. A fused op with several results uses it for the extra ones.
func (b *Builder) Replace(old, new *ir.Node) error {
	if !old.Type.Equal(new.Type) {
		return fmt.Errorf("replacing %s %q: type %s differs from %s", old.Op, old.Name, new.Type, old.Type)
	}
	b.extra = append(b.extra, [2]*ir.Node{old, new})
	return nil
}
