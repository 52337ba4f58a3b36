package compiler

import (
	"context"
	"fmt"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/lower/cann"
	"github.com/irtool/irtool/planner"
)

// The bucket step is the one way a step shape becomes a plan and a
// program: restrict the bindings to the graph's symbols (ir.Bindings.For,
// an error naming a symbol left unbound), specialise, plan memory with
// the options memoryOptions decides, and, for a partitioned graph, lower.
// The memory stage runs its two plans through it, Result.Lower every
// bucket of a runtime (runtime/program) and every rank of a split model.

// memoryOptions are the planner options of every plan the compiler makes,
// decided here once from the target profile and Options: the arena
// alignment (Result.Align), the in-place policy (planner.NPUPolicy on a
// target with an NPU, else planner.CPUPolicy), the NPU kernels' planned
// workspaces, Options.Strategy, Options.Budget, Options.Threads, and a
// work-bounded (deterministic) search. reorder lets the planner pick
// another execution order: the memory stage's graph may be reordered; a
// partitioned graph is not, because its order is the partition's, which
// keeps each device's nodes together in few segments, and the lowering
// runs the plan's order.
func (r *Result) memoryOptions(reorder bool) planner.MemoryOptions {
	opts := planner.MemoryOptions{
		Align: r.Align(), Strategy: r.Options.Strategy, Budget: r.Options.Budget, Strategies: r.Options.Strategies, Workers: r.Options.Threads,
		Deterministic: true, Policy: planner.CPUPolicy(), Reorder: reorder,
	}
	if r.Profile.HasNPU() {
		opts.Policy, opts.Workspace = planner.NPUPolicy(), r.Profile.Workspace
	}
	return opts
}

// planStep specialises g for b (restricted to g's symbols) and plans it;
// it returns the bindings used and the plan.
func (r *Result) planStep(ctx context.Context, g *ir.Graph, b ir.Bindings, reorder bool) (ir.Bindings, *planner.MemoryPlan, error) {
	b, err := b.For(g)
	if err != nil {
		return nil, nil, err
	}
	sg, err := g.Specialize(b)
	if err != nil {
		return nil, nil, err
	}
	p, err := planner.PlanMemoryContext(ctx, sg, r.memoryOptions(reorder))
	if err != nil {
		return nil, nil, err
	}
	return b, p, nil
}

// Lower is the bucket step of the partitioned graph: it specialises it
// for the bindings b (symbols the graph does not use are ignored, one it
// uses and b lacks is an error), plans it on the target's layout
// (memoryOptions) and lowers it to a cann.Program with the partition's
// devices. The partition stage must have run. It is safe for concurrent
// use: it reads the Result only.
func (r *Result) Lower(b ir.Bindings) (*cann.Program, *planner.MemoryPlan, error) {
	if r.Partition == nil || r.Partitioned == nil {
		return nil, nil, fmt.Errorf("compiler: lower: the partition stage did not run")
	}
	bb, plan, err := r.planStep(context.Background(), r.Partitioned, b, false)
	if err != nil {
		return nil, nil, fmt.Errorf("compiler: lower %s: %w", b, err)
	}
	opts := cann.Options{Devices: r.Partition.Device, Bindings: bb, KVWrite: r.Options.KVWrite, PrefillGraph: r.Options.PrefillGraph}
	if r.RequantSource != nil {
		opts.SourceDTypes = r.RequantSource.From
	}
	prof := r.Profile
	if r.Options.Align > 0 {
		p, err := r.Options.profile() // a fresh copy
		if err != nil {
			return nil, nil, err
		}
		p.Align = r.Options.Align // the device alignment of every region
		prof = p
	}
	prog, err := cann.Lower(plan.Graph, plan, prof, opts)
	if err != nil {
		return nil, nil, err
	}
	return prog, plan, nil
}
