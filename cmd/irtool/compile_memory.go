package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/irtool/irtool/internal/safeio"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/target"
)

// The memory stage plans the arena of the compiled graph twice: for the
// worst case llama.cpp reserves for (n_tokens = --ubatch, n_kv = --ctx,
// every row producing logits) and for decode (one token over a full
// cache). Each plan uses the target's in-place policy (planner.CPUPolicy
// for cpu, planner.NPUPolicy otherwise) and, on NPU targets, reserves each
// kernel's workspace (target.Profile.Workspace) as a short-lived tensor.
// Later stages read the plans from j.Values["plan"] and ["plan_decode"];
// a plan's Graph is the specialised graph its node IDs (Offsets, Order,
// Workspaces) refer to, and its Order is the execution order to use.

func init() {
	registerCompileStage(compileStage{Name: "memory", Order: stageMemory, Run: runMemoryStage})
}

// memoryJSON is the "memory" / "memory_decode" object of compile --json.
type memoryJSON struct {
	ArenaBytes      int64            `json:"arena_bytes"`
	LowerBoundBytes int64            `json:"lower_bound_bytes"`
	NaiveBytes      int64            `json:"naive_bytes"`
	Strategy        string           `json:"strategy"`
	Strategies      map[string]int64 `json:"strategies"`
	OrderChanged    bool             `json:"order_changed"`
	Requested       string           `json:"requested"`
	Ratio           float64          `json:"ratio"`
	Bindings        string           `json:"bindings"`
	Align           int64            `json:"align"`
	Policy          string           `json:"policy"`
	Buffers         int              `json:"buffers"`
	InPlace         int              `json:"inplace"`
	WorkspaceBytes  int64            `json:"workspace_bytes"`
	GgmlCPUBytes    int64            `json:"ggml_cpu_bytes"`
	Compare         memoryCompare    `json:"compare"`
	MS              float64          `json:"ms"`
}

// memoryAlign returns the arena alignment: --align, else the target
// profile's (32 B, ggml's CPU alignment, for cpu; 64 B for the Ascend
// targets), so the memory figures are those of the plan the lowering uses.
func memoryAlign(f compileFlags) (int64, error) {
	switch {
	case f.Align < 0 || f.Align > 1<<30:
		return 0, fmt.Errorf("--align %d out of range [1, 2^30]", f.Align)
	case f.Align > 0:
		return f.Align, nil
	}
	prof, err := target.Get(f.Target)
	if err != nil {
		return 0, err
	}
	return prof.Align, nil
}

func runMemoryStage(j *compileJob) error {
	f := j.Flags
	align, err := memoryAlign(f)
	if err != nil {
		return err
	}
	strategy := f.Strategy
	if strategy == "" {
		strategy = planner.StrategyBest
	}
	if !slices.Contains(planner.GraphStrategies(), strategy) {
		return fmt.Errorf("unknown --strategy %q (have %s)", strategy, strings.Join(planner.GraphStrategies(), ", "))
	}
	if f.Budget <= 0 {
		return fmt.Errorf("--budget must be positive, got %v", f.Budget)
	}
	prof, err := target.Get(f.Target)
	if err != nil {
		return err
	}
	opts := planner.GraphOptions{
		Align: align, Strategy: strategy, Budget: f.Budget,
		Policy: planner.PolicyFor(prof.Name), Reorder: true,
	}
	if prof.HasNPU() {
		opts.Workspace = prof.Workspace
	}
	cases := []struct {
		key, what string
		nTokens   int64
		out       *any
	}{
		{"plan", "worst case", f.UBatch, &j.Out.Memory},
		{"plan_decode", "decode", 1, &j.Out.MemoryDecode},
	}
	for _, c := range cases {
		b := ir.Bindings{models.SymTokens: c.nTokens, models.SymKV: f.Ctx, models.SymOutputs: c.nTokens, models.SymKVHead: 0}
		g, err := j.Graph.Specialize(b)
		if err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
		p, err := planner.PlanGraphContext(context.Background(), g, opts)
		if err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
		cmp, err := compareMemory(g, p, opts)
		if err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
		j.Values[c.key] = p
		out := memoryReport(p, bindingString(b, j.Graph))
		out.Compare = cmp
		out.GgmlCPUBytes = cmp.GgmlLayout.GallocrBytes
		*c.out = out
		order := "graph order"
		if p.OrderChanged {
			order = "reordered"
		}
		fmt.Fprintf(j.Text, "memory, %s (%s): arena %d B = %.4f x lower bound %d B (%s, %s), naive %d B, %d in place\n",
			c.what, out.Bindings, p.ArenaBytes, p.Ratio(), p.LowerBound, p.Strategy, order, p.NaiveBytes, p.InPlace)
		writeMemoryComparison(j.Text, cmp)
		if c.key == "plan" && f.ExportBuffers != "" {
			if err := exportBuffers(f.ExportBuffers, p); err != nil {
				return err
			}
			fmt.Fprintf(j.Stderr, "irtool compile: wrote %s\n", f.ExportBuffers)
		}
	}
	return nil
}

// bindingString prints the bindings of the symbols g uses, sorted by name.
func bindingString(b ir.Bindings, g *ir.Graph) string {
	used := ir.Bindings{}
	for _, s := range g.Symbols() {
		if v, ok := b[s]; ok {
			used[s] = v
		}
	}
	return used.String()
}

func memoryReport(p *planner.GraphPlan, bindings string) memoryJSON {
	out := memoryJSON{
		ArenaBytes: p.ArenaBytes, LowerBoundBytes: p.LowerBound, NaiveBytes: p.NaiveBytes,
		Strategy: p.Strategy, Strategies: p.Strategies, OrderChanged: p.OrderChanged,
		Requested: p.Requested, Ratio: p.Ratio(), Bindings: bindings, Align: p.Align, Policy: p.Policy,
		Buffers: len(p.Problem.Buffers), InPlace: p.InPlace, MS: p.MS,
	}
	for _, w := range p.Workspaces {
		out.WorkspaceBytes += w.Bytes
	}
	return out
}

// exportBuffers writes the plan's problem in the benchmark CSV format
// (id,lower,upper,size) with sizes already rounded to the alignment, so
// that `irtool plan F.csv` scores the same instance.
func exportBuffers(path string, p *planner.GraphPlan) error {
	q := &planner.Problem{Buffers: slices.Clone(p.Problem.Buffers)}
	for i := range q.Buffers {
		q.Buffers[i].Size = p.Problem.AlignedSize(i)
	}
	fh, err := safeio.Create(path)
	if err != nil {
		return fmt.Errorf("--export-buffers: %w", err)
	}
	defer fh.Abort()
	if err := planner.WriteCSV(fh, q); err != nil {
		return fmt.Errorf("--export-buffers %s: %w", path, err)
	}
	if err := fh.Commit(); err != nil {
		return fmt.Errorf("--export-buffers: %w", err)
	}
	return nil
}
