package eval

import (
	"fmt"
	"math"
	"strings"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/sysmem"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// WeightSource supplies the bytes of a weight by its GGUF tensor name.
type WeightSource interface {
	TensorData(name string) ([]byte, error)
}

// ExecOptions configure an Executor.
type ExecOptions struct {
	// Arena, when set, places every intermediate buffer at Offsets[node id]
	// inside one byte slice of ArenaSize bytes (planned execution). Nodes
	// missing from Offsets get their own buffer.
	// Graph inputs listed in Offsets live in the arena too (a plan made
	// with planner.MemoryOptions.ArenaIO, ggml's layout).
	Offsets   map[int]int64
	ArenaSize int64
	// Order, when set, is the execution order as node IDs (a memory plan's
	// order, planner.MemoryPlan.OrderIDs): every non-leaf node exactly once,
	// each after its operands; leaves may appear and are skipped. Nil runs
	// the graph's own order.
	Order []int
	// Kernels selects numeric options of the kernels.
	Kernels kernels.Options
	// CheckFinite scans every computed f32/f16 value after its kernel and
	// fails with a *NonFiniteError naming the first node whose output holds
	// NaN or an infinity (irtool run --check-numerics). It costs a pass over
	// every activation.
	CheckFinite bool
	// KernelSet is the kernel table to run with (nil: DefaultKernels).
	KernelSet *KernelSet
}

// NonFiniteError names the first node whose output is not finite, found by
// a run with ExecOptions.CheckFinite.
type NonFiniteError struct {
	Node  *ir.Node
	Index int64   // the first bad element, in row-major order of the value
	Value float32 // NaN or ±Inf
	// Inputs lists the operands, each with whether it is finite, so the
	// message says whether the op made the value or passed it on.
	Inputs []string
}

// Error names the node, its op and the first bad value.
func (e *NonFiniteError) Error() string {
	n := e.Node
	msg := fmt.Sprintf("eval: %s (%s %q", n, n.Op, n.Name)
	if n.Layer >= 0 {
		msg += fmt.Sprintf(", layer %d", n.Layer)
	}
	msg += fmt.Sprintf(") is the first op whose output is not finite: element %d is %v", e.Index, e.Value)
	if len(e.Inputs) > 0 {
		msg += " (operands: " + strings.Join(e.Inputs, ", ") + ")"
	}
	return msg
}

// nonFinite returns the index and value of the first NaN or infinity of t,
// or -1 when every value is finite or t is not a float tensor.
func nonFinite(t kernels.Tensor) (int64, float32) {
	if t.Type != gguf.TypeF32 && t.Type != gguf.TypeF16 {
		return -1, 0
	}
	v, err := kernels.ToF32(t)
	if err != nil {
		return -1, 0
	}
	for i, x := range v {
		if x-x != 0 {
			return int64(i), x
		}
	}
	return -1, 0
}

// checkFinite is CheckFinite's test of node n after its kernel ran.
func (e *Executor) checkFinite(n *ir.Node) error {
	t, err := e.Tensor(n)
	if err != nil {
		return nil
	}
	i, x := nonFinite(t)
	if i < 0 {
		return nil
	}
	ne := &NonFiniteError{Node: n, Index: i, Value: x}
	for _, a := range n.Args {
		desc := fmt.Sprintf("%s %s %q", a, a.Op, a.Name)
		if at, err := e.Tensor(a); err == nil {
			if j, _ := nonFinite(at); j >= 0 {
				desc += " not finite"
			} else {
				desc += " finite"
			}
		}
		ne.Inputs = append(ne.Inputs, desc)
	}
	return ne
}

// Executor runs one static graph.
type Executor struct {
	g       *ir.Graph
	layouts []ir.Layout
	bufs    [][]byte // storage per root node id
	opts    ExecOptions
	arena   []byte
	inputs  map[string]*ir.Node
	state   map[string]*ir.Node
	order   []*ir.Node // execution order (opts.Order), nil for g.Nodes
}

// NewExecutor prepares a static graph: it resolves every node's storage.
// Weights come from w; state leaves must be bound with BindState and inputs
// set with SetInput before Run.
func NewExecutor(g *ir.Graph, w WeightSource, opts ExecOptions) (*Executor, error) {
	if !g.IsStatic() {
		return nil, fmt.Errorf("eval: graph %q is not static (symbols %v); specialise it first", g.Name, g.Symbols())
	}
	layouts, err := ir.Layouts(g)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	e := &Executor{g: g, layouts: layouts, bufs: make([][]byte, len(g.Nodes)), opts: opts,
		inputs: map[string]*ir.Node{}, state: map[string]*ir.Node{}}
	if err := checkMemory(g, layouts, opts); err != nil {
		return nil, err
	}
	if opts.Offsets != nil {
		e.arena = make([]byte, opts.ArenaSize)
	}
	if opts.Order != nil {
		if e.order, err = execOrder(g, opts.Order); err != nil {
			return nil, err
		}
	}
	for _, n := range g.Nodes {
		if layouts[n.ID].Root != n {
			continue
		}
		size, err := n.Type.Bytes()
		if err != nil {
			return nil, fmt.Errorf("eval: %s (%s %q): %w", n, n.Op, n.Name, err)
		}
		switch n.Op {
		case ir.OpWeight:
			if w == nil {
				return nil, fmt.Errorf("eval: weight %q: no weight source", n.Name)
			}
			data, err := w.TensorData(n.Name)
			if err != nil {
				return nil, fmt.Errorf("eval: weight %q: %w", n.Name, err)
			}
			if int64(len(data)) < size {
				return nil, fmt.Errorf("eval: weight %q holds %d bytes, type %s needs %d", n.Name, len(data), n.Type, size)
			}
			e.bufs[n.ID] = data[:size]
		case ir.OpConst:
			e.bufs[n.ID] = n.Data
		case ir.OpState:
			e.state[n.Name] = n
		case ir.OpInput:
			e.inputs[n.Name] = n
			if e.bufs[n.ID], err = e.storage(n, size); err != nil {
				return nil, err
			}
		default:
			if e.bufs[n.ID], err = e.storage(n, size); err != nil {
				return nil, err
			}
		}
	}
	return e, nil
}

// storage returns n's planned slice of the arena, or a buffer of its own
// when n has no planned offset.
func (e *Executor) storage(n *ir.Node, size int64) ([]byte, error) {
	off, ok := e.opts.Offsets[n.ID]
	if !ok || e.arena == nil {
		return make([]byte, size), nil
	}
	if off < 0 || off+size > int64(len(e.arena)) {
		return nil, fmt.Errorf("eval: %s (%q): planned bytes [%d,%d) outside the %d-byte arena", n, n.Name, off, off+size, len(e.arena))
	}
	return e.arena[off : off+size : off+size], nil
}

// execOrder checks an execution order given as node IDs and returns it as
// nodes: every non-leaf node once, each after its non-leaf operands.
func execOrder(g *ir.Graph, ids []int) ([]*ir.Node, error) {
	pos := make([]int, len(g.Nodes))
	for i := range pos {
		pos[i] = -1
	}
	out := make([]*ir.Node, 0, len(ids))
	for _, id := range ids {
		if id < 0 || id >= len(g.Nodes) {
			return nil, fmt.Errorf("eval: order names node %%%d, graph %q has %d nodes", id, g.Name, len(g.Nodes))
		}
		n := g.Nodes[id]
		if n.IsLeaf() {
			continue
		}
		if pos[id] >= 0 {
			return nil, fmt.Errorf("eval: order lists %s twice", n)
		}
		for _, a := range n.Args {
			if !a.IsLeaf() && pos[a.ID] < 0 {
				return nil, fmt.Errorf("eval: order runs %s (%s %q) before its operand %s", n, n.Op, n.Name, a)
			}
		}
		pos[id] = len(out)
		out = append(out, n)
	}
	for _, n := range g.Nodes {
		if !n.IsLeaf() && pos[n.ID] < 0 {
			return nil, fmt.Errorf("eval: order misses %s (%s %q)", n, n.Op, n.Name)
		}
	}
	return out, nil
}

// Graph returns the graph the executor runs.
func (e *Executor) Graph() *ir.Graph { return e.g }

// BindState gives a state leaf (a KV cache) its persistent storage.
func (e *Executor) BindState(name string, data []byte) error {
	n, ok := e.state[name]
	if !ok {
		return fmt.Errorf("eval: graph %q has no state %q", e.g.Name, name)
	}
	size, _ := n.Type.Bytes()
	if int64(len(data)) != size {
		return fmt.Errorf("eval: state %q needs %d bytes, got %d", name, size, len(data))
	}
	e.bufs[n.ID] = data
	return nil
}

// SetInput copies raw little-endian bytes into an input.
func (e *Executor) SetInput(name string, data []byte) error {
	n, ok := e.inputs[name]
	if !ok {
		return fmt.Errorf("eval: graph %q has no input %q", e.g.Name, name)
	}
	if len(data) != len(e.bufs[n.ID]) {
		return fmt.Errorf("eval: input %q (%s) needs %d bytes, got %d", name, n.Type, len(e.bufs[n.ID]), len(data))
	}
	copy(e.bufs[n.ID], data)
	return nil
}

// HasInput reports whether the graph reads the named input.
func (e *Executor) HasInput(name string) bool { _, ok := e.inputs[name]; return ok }

// Tensor returns the kernel view of a node's value (valid after Run).
func (e *Executor) Tensor(n *ir.Node) (kernels.Tensor, error) {
	l := e.layouts[n.ID]
	buf := e.bufs[l.Root.ID]
	if buf == nil {
		return kernels.Tensor{}, fmt.Errorf("eval: %s (%s %q) has no storage (unbound state?)", n, n.Op, n.Name)
	}
	if l.Offset > int64(len(buf)) {
		return kernels.Tensor{}, fmt.Errorf("eval: %s (%q): offset %d outside its %d-byte buffer", n, n.Name, l.Offset, len(buf))
	}
	return kernels.Tensor{Type: gguf.GGMLType(n.Type.DType), Ne: l.Ne, Nb: l.Nb, Data: buf[l.Offset:]}, nil
}

// Run executes every node in order (ExecOptions.Order, or the graph's).
func (e *Executor) Run() error {
	nodes := e.g.Nodes
	if e.order != nil {
		nodes = e.order
	}
	for _, n := range nodes {
		info, _ := n.Info()
		if info == nil || info.Kind == ir.KindLeaf {
			continue
		}
		if info.Kind == ir.KindView && !info.SideEffect {
			continue // pure views compute nothing
		}
		if err := e.runNode(n); err != nil {
			return fmt.Errorf("eval: %s (%s %q): %w", n, n.Op, n.Name, err)
		}
		if e.opts.CheckFinite && info.Kind != ir.KindView {
			if err := e.checkFinite(n); err != nil {
				return err
			}
		}
	}
	return nil
}

// Output returns the f32 values of output i (contiguous copy).
func (e *Executor) Output(i int) ([]float32, [4]int64, error) {
	if i < 0 || i >= len(e.g.Outputs) {
		return nil, [4]int64{}, fmt.Errorf("eval: graph %q has %d outputs", e.g.Name, len(e.g.Outputs))
	}
	t, err := e.Tensor(e.g.Outputs[i])
	if err != nil {
		return nil, t.Ne, err
	}
	v, err := kernels.ToF32(t)
	return v, t.Ne, err
}

func (e *Executor) runNode(n *ir.Node) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("kernel panic: %v", r)
		}
	}()
	dst, err := e.Tensor(n)
	if err != nil {
		return err
	}
	args := make([]kernels.Tensor, len(n.Args))
	for i, a := range n.Args {
		if args[i], err = e.Tensor(a); err != nil {
			return err
		}
	}
	ks := e.opts.KernelSet
	if ks == nil {
		ks = defaultKernels
	}
	k, ok := ks.Lookup(n.Op)
	if !ok {
		return fmt.Errorf("no CPU kernel for op %q", n.Op)
	}
	return k(n, dst, args, e.opts.Kernels)
}

