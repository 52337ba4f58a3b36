package ir

import (
	"fmt"
	"sort"
)

// Op names an operation. The registry (Lookup) describes each one.
type Op string

// Node is one value of the graph: a leaf (input, weight, state, constant) or
// the result of an op applied to earlier nodes.
type Node struct {
	ID    int     // dense index in Graph.Nodes; Compact renumbers
	Op    Op      // the operation
	Args  []*Node // operands, each earlier in Graph.Nodes
	Type  Type    // the result type
	Attrs Attrs   // static parameters
	Name  string  // a label (the GGUF tensor name for weights, llama.cpp's name for activations); not unique
	Layer int     // transformer layer, -1 when none; used for display only
	Data  []byte  // the raw contents of a const leaf (little endian)
	info  *OpInfo // the definition of Op the node was made with (Info)
}

// Info returns the definition of the node's op: the one it was made with
// (Graph.Add, AddTyped, Bind, Parse resolve it in the graph's OpSet), else
// the default set's.
func (n *Node) Info() (*OpInfo, bool) {
	if n.info != nil && n.info.Name == n.Op {
		return n.info, true
	}
	return Lookup(n.Op)
}

// IsLeaf reports whether the node takes no operands and holds data that
// exists before the step runs.
func (n *Node) IsLeaf() bool {
	info, ok := n.Info()
	return ok && info.Kind == KindLeaf
}

// String is "%ID".
func (n *Node) String() string { return fmt.Sprintf("%%%d", n.ID) }

// Graph is a DAG of nodes stored in execution order.
type Graph struct {
	Name    string
	Nodes   []*Node // execution order; every node's args come before it
	Outputs []*Node // the values the step returns
	Meta    map[string]string
	// OpSet resolves the op names of Add, AddTyped, Bind and Parse; nil
	// is the default set (DefaultOps). Clone and Specialize keep it.
	OpSet *OpSet
}

// New returns an empty graph whose ops are resolved in the default set.
func New(name string) *Graph { return &Graph{Name: name} }

// Lookup resolves an op name in the graph's OpSet (the default set when
// nil).
func (g *Graph) Lookup(op Op) (*OpInfo, bool) {
	if g.OpSet != nil {
		return g.OpSet.Lookup(op)
	}
	return Lookup(op)
}

// Bind gives a node made outside the graph (a rewrite's new node) the
// definition of its op in the graph's OpSet; Add, AddTyped and Parse do
// it themselves. It fails when the set does not know the op.
func (g *Graph) Bind(n *Node) error {
	info, ok := g.Lookup(n.Op)
	if !ok {
		return fmt.Errorf("ir: unknown op %q", n.Op)
	}
	n.info = info
	return nil
}

// Add appends a node applying op to args, inferring its type from the
// registry, and checks it as AddTyped does. It returns an error naming the op
// when the operands are wrong or inference fails.
func (g *Graph) Add(op Op, args []*Node, attrs Attrs) (*Node, error) {
	info, ok := g.Lookup(op)
	if !ok {
		return nil, fmt.Errorf("ir: unknown op %q", op)
	}
	n := &Node{Op: op, Args: args, Attrs: attrs, Layer: -1, info: info}
	if info.Infer == nil {
		return nil, fmt.Errorf("ir: op %q needs an explicit type (use AddTyped)", op)
	}
	// Infer indexes the operands, so arity comes first.
	if err := checkOperands(n, info); err != nil {
		return nil, fmt.Errorf("ir: %w", err)
	}
	t, err := info.Infer(n)
	if err != nil {
		return nil, fmt.Errorf("ir: %s: %w", op, err)
	}
	n.Type = t
	if err := CheckNode(n); err != nil {
		return nil, fmt.Errorf("ir: %w", err)
	}
	g.append(n)
	return n, nil
}

// AddTyped appends a node with a declared result type (leaves, reshape, view,
// cast) and checks it against the op's rules.
func (g *Graph) AddTyped(op Op, args []*Node, attrs Attrs, t Type) (*Node, error) {
	n := &Node{Op: op, Args: args, Attrs: attrs, Type: t, Layer: -1}
	if err := g.Bind(n); err != nil {
		return nil, err
	}
	if err := CheckNode(n); err != nil {
		return nil, err
	}
	g.append(n)
	return n, nil
}

func (g *Graph) append(n *Node) {
	n.ID = len(g.Nodes)
	g.Nodes = append(g.Nodes, n)
}

// Insert places n immediately before the node at position pos and renumbers.
func (g *Graph) Insert(pos int, n *Node) {
	g.Nodes = append(g.Nodes, nil)
	copy(g.Nodes[pos+1:], g.Nodes[pos:])
	g.Nodes[pos] = n
	g.renumber()
}

func (g *Graph) renumber() {
	for i, n := range g.Nodes {
		n.ID = i
	}
}

// Users returns, for each node id, the nodes that use it (in order, with
// repeats when a node uses a value twice).
func (g *Graph) Users() [][]*Node {
	g.renumber()
	users := make([][]*Node, len(g.Nodes))
	for _, n := range g.Nodes {
		for _, a := range n.Args {
			if a.ID >= 0 && a.ID < len(users) && g.Nodes[a.ID] == a {
				users[a.ID] = append(users[a.ID], n)
			}
		}
	}
	return users
}

// AddAfter adds op(args) right after node at in g's order, named name in
// at's layer; when replace is not nil, every use of replace (other than
// the new node) becomes a use of the new node.
func (g *Graph) AddAfter(at, replace *Node, op Op, args []*Node, attrs Attrs, name string) (*Node, error) {
	nn, err := g.Add(op, args, attrs)
	if err != nil {
		return nil, fmt.Errorf("%s after %s (%q): %w", op, at, at.Name, err)
	}
	nn.Name, nn.Layer = name, at.Layer
	g.Nodes = g.Nodes[:len(g.Nodes)-1]
	if replace != nil {
		g.ReplaceUses(replace, nn)
	}
	g.Insert(at.ID+1, nn)
	return nn, nil
}

