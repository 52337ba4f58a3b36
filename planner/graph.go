package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/irtool/irtool/ir"
)

// StrategyGallocr is the graph-only strategy that replays ggml-alloc: the
// allocation and free calls ggml_gallocr_alloc_graph_impl would make for
// the execution order, through Gallocr. It needs the graph's event order,
// so Solve (which sees only intervals) does not offer it.
const StrategyGallocr = "gallocr"

// DefaultAlign is the arena alignment used when MemoryOptions.Align is 0:
// ggml's TENSOR_ALIGNMENT, the alignment of its CPU buffers.
const DefaultAlign = 32

// GraphStrategies returns the built-in strategy names PlanMemory accepts,
// "best" last. PlanMemory also takes the strategies registered in
// MemoryOptions.Strategies (StrategySet.GraphNames lists both) and the
// search phases' names (StrategyOf), so whatever a plan reports as its
// Strategy plans again.
func GraphStrategies() []string {
	return append(slices.Clone(cheapStrategies), StrategyGreedyArea, StrategyExact, StrategyGallocr, StrategySearch, StrategyBest)
}

// MemoryOptions configure PlanMemory.
type MemoryOptions struct {
	// Align is the arena alignment in bytes: sizes round up to it and
	// offsets are multiples of it (0 means DefaultAlign; 32 is ggml's CPU
	// alignment, 64 the NPU default).
	Align int64
	// Strategy names the offset strategy: one of GraphStrategies, one
	// registered in Strategies, or what a MemoryPlan reported as its
	// Strategy; "" means best.
	Strategy string
	// Strategies holds the registered strategies Strategy may name (nil:
	// DefaultStrategies); irtool.Context.Strategies is one.
	Strategies *StrategySet
	// Budget bounds the search of "search" and "best" (0: DefaultBudget).
	// Both stop as soon as they reach the lower bound.
	Budget time.Duration
	// Workers bounds the concurrent searches of the exact search (0:
	// GOMAXPROCS; Options.Workers).
	Workers int
	// Deterministic bounds the search by work, Budget being only a safety
	// cap (Options.Deterministic): the plan depends neither on the
	// machine's speed nor on Workers.
	Deterministic bool
	// Policy names the operands a node may overwrite in place; the zero
	// value allows none (CPUPolicy, NPUPolicy).
	Policy InPlacePolicy
	// Workspace, when set, gives the scratch bytes a node's kernel needs;
	// each workspace is planned as a tensor live during its node only.
	Workspace func(*ir.Node) int64
	// Reorder lets the planner pick another topological execution order
	// when it lowers the lower bound (see MemoryPlan.Order).
	Reorder bool
	// ArenaIO places graph inputs and outputs in the arena as ggml-alloc
	// does (inputs allocated before the first node and freed after their
	// last reader, outputs never freed). By default they are persistent
	// buffers of their own (the runtime fills inputs before the step and
	// reads outputs after it) and the arena holds intermediates and
	// workspaces only. With ArenaIO and CPUPolicy, "gallocr" gives the
	// compute buffer llama.cpp reserves for the same graph.
	ArenaIO bool
}

// WorkspaceSlot is where a node's kernel workspace lives in the arena.
type WorkspaceSlot struct {
	Buffer int   `json:"buffer"` // index into Problem.Buffers
	Offset int64 `json:"offset"`
	Bytes  int64 `json:"bytes"`
}

// MemoryPlan is the memory plan of one static graph: an execution order and
// an arena offset for every node that owns planned storage.
//
// Planned storage: every compute node (not a leaf, not a view) whose value
// is not a graph output, plus, with ArenaIO, the graph inputs that are read
// and the outputs. Views (reshape, view, permute, transpose, and the
// results of cpy and set_rows, which alias the tensor they write) live in
// their root's storage; weights, KV caches (state) and constants are never
// planned. A node that runs in place shares the buffer of the operand it
// overwrites, so both IDs map to the same offset.
type MemoryPlan struct {
	// Graph is the graph the plan is for.
	Graph *ir.Graph
	// Order is the execution order used: every non-leaf node of Graph once,
	// operands first. OrderChanged reports whether it differs from Graph's.
	Order        []*ir.Node
	OrderChanged bool
	// Offsets maps node ID to arena byte offset for every node with
	// planned storage (workspaces are in Workspaces).
	Offsets map[int]int64
	// ArenaBytes is the arena size; LowerBound the most bytes live at one
	// step (no plan of this order does better); NaiveBytes the arena
	// without reuse (Σ aligned buffer sizes).
	ArenaBytes, LowerBound, NaiveBytes int64
	// Strategy is the strategy whose arena was kept; Requested the one
	// asked for ("best" runs all of them).
	Strategy, Requested string
	// Strategies is the arena of each strategy that ran.
	Strategies map[string]int64
	// Problem is the planning instance (buffer i live over steps
	// [Start, End) of Order) and Assignment its solution.
	Problem    *Problem
	Assignment *Assignment
	// BufferNode maps buffer index to node ID: the node that allocated it,
	// or for a workspace the node it serves. Buffers says more.
	BufferNode []int
	Buffers    []BufferInfo
	// Workspaces maps node ID to its kernel workspace.
	Workspaces map[int]WorkspaceSlot
	// InPlace counts nodes that took over an operand's storage.
	InPlace int
	// Align, Policy and ArenaIO echo the options used.
	Align   int64
	Policy  string
	ArenaIO bool
	// MS is the planning wall time in milliseconds.
	MS float64
	// BudgetExhausted reports that the time budget cut the search short
	// (Report.BudgetExhausted).
	BudgetExhausted bool

	storage []int // node ID -> buffer index, -1 for none
}