// checkMemory refuses a graph whose arena and own buffers together need
// more bytes than the machine has, naming the largest buffer, before any
// is allocated (a failed huge allocation is fatal to the process).
func checkMemory(g *ir.Graph, layouts []ir.Layout, opts ExecOptions) error {
	var need int64
	var big *ir.Node
	var bigSize int64
	if opts.Offsets != nil {
		need = opts.ArenaSize
	}
	for _, n := range g.Nodes {
		if layouts[n.ID].Root != n {
			continue
		}
		switch n.Op {
		case ir.OpWeight, ir.OpConst, ir.OpState:
			continue
		}
		size, err := n.Type.Bytes()
		if err != nil {
			return fmt.Errorf("eval: %s (%s %q): %w", n, n.Op, n.Name, err)
		}
		if size > bigSize {
			big, bigSize = n, size
		}
		if _, planned := opts.Offsets[n.ID]; planned && opts.Offsets != nil {
			continue
		}
		if need += size; need < 0 {
			need = math.MaxInt64
		}
	}
	what := fmt.Sprintf("eval: graph %q (arena %d bytes", g.Name, max(opts.ArenaSize, 0))
	if big != nil {
		what += fmt.Sprintf(", largest buffer %s %s %q of %d bytes", big, big.Op, big.Name, bigSize)
	}
	return sysmem.Check(what+")", need)
}
