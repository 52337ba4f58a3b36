package planner

import (
	"fmt"

	"github.com/irtool/irtool/ir"
)

// Buffer kinds of a graph plan (BufferInfo.Kind).
const (
	// KindTensor is an intermediate: a compute node's result, possibly
	// shared in place by later nodes.
	KindTensor = "tensor"
	// KindWorkspace is a kernel's scratch space, live during its node only.
	KindWorkspace = "workspace"
	// KindInput is a graph input placed in the arena (MemoryOptions.ArenaIO).
	KindInput = "input"
	// KindOutput is a graph output placed in the arena (MemoryOptions.ArenaIO).
	KindOutput = "output"
)

// BufferInfo describes one buffer of a graph plan: what it holds and which
// nodes share it.
type BufferInfo struct {
	// Kind is KindTensor, KindWorkspace, KindInput or KindOutput.
	Kind string `json:"kind"`
	// Nodes are the IDs of the nodes whose values live in the buffer, in
	// execution order: the allocating node first, then each node that
	// took it over in place. For a workspace, the node it serves.
	Nodes []int `json:"nodes"`
}

// gevent is one allocator call of the ggml-alloc replay.
type gevent struct {
	alloc bool
	buf   int
}

// liveness is the analysis of one execution order: the planning problem,
// what each buffer holds, and the allocation and free events in exactly
// the order ggml-alloc would issue them.
type liveness struct {
	prob    *Problem
	bufs    []BufferInfo
	storage []int // node ID -> buffer index, -1 for none (views, persistent)
	events  []gevent
	inplace int
}

// analyse computes lifetimes and in-place merges for one execution order
// by running ggml-alloc's bookkeeping (ggml_gallocr_alloc_graph_impl,
// llama.cpp c392e50) symbolically:
//
//   - n_children of a tensor counts the operand slots that read it; n_views
//     of a storage root counts the view nodes aliasing it;
//   - arena inputs (ArenaIO) are allocated before the first node, in order
//     of first use, as ggml allocates its input leafs first;
//   - each node is allocated (in place over an operand the policy names,
//     when that operand is a planned non-view tensor of the same dtype and
//     shape with n_children == 1 and n_views == 0; else fresh), then its
//     workspace is allocated and freed, then each operand's n_children drops
//     and a tensor is freed when both counts reach zero; a view reaching
//     zero children releases its root's n_views;
//   - outputs are never freed.
//
// Two cases ggml leaves allocated to the end are released here instead,
// which never arises in llama graphs: a view nobody reads releases its
// root at its own step, and a planned node nobody reads is freed after its
// step.
//
// The buffer of a tensor lives over [allocating step, freeing step + 1).
func analyse(g *ir.Graph, lay []ir.Layout, order []*ir.Node, opts *MemoryOptions) (*liveness, error) {
	var an analysis // on the stack: analyse allocates only what it returns
	if err := an.init(g, lay, order, opts); err != nil {
		return nil, err
	}
	lv := an.lv
	// Inputs first, in order of first use.
	for _, x := range order {
		for _, a := range x.Args {
			if an.kind[a.ID] == ir.KindLeaf && an.inArena(a) && lv.storage[a.ID] < 0 {
				sz, err := an.size(a)
				if err != nil {
					return nil, err
				}
				lv.storage[a.ID] = an.newBuf(KindInput, a, 0, sz)
				an.owned[a.ID] = true
			}
		}
	}
	for step, x := range order {
		if err := an.allocate(step, x); err != nil {
			return nil, err
		}
		an.release(step, x)
	}
	for b := range lv.prob.Buffers {
		if lv.prob.Buffers[b].End < 0 {
			lv.prob.Buffers[b].End = len(order) // never freed
		}
	}
	return lv, nil
}

// analysis is analyse's bookkeeping: ggml-alloc's per-tensor counts and
// the liveness being built.
type analysis struct {
	lay      []ir.Layout
	opts     *MemoryOptions
	kind     []ir.Kind
	children []int // n_children
	views    []int // n_views of a storage root
	isOut    []bool
	owned    []bool // a node's buffer is allocated and not yet freed or taken over
	lv       *liveness
}

// init counts each node's kind, children and views over order.
func (an *analysis) init(g *ir.Graph, lay []ir.Layout, order []*ir.Node, opts *MemoryOptions) error {
	nn := len(g.Nodes)
	an.lay, an.opts = lay, opts
	root := an.root
	kind := make([]ir.Kind, nn)
	for _, x := range g.Nodes {
		info, ok := x.Info()
		if !ok {
			return fmt.Errorf("planner: %s: unknown op %q", x, x.Op)
		}
		kind[x.ID] = info.Kind
	}
	an.kind = kind
	children := make([]int, nn)
	views := make([]int, nn)
	for _, x := range order {
		if kind[x.ID] == ir.KindView {
			views[root(x).ID]++
		}
		for _, a := range x.Args {
			children[a.ID]++
		}
	}
	an.children, an.views = children, views
	isOut := make([]bool, nn)
	for _, o := range g.Outputs {
		isOut[root(o).ID] = true
	}
	an.isOut = isOut

	lv := &liveness{prob: &Problem{Alignment: opts.Align}, storage: make([]int, nn)}
	for i := range lv.storage {
		lv.storage[i] = -1
	}
	an.lv = lv
	an.owned = make([]bool, nn)
	return nil
}

func (an *analysis) root(x *ir.Node) *ir.Node { return an.lay[x.ID].Root }

