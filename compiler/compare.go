package compiler

import (
	"context"
	"fmt"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/planner"
)

// An honest memory comparison puts two allocators on the same problem: the
// same graph, the same buffers (which tensors live in the arena), the same
// in-place rule and alignment. The memory stage reports two such layouts:
//
//   - the target's: the layout this target's plan uses (intermediates and
//     kernel workspaces in the arena, inputs and outputs in buffers of
//     their own, the target's in-place policy and alignment);
//   - ggml's: the layout llama.cpp's CPU backend reserves (inputs and
//     outputs in the arena too, ggml's in-place rule, 32-byte alignment),
//     where ggml-alloc's gallocr is exactly llama.cpp's compute buffer.
//
// On each it gives our plan, a replay of ggml-alloc (planner's "gallocr"
// strategy, the graph's own order, as ggml-alloc allocates) and each
// order's lower bound (the most bytes live at one step), which no
// allocator can beat on that order.

// LayoutCompare is one layout's figures.
type LayoutCompare struct {
	Layout           string `json:"layout"`
	OursBytes        int64  `json:"ours_bytes"`
	OursStrategy     string `json:"ours_strategy"`
	OursReordered    bool   `json:"ours_reordered"`
	OursLowerBound   int64  `json:"ours_lower_bound_bytes"`
	GallocrBytes     int64  `json:"gallocr_bytes"`
	GraphOrderBound  int64  `json:"graph_order_lower_bound_bytes"`
	GallocrOverBound int64  `json:"gallocr_over_bound_bytes"`
	// BudgetExhausted: the time budget cut our plan's search short
	// (planner.MemoryPlan.BudgetExhausted).
	BudgetExhausted bool `json:"budget_exhausted"`
}

// Compare is a plan's two layouts.
type Compare struct {
	Target     LayoutCompare `json:"target_layout"`
	GgmlLayout LayoutCompare `json:"ggml_layout"`
}

// compareLayouts completes the plan p of the specialised graph g (made
// with opts, the target layout) with the gallocr replay, and plans g on
// ggml's layout with the options p was made with: the strategy asked for
// (p.Requested, never the name of the strategy that won), the budget and
// the registered strategies.
func compareLayouts(ctx context.Context, g *ir.Graph, p *planner.MemoryPlan, opts planner.MemoryOptions) (Compare, error) {
	var out Compare
	tgt, err := layoutFigures(ctx, g, p, opts)
	if err != nil {
		return out, err
	}
	tgt.Layout = fmt.Sprintf("intermediates and workspaces in the arena, %s in-place rule, %d-B alignment", p.Policy, p.Align)
	out.Target = tgt

	ggmlOpts := planner.MemoryOptions{Align: planner.DefaultAlign, Strategy: p.Requested, Budget: opts.Budget,
		Strategies: opts.Strategies, Workers: opts.Workers, Deterministic: opts.Deterministic, Policy: planner.CPUPolicy(), ArenaIO: true, Reorder: opts.Reorder}
	ours, err := planner.PlanMemoryContext(ctx, g, ggmlOpts)
	if err != nil {
		return out, fmt.Errorf("ggml layout: %w", err)
	}
	ggml, err := layoutFigures(ctx, g, ours, ggmlOpts)
	if err != nil {
		return out, fmt.Errorf("ggml layout: %w", err)
	}
	ggml.Layout = "ggml's: inputs and outputs in the arena too, cpu in-place rule, 32-B alignment (llama.cpp's compute buffer)"
	out.GgmlLayout = ggml
	return out, nil
}

// layoutFigures completes ours (a plan made with opts) with a gallocr
// replay of the same problem in graph order. When ours is in graph order
// and already ran the replay (best and gallocr do), its figures are
// reused; otherwise the replay runs.
func layoutFigures(ctx context.Context, g *ir.Graph, ours *planner.MemoryPlan, opts planner.MemoryOptions) (LayoutCompare, error) {
	out := LayoutCompare{OursBytes: ours.ArenaBytes, OursStrategy: ours.Strategy, OursReordered: ours.OrderChanged, OursLowerBound: ours.LowerBound,
		BudgetExhausted: ours.BudgetExhausted}
	if ga, ok := ours.Strategies[planner.StrategyGallocr]; ok && !ours.OrderChanged {
		out.GallocrBytes, out.GraphOrderBound = ga, ours.LowerBound
	} else {
		gopts := opts
		gopts.Strategy, gopts.Reorder = planner.StrategyGallocr, false
		ga, err := planner.PlanMemoryContext(ctx, g, gopts)
		if err != nil {
			return LayoutCompare{}, fmt.Errorf("gallocr: %w", err)
		}
		out.GallocrBytes, out.GraphOrderBound = ga.ArenaBytes, ga.LowerBound
	}
	out.GallocrOverBound = out.GallocrBytes - out.GraphOrderBound
	return out, nil
}
