package main

import (
	"fmt"
	"io"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/planner"
)

// An honest memory comparison puts two allocators on the same problem: the
// same graph, the same buffers (which tensors live in the arena), the same
// in-place rule and alignment. compile reports two such layouts:
//
//   - ours: the layout this target's plan uses (intermediates and kernel
//     workspaces in the arena, inputs and outputs in buffers of their own,
//     the target's in-place policy and alignment);
//   - ggml's: the layout llama.cpp's CPU backend reserves (inputs and
//     outputs in the arena too, ggml's in-place rule, 32-byte alignment),
//     where ggml-alloc's gallocr is exactly llama.cpp's compute buffer.
//
// On each it runs our planner and a replay of ggml-alloc (planner's
// "gallocr" strategy, the graph's own order, as ggml-alloc allocates) and
// gives each order's lower bound (the most bytes live at one step), which
// no allocator can beat on that order.

// layoutCompare is one layout's figures.
type layoutCompare struct {
	Layout           string `json:"layout"`
	OursBytes        int64  `json:"ours_bytes"`
	OursStrategy     string `json:"ours_strategy"`
	OursReordered    bool   `json:"ours_reordered"`
	OursLowerBound   int64  `json:"ours_lower_bound_bytes"`
	GallocrBytes     int64  `json:"gallocr_bytes"`
	GraphOrderBound  int64  `json:"graph_order_lower_bound_bytes"`
	GallocrOverBound int64  `json:"gallocr_over_bound_bytes"`
}

// memoryCompare is the "compare" object of a memory plan in compile --json.
type memoryCompare struct {
	Target     layoutCompare `json:"target_layout"`
	GgmlLayout layoutCompare `json:"ggml_layout"`
}

// compareMemory plans the specialised graph g on both layouts; p is the
// plan already made with opts (the target layout, ours).
func compareMemory(g *ir.Graph, p *planner.GraphPlan, opts planner.GraphOptions) (memoryCompare, error) {
	var out memoryCompare
	target, err := layoutFigures(g, p, opts)
	if err != nil {
		return out, err
	}
	target.Layout = fmt.Sprintf("intermediates and workspaces in the arena, %s in-place rule, %d-B alignment", p.Policy, p.Align)
	out.Target = target

	ggmlOpts := planner.GraphOptions{Align: planner.DefaultAlign, Strategy: opts.Strategy, Budget: opts.Budget,
		Policy: planner.CPUPolicy(), ArenaIO: true, Reorder: opts.Reorder}
	ours, err := planner.PlanGraph(g, ggmlOpts)
	if err != nil {
		return out, fmt.Errorf("ggml layout: %w", err)
	}
	ggml, err := layoutFigures(g, ours, ggmlOpts)
	if err != nil {
		return out, fmt.Errorf("ggml layout: %w", err)
	}
	ggml.Layout = "ggml's: inputs and outputs in the arena too, cpu in-place rule, 32-B alignment (llama.cpp's compute buffer)"
	out.GgmlLayout = ggml
	return out, nil
}

// layoutFigures completes ours (a plan made with opts) with a gallocr
// replay of the same problem in graph order.
func layoutFigures(g *ir.Graph, ours *planner.GraphPlan, opts planner.GraphOptions) (layoutCompare, error) {
	gopts := opts
	gopts.Strategy, gopts.Reorder = planner.StrategyGallocr, false
	ga, err := planner.PlanGraph(g, gopts)
	if err != nil {
		return layoutCompare{}, fmt.Errorf("gallocr: %w", err)
	}
	return layoutCompare{
		OursBytes: ours.ArenaBytes, OursStrategy: ours.Strategy, OursReordered: ours.OrderChanged, OursLowerBound: ours.LowerBound,
		GallocrBytes: ga.ArenaBytes, GraphOrderBound: ga.LowerBound, GallocrOverBound: ga.ArenaBytes - ga.LowerBound,
	}, nil
}

// writeMemoryComparison prints the two layouts under a plan's summary line.
func writeMemoryComparison(w io.Writer, c memoryCompare) {
	for _, l := range []struct {
		name string
		f    layoutCompare
	}{{"this target's layout", c.Target}, {"ggml's layout (llama.cpp's compute buffer)", c.GgmlLayout}} {
		bound := fmt.Sprintf("lower bound %d B", l.f.GraphOrderBound)
		if l.f.OursReordered && l.f.OursLowerBound != l.f.GraphOrderBound {
			bound = fmt.Sprintf("lower bound %d B in graph order, %d B in ours", l.f.GraphOrderBound, l.f.OursLowerBound)
		}
		fmt.Fprintf(w, "  %s: ours %d B, ggml-alloc (gallocr replay) %d B; %s\n", l.name, l.f.OursBytes, l.f.GallocrBytes, bound)
	}
}
