package cli

import (
	"fmt"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/compiler/summary"
	"github.com/irtool/irtool/internal/safeio"
	"github.com/irtool/irtool/planner"
)

// The memory stage (package compiler) plans the arena of the compiled graph
// twice: for the worst case llama.cpp reserves for (n_tokens = --ubatch,
// n_kv = --ctx, every row producing logits) and for decode (one token over
// a full cache). Each plan uses the target's in-place policy
// (planner.CPUPolicy for cpu, planner.NPUPolicy otherwise) and, on NPU
// targets, reserves each kernel's workspace (target.Profile.Workspace) as a
// short-lived tensor. This file prints the plans and writes
// --export-buffers.

// outMemory fills the JSON's memory objects, prints both plans and writes
// --export-buffers.
func outMemory(j *compileJob) error {
	for _, c := range []struct {
		mp  *compiler.PlannedStep
		out *any
	}{{j.R.Memory, &j.Out.Memory}, {j.R.MemoryDecode, &j.Out.MemoryDecode}} {
		p := c.mp.Plan
		out := summary.MemoryOf(p, c.mp.Bindings.String())
		out.Compare = c.mp.Compare
		out.GgmlCPUBytes = c.mp.Compare.GgmlLayout.GallocrBytes
		*c.out = out
		order := "graph order"
		if p.OrderChanged {
			order = "reordered"
		}
		fmt.Fprintf(j.Text, "memory, %s (%s): arena %d B = %.4f x lower bound %d B (%s, %s), naive %d B, %d in place\n",
			c.mp.What, out.Bindings, p.ArenaBytes, p.Ratio(), p.LowerBound, p.Strategy, order, p.NaiveBytes, p.InPlace)
		summary.WriteCompare(j.Text, c.mp.Compare)
		if c.mp == j.R.Memory && j.Flags.ExportBuffers != "" {
			if err := exportBuffers(j.Flags.ExportBuffers, p); err != nil {
				return err
			}
			fmt.Fprintf(j.Stderr, "irtool compile: wrote %s\n", j.Flags.ExportBuffers)
		}
	}
	return nil
}

// exportBuffers writes the plan's problem in the benchmark CSV format
// (id,lower,upper,size) with sizes already rounded to the alignment, so
// that `irtool plan F.csv` scores the same instance.
func exportBuffers(path string, p *planner.MemoryPlan) error {
	q := p.Problem.Aligned()
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