// ReplaceUses makes every use of old (as an operand or an output) use new.
func (g *Graph) ReplaceUses(old, new *Node) int {
	count := 0
	for _, n := range g.Nodes {
		for i, a := range n.Args {
			if a == old && n != new {
				n.Args[i] = new
				count++
			}
		}
	}
	for i, o := range g.Outputs {
		if o == old {
			g.Outputs[i] = new
			count++
		}
	}
	return count
}

// Compact removes nodes that no output depends on, except side-effecting
// nodes (writes into persistent state, such as set_rows and cpy) and what they
// depend on, and renumbers ids densely. It returns how many were removed.
func (g *Graph) Compact() int {
	// Liveness by position (ids are positions after renumber); a node
	// reached outside g.Nodes (an invalid graph) is tracked by pointer.
	g.renumber()
	live := make([]bool, len(g.Nodes))
	var outside map[*Node]bool
	var stack []*Node
	mark := func(n *Node) {
		stack = append(stack[:0], n)
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if x.ID >= 0 && x.ID < len(live) && g.Nodes[x.ID] == x {
				if live[x.ID] {
					continue
				}
				live[x.ID] = true
			} else {
				if outside[x] {
					continue
				}
				if outside == nil {
					outside = map[*Node]bool{}
				}
				outside[x] = true
			}
			stack = append(stack, x.Args...)
		}
	}
	for _, o := range g.Outputs {
		mark(o)
	}
	// Side-effecting nodes (writes into persistent state) stay alive.
	for _, n := range g.Nodes {
		if info, ok := n.Info(); ok && info.SideEffect {
			mark(n)
		}
	}
	kept := g.Nodes[:0]
	removed := 0
	for _, n := range g.Nodes {
		if live[n.ID] { // n.ID, not the index: a node listed twice has one id
			kept = append(kept, n)
		} else {
			removed++
		}
	}
	for i := len(kept); i < len(g.Nodes); i++ {
		g.Nodes[i] = nil
	}
	g.Nodes = kept
	g.renumber()
	return removed
}

// Clone returns a deep copy of the graph (constant data is shared, since it
// is never mutated in place).
func (g *Graph) Clone() *Graph {
	out := &Graph{Name: g.Name, Nodes: make([]*Node, len(g.Nodes)), OpSet: g.OpSet}
	if g.Meta != nil {
		out.Meta = make(map[string]string, len(g.Meta))
		for k, v := range g.Meta {
			out.Meta[k] = v
		}
	}
	m := make(map[*Node]*Node, len(g.Nodes))
	for i, n := range g.Nodes {
		c := *n
		c.Attrs = n.Attrs.Clone()
		c.Args = make([]*Node, len(n.Args))
		for j, a := range n.Args {
			c.Args[j] = m[a]
		}
		m[n] = &c
		out.Nodes[i] = &c
	}
	for _, o := range g.Outputs {
		out.Outputs = append(out.Outputs, m[o])
	}
	out.renumber()
	return out
}

// Symbols returns the sorted shape symbols the graph uses.
func (g *Graph) Symbols() []string {
	set := map[string]bool{}
	for _, n := range g.Nodes {
		for _, s := range n.Type.Shape.Symbols() {
			set[s] = true
		}
		for _, v := range n.Attrs {
			if d, ok := v.(Dim); ok && d.Sym != "" {
				set[d.Sym] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Specialize returns a static copy of g with every symbol bound, verified.
func (g *Graph) Specialize(b Bindings) (*Graph, error) {
	out := g.Clone()
	for _, n := range out.Nodes {
		t, err := n.Type.Shape.Eval(b)
		if err != nil {
			return nil, fmt.Errorf("ir: specialize %s (%s %q): %w", n, n.Op, n.Name, err)
		}
		n.Type.Shape = t
		for k, v := range n.Attrs {
			if d, ok := v.(Dim); ok {
				x, err := d.Eval(b)
				if err != nil {
					return nil, fmt.Errorf("ir: specialize %s (%s %q) attribute %s: %w", n, n.Op, n.Name, k, err)
				}
				n.Attrs[k] = C(x)
			}
		}
	}
	if err := Verify(out); err != nil {
		return nil, fmt.Errorf("ir: specialize with %s: %w", b, err)
	}
	return out, nil
}

// IsStatic reports whether every shape is constant.
func (g *Graph) IsStatic() bool {
	for _, n := range g.Nodes {
		if !n.Type.Shape.IsStatic() {
			return false
		}
	}
	return true
}

// OpCounts counts nodes per op, leaves excluded.
func (g *Graph) OpCounts() map[string]int {
	m := map[string]int{}
	for _, n := range g.Nodes {
		if !n.IsLeaf() {
			m[string(n.Op)]++
		}
	}
	return m
}

// NumOps is the number of non-leaf nodes.
func (g *Graph) NumOps() int {
	c := 0
	for _, n := range g.Nodes {
		if !n.IsLeaf() {
			c++
		}
	}
	return c
}

// Find returns the first node with the given name, or nil.
func (g *Graph) Find(name string) *Node {
	for _, n := range g.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// Leaves returns the leaf nodes of the given op (input, weight, state, const).
func (g *Graph) Leaves(op Op) []*Node {
	var out []*Node
	for _, n := range g.Nodes {
		if n.Op == op {
			out = append(out, n)
		}
	}
	return out
}