// BufferOf returns the index of the buffer holding a node's value (views
// report their root's), or false when the node has no planned storage.
func (p *MemoryPlan) BufferOf(id int) (int, bool) {
	if id < 0 || id >= len(p.storage) {
		return 0, false
	}
	if b := p.storage[id]; b >= 0 {
		return b, true
	}
	return 0, false
}

// OrderIDs returns Order as node IDs (eval.ExecOptions.Order).
func (p *MemoryPlan) OrderIDs() []int {
	out := make([]int, len(p.Order))
	for i, n := range p.Order {
		out[i] = n.ID
	}
	return out
}

// Ratio is ArenaBytes / LowerBound.
func (p *MemoryPlan) Ratio() float64 { return Ratio(p.ArenaBytes, p.LowerBound) }

// PlanMemory plans a static graph (see MemoryPlan); it is PlanMemoryContext
// without cancellation.
func PlanMemory(g *ir.Graph, opts MemoryOptions) (*MemoryPlan, error) {
	return PlanMemoryContext(context.Background(), g, opts)
}

// PlanMemoryContext computes lifetimes over the execution order (with the
// in-place merges the policy allows), assigns arena offsets with the
// strategy, and checks the result with ValidateMemoryPlan before returning
// it. With Reorder it also tries a memory-aware topological order and
// keeps whichever order has the lower bound (the graph's own on ties).
func PlanMemoryContext(ctx context.Context, g *ir.Graph, opts MemoryOptions) (plan *MemoryPlan, err error) {
	start := time.Now()
	if g == nil {
		return nil, fmt.Errorf("planner: nil graph")
	}
	defer func() {
		if r := recover(); r != nil {
			plan, err = nil, fmt.Errorf("planner: graph %q: internal error: %v", g.Name, r)
		}
	}()
	if opts.Align == 0 {
		opts.Align = DefaultAlign
	}
	if opts.Align < 1 || opts.Align > 1<<30 {
		return nil, fmt.Errorf("planner: graph %q: alignment %d out of range [1, 2^30]", g.Name, opts.Align)
	}
	if opts.Strategy == "" {
		opts.Strategy = StrategyBest
	}
	if opts.Strategies == nil {
		opts.Strategies = defaultStrategies
	}
	requested := opts.Strategy
	opts.Strategy = StrategyOf(opts.Strategy)
	if !opts.Strategies.HasGraph(opts.Strategy) {
		return nil, fmt.Errorf("planner: graph %q: unknown strategy %q (have %s)", g.Name, requested, strings.Join(opts.Strategies.GraphNames(), ", "))
	}
	if !g.IsStatic() {
		return nil, fmt.Errorf("planner: graph %q is not static (symbols %v); specialise it first", g.Name, g.Symbols())
	}
	if err := ir.Verify(g); err != nil {
		return nil, fmt.Errorf("planner: %w", err)
	}
	lay, err := ir.Layouts(g)
	if err != nil {
		return nil, fmt.Errorf("planner: graph %q: %w", g.Name, err)
	}
	orders := [][]*ir.Node{graphOrder(g)}
	if opts.Reorder {
		og, err := newOrderGraph(g, lay)
		if err != nil {
			return nil, err
		}
		orders = append(orders, og.dfsOrder(), og.greedyOrder())
	}
	var (
		order []*ir.Node
		lv    *liveness
		lb    int64
	)
	for _, o := range orders {
		l, err := analyse(g, lay, o, &opts)
		if err != nil {
			return nil, fmt.Errorf("planner: graph %q: %w", g.Name, err)
		}
		if b := LowerBound(l.prob); lv == nil || b < lb {
			order, lv, lb = o, l, b
		}
	}
	plan = &MemoryPlan{
		Graph: g, Order: order, OrderChanged: !slices.Equal(order, orders[0]),
		Problem: lv.prob, Buffers: lv.bufs, InPlace: lv.inplace, LowerBound: lb,
		NaiveBytes: NaiveSize(lv.prob), Requested: requested, Strategies: map[string]int64{},
		Align: opts.Align, Policy: opts.Policy.Name, ArenaIO: opts.ArenaIO, storage: lv.storage,
	}
	if err := plan.solve(ctx, lv, &opts); err != nil {
		return nil, fmt.Errorf("planner: graph %q: %w", g.Name, err)
	}
	plan.fill(lay)
	if err := ValidateMemoryPlan(plan); err != nil {
		return nil, fmt.Errorf("planner: graph %q: strategy %q: %w", g.Name, plan.Strategy, err)
	}
	plan.MS = msSince(start)
	return plan, nil
}

