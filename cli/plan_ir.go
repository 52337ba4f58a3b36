package cli

import (
	"context"
	"fmt"
	"github.com/irtool/irtool/internal/jsonout"
	"github.com/irtool/irtool/models/modelfile"
	"io"
	"path/filepath"
	"strconv"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/planner"
)

// planIR plans the memory of the graph in an IR file: the graph as written
// (no passes), specialised with bind or, when bind is empty and the graph
// is symbolic, with the worst case compile plans (n_tokens = n_outputs =
// n_kv = the IR's n_ctx, kv_head = 0), with ggml's CPU in-place rule.
func planIR(reg *irtool.Context, path string, fl planFlags, stdout, stderr io.Writer) int {
	src, err := openSource(reg, path)
	if err != nil {
		fmt.Fprintf(stderr, "irtool plan: %v\n", err)
		return 1
	}
	defer src.Close()
	g := src.Graph
	var b ir.Bindings
	switch {
	case *fl.bind != "":
		if b, err = ir.ParseBindings(*fl.bind); err != nil {
			return usageError(stderr, "plan", "--bind: %v", err)
		}
	case !g.IsStatic():
		n, err := strconv.ParseInt(g.Meta[modelfile.MetaNCtx], 10, 64)
		if err != nil || n <= 0 {
			return usageError(stderr, "plan", "%s: the graph is symbolic (%v) and names no n_ctx: give --bind", path, g.Symbols())
		}
		b = ir.Bindings{models.SymTokens: n, models.SymKV: n, models.SymOutputs: n, models.SymKVHead: 0}
	}
	if len(b) > 0 {
		if b, err = b.For(g); err == nil {
			g, err = g.Specialize(b)
		}
		if err != nil {
			fmt.Fprintf(stderr, "irtool plan: %s: %v\n", path, err)
			return 1
		}
	}
	align := *fl.align
	if align == 1 && !flagGiven(fl, "align") {
		align = planner.DefaultAlign
	}
	gp, err := planner.PlanMemoryContext(context.Background(), g, planner.MemoryOptions{Strategies: reg.Strategies,
		Align: align, Strategy: *fl.strategy, Budget: *fl.budget, Policy: planner.CPUPolicy(), Reorder: true})
	if err != nil {
		fmt.Fprintf(stderr, "irtool plan: %s: %v\n", path, err)
		return 1
	}
	rep := &planner.Report{Buffers: len(gp.Problem.Buffers), LowerBound: gp.LowerBound, Arena: gp.ArenaBytes,
		Ratio: gp.Ratio(), Naive: gp.NaiveBytes, Strategy: gp.Requested, Winner: gp.Strategy, MS: gp.MS,
		Strategies: gp.Strategies, StrategyMS: map[string]float64{}}
	// The proof, as for an instance: the lower bound (the largest total
	// size live at one step) is a proven bound on any arena, so a plan that
	// reaches it is optimal.
	rep.Bound = gp.LowerBound
	rep.Optimal = gp.ArenaBytes == gp.LowerBound
	if !rep.Optimal && rep.Bound > 0 {
		rep.Gap = float64(gp.ArenaBytes-rep.Bound) / float64(rep.Bound)
	}
	if *fl.asJSON {
		err = jsonout.Write(stdout, rep)
	} else {
		name := filepath.Base(path)
		if len(b) > 0 {
			name += " (" + b.String() + ")"
		}
		err = rep.WriteText(stdout, name, align, reg.Strategies)
	}
	if err != nil {
		fmt.Fprintf(stderr, "irtool plan: %v\n", err)
		return 1
	}
	return 0
}
