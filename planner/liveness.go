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
	// KindInput is a graph input placed in the arena (GraphOptions.ArenaIO).
	KindInput = "input"
	// KindOutput is a graph output placed in the arena (GraphOptions.ArenaIO).
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
func analyse(g *ir.Graph, lay []ir.Layout, order []*ir.Node, opts *GraphOptions) (*liveness, error) {
	nn := len(g.Nodes)
	root := func(x *ir.Node) *ir.Node { return lay[x.ID].Root }
	kind := make([]ir.Kind, nn)
	for _, x := range g.Nodes {
		info, ok := x.Info()
		if !ok {
			return nil, fmt.Errorf("planner: %s: unknown op %q", x, x.Op)
		}
		kind[x.ID] = info.Kind
	}
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
	isOut := make([]bool, nn)
	for _, o := range g.Outputs {
		isOut[root(o).ID] = true
	}
	inArena := func(x *ir.Node) bool {
		switch kind[x.ID] {
		case ir.KindLeaf:
			return opts.ArenaIO && x.Op == ir.OpInput && children[x.ID] > 0
		case ir.KindView:
			return false
		}
		return opts.ArenaIO || !isOut[x.ID]
	}
	size := func(x *ir.Node) (int64, error) {
		b, err := x.Type.Bytes()
		if err != nil {
			return 0, fmt.Errorf("planner: %s (%s %q): %w", x, x.Op, x.Name, err)
		}
		return b, nil
	}

	lv := &liveness{prob: &Problem{Alignment: opts.Align}, storage: make([]int, nn)}
	for i := range lv.storage {
		lv.storage[i] = -1
	}
	ends := []int{}
	newBuf := func(k string, x *ir.Node, start int, sz int64) int {
		b := len(lv.prob.Buffers)
		lv.prob.Buffers = append(lv.prob.Buffers, Buffer{ID: b, Start: start, End: -1, Size: sz})
		lv.bufs = append(lv.bufs, BufferInfo{Kind: k, Nodes: []int{x.ID}})
		ends = append(ends, -1)
		lv.events = append(lv.events, gevent{alloc: true, buf: b})
		return b
	}
	owned := make([]bool, nn)
	free := func(x *ir.Node, step int) {
		if isOut[x.ID] {
			return // ggml never frees outputs
		}
		b := lv.storage[x.ID]
		ends[b] = step + 1
		lv.events = append(lv.events, gevent{buf: b})
		owned[x.ID] = false
	}
	// release drops one view of r and frees r when nothing reads it any more.
	release := func(r *ir.Node, step int) {
		views[r.ID]--
		if views[r.ID] == 0 && children[r.ID] == 0 && owned[r.ID] {
			free(r, step)
		}
	}

	// Inputs first, in order of first use.
	for _, x := range order {
		for _, a := range x.Args {
			if kind[a.ID] == ir.KindLeaf && inArena(a) && lv.storage[a.ID] < 0 {
				sz, err := size(a)
				if err != nil {
					return nil, err
				}
				lv.storage[a.ID] = newBuf(KindInput, a, 0, sz)
				owned[a.ID] = true
			}
		}
	}
	for step, x := range order {
		if kind[x.ID] == ir.KindCompute && inArena(x) {
			sz, err := size(x)
			if err != nil {
				return nil, err
			}
			if b := inPlaceTarget(x, opts.Policy, lay, kind, owned, isOut, children, views); b != nil {
				buf := lv.storage[b.ID]
				lv.storage[x.ID] = buf
				lv.bufs[buf].Nodes = append(lv.bufs[buf].Nodes, x.ID)
				if isOut[x.ID] {
					lv.bufs[buf].Kind = KindOutput
				}
				owned[b.ID], owned[x.ID] = false, true
				lv.inplace++
			} else {
				k := KindTensor
				if isOut[x.ID] {
					k = KindOutput
				}
				lv.storage[x.ID] = newBuf(k, x, step, sz)
				owned[x.ID] = true
			}
		}
		if kind[x.ID] != ir.KindLeaf && opts.Workspace != nil {
			if ws := opts.Workspace(x); ws > 0 {
				if ws > MaxSize {
					return nil, fmt.Errorf("planner: %s (%s %q): workspace of %d bytes out of range", x, x.Op, x.Name, ws)
				}
				b := newBuf(KindWorkspace, x, step, ws)
				ends[b] = step + 1
				lv.events = append(lv.events, gevent{buf: b})
			} else if ws < 0 {
				return nil, fmt.Errorf("planner: %s (%s %q): negative workspace %d", x, x.Op, x.Name, ws)
			}
		}
		for _, a := range x.Args {
			children[a.ID]--
			if children[a.ID] != 0 || views[a.ID] != 0 {
				continue
			}
			if kind[a.ID] == ir.KindView {
				release(root(a), step)
			} else if owned[a.ID] {
				free(a, step)
			}
		}
		if children[x.ID] == 0 {
			if kind[x.ID] == ir.KindView {
				release(root(x), step) // a view nobody reads
			} else if owned[x.ID] && views[x.ID] == 0 {
				free(x, step) // a result nobody reads
			}
		}
	}
	for b, e := range ends {
		if e < 0 {
			e = len(order)
		}
		lv.prob.Buffers[b].End = e
	}
	return lv, nil
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