// solve runs the strategy (and, for best, the gallocr replay as well).
func (p *MemoryPlan) solve(ctx context.Context, lv *liveness, opts *MemoryOptions) error {
	var ga *Assignment
	var gerr error
	if opts.Strategy == StrategyGallocr || opts.Strategy == StrategyBest {
		ga, gerr = replayGallocr(lv, opts.Align)
		if gerr == nil {
			p.Strategies[StrategyGallocr] = ga.Arena
		}
	}
	if opts.Strategy == StrategyGallocr {
		if gerr != nil {
			return gerr
		}
		if err := Validate(lv.prob, ga); err != nil {
			return fmt.Errorf("gallocr replay: %w", err)
		}
		p.Assignment, p.Strategy = ga, StrategyGallocr
		p.ArenaBytes = ga.Arena
		return nil
	}
	a, rep, err := opts.Strategies.Solve(ctx, lv.prob, opts.Strategy, Options{Budget: opts.Budget, Workers: opts.Workers, Deterministic: opts.Deterministic})
	if err != nil {
		return err
	}
	p.BudgetExhausted = rep.BudgetExhausted
	for k, v := range rep.Strategies {
		p.Strategies[k] = v
	}
	p.Assignment, p.Strategy = a, rep.Winner
	if ga != nil && ga.Arena < a.Arena && Validate(lv.prob, ga) == nil {
		p.Assignment, p.Strategy = ga, StrategyGallocr
	}
	p.ArenaBytes = p.Assignment.Arena
	return nil
}

// fill derives Offsets, BufferNode and Workspaces from the assignment.
func (p *MemoryPlan) fill(lay []ir.Layout) {
	p.Offsets = map[int]int64{}
	p.Workspaces = map[int]WorkspaceSlot{}
	p.BufferNode = make([]int, len(p.Buffers))
	for b, info := range p.Buffers {
		off := p.Assignment.Offsets[b]
		p.BufferNode[b] = info.Nodes[0]
		if info.Kind == KindWorkspace {
			p.Workspaces[info.Nodes[0]] = WorkspaceSlot{Buffer: b, Offset: off, Bytes: p.Problem.Buffers[b].Size}
			continue
		}
		for _, id := range info.Nodes {
			p.Offsets[id] = off
		}
	}
	// Views report their root's buffer.
	for id, l := range lay {
		if l.Root.ID != id && p.storage[l.Root.ID] >= 0 {
			p.storage[id] = p.storage[l.Root.ID]
		}
	}
}

// replayGallocr issues the analysis's allocation events through Gallocr,
// ggml's allocator; it fails only when ggml would abort (more than 256 free
// blocks).
func replayGallocr(lv *liveness, align int64) (*Assignment, error) {
	g := NewGallocr(align)
	a := &Assignment{Offsets: make([]int64, len(lv.prob.Buffers))}
	for _, e := range lv.events {
		size := lv.prob.Buffers[e.buf].Size
		if e.alloc {
			off, err := g.Alloc(size)
			if err != nil {
				return nil, err
			}
			a.Offsets[e.buf] = off
		} else if err := g.Free(a.Offsets[e.buf], size); err != nil {
			return nil, err
		}
	}
	a.Arena = g.MaxSize()
	return a, nil
}

// graphOrder is the graph's own execution order (non-leaf nodes).
func graphOrder(g *ir.Graph) []*ir.Node {
	out := make([]*ir.Node, 0, len(g.Nodes))
	for _, n := range g.Nodes {
		if !n.IsLeaf() {
			out = append(out, n)
		}
	}
	return out
}