// inArena reports whether x's value gets a buffer of the plan.
func (an *analysis) inArena(x *ir.Node) bool {
	switch an.kind[x.ID] {
	case ir.KindLeaf:
		return an.opts.ArenaIO && x.Op == ir.OpInput && an.children[x.ID] > 0
	case ir.KindView:
		return false
	}
	return an.opts.ArenaIO || !an.isOut[x.ID]
}

func (an *analysis) size(x *ir.Node) (int64, error) {
	b, err := x.Type.Bytes()
	if err != nil {
		return 0, fmt.Errorf("planner: %s (%s %q): %w", x, x.Op, x.Name, err)
	}
	return b, nil
}

// newBuf allocates a buffer of kind k for x from step start; its End stays
// -1 until it is freed.
func (an *analysis) newBuf(k string, x *ir.Node, start int, sz int64) int {
	lv := an.lv
	b := len(lv.prob.Buffers)
	lv.prob.Buffers = append(lv.prob.Buffers, Buffer{ID: b, Start: start, End: -1, Size: sz})
	lv.bufs = append(lv.bufs, BufferInfo{Kind: k, Nodes: []int{x.ID}})
	lv.events = append(lv.events, gevent{alloc: true, buf: b})
	return b
}

// free frees x's buffer after step.
func (an *analysis) free(x *ir.Node, step int) {
	if an.isOut[x.ID] {
		return // ggml never frees outputs
	}
	b := an.lv.storage[x.ID]
	an.lv.prob.Buffers[b].End = step + 1
	an.lv.events = append(an.lv.events, gevent{buf: b})
	an.owned[x.ID] = false
}

// releaseView drops one view of r and frees r when nothing reads it any more.
func (an *analysis) releaseView(r *ir.Node, step int) {
	an.views[r.ID]--
	if an.views[r.ID] == 0 && an.children[r.ID] == 0 && an.owned[r.ID] {
		an.free(r, step)
	}
}

// allocate gives x its buffer (in place or fresh) and its workspace at step.
func (an *analysis) allocate(step int, x *ir.Node) error {
	lv, kind, opts := an.lv, an.kind, an.opts
	if kind[x.ID] == ir.KindCompute && an.inArena(x) {
		sz, err := an.size(x)
		if err != nil {
			return err
		}
		if b := inPlaceTarget(x, opts.Policy, an.lay, kind, an.owned, an.isOut, an.children, an.views); b != nil {
			buf := lv.storage[b.ID]
			lv.storage[x.ID] = buf
			lv.bufs[buf].Nodes = append(lv.bufs[buf].Nodes, x.ID)
			if an.isOut[x.ID] {
				lv.bufs[buf].Kind = KindOutput
			}
			an.owned[b.ID], an.owned[x.ID] = false, true
			lv.inplace++
		} else {
			k := KindTensor
			if an.isOut[x.ID] {
				k = KindOutput
			}
			lv.storage[x.ID] = an.newBuf(k, x, step, sz)
			an.owned[x.ID] = true
		}
	}
	if kind[x.ID] != ir.KindLeaf && opts.Workspace != nil {
		if ws := opts.Workspace(x); ws > 0 {
			if ws > MaxSize {
				return fmt.Errorf("planner: %s (%s %q): workspace of %d bytes out of range", x, x.Op, x.Name, ws)
			}
			b := an.newBuf(KindWorkspace, x, step, ws)
			lv.prob.Buffers[b].End = step + 1
			lv.events = append(lv.events, gevent{buf: b})
		} else if ws < 0 {
			return fmt.Errorf("planner: %s (%s %q): negative workspace %d", x, x.Op, x.Name, ws)
		}
	}
	return nil
}

// release drops x's reads of its operands after step, freeing what nobody
// reads any more, and x itself when nobody reads it.
func (an *analysis) release(step int, x *ir.Node) {
	kind, children, views, owned := an.kind, an.children, an.views, an.owned
	for _, a := range x.Args {
		children[a.ID]--
		if children[a.ID] != 0 || views[a.ID] != 0 {
			continue
		}
		if kind[a.ID] == ir.KindView {
			an.releaseView(an.root(a), step)
		} else if owned[a.ID] {
			an.free(a, step)
		}
	}
	if children[x.ID] == 0 {
		if kind[x.ID] == ir.KindView {
			an.releaseView(an.root(x), step) // a view nobody reads
		} else if owned[x.ID] && views[x.ID] == 0 {
			an.free(x, step) // a result nobody reads
		}
	}
}

// inPlaceTarget returns the operand of x whose storage x takes over, or nil:
// the first operand the policy names that is an arena tensor owned right
// now (so neither a view nor persistent), is not an output, has x's dtype
// and shape, and has no reader left but this one (n_children == 1) and no
// live view (n_views == 0).
func inPlaceTarget(x *ir.Node, pol InPlacePolicy, lay []ir.Layout, kind []ir.Kind, owned, isOut []bool, children, views []int) *ir.Node {
	for _, i := range policyOperands(pol, x) {
		a := x.Args[i]
		if kind[a.ID] == ir.KindView || !owned[a.ID] || isOut[a.ID] {
			continue
		}
		if a.Type.DType != x.Type.DType || lay[a.ID].Ne != lay[x.ID].Ne {
			continue
		}
		if children[a.ID] == 1 && views[a.ID] == 0 {
			return a
		}
	}
	return nil
}
