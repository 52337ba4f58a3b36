package cli

import (
	"context"
	"flag"
	"fmt"
	"github.com/irtool/irtool/internal/jsonout"
	"github.com/irtool/irtool/models/modelfile"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/planner"
)

func init() {
	register(&command{
		Name:    "plan",
		Summary: "assign arena offsets to a buffer-lifetime instance (CSV) and score them",
		Usage: `irtool plan INSTANCE.csv [--strategy NAME|best] [--budget 10s] [--align B] [--json]
       irtool plan FILE.ir [--bind n_tokens=1,...] [--strategy NAME|best] [--align B] [--json]
       irtool plan --compare [INSTANCE.csv|FILE.ir|MODEL.gguf ...] [--strategies LIST] [--budget 10s] [--json]

Reads a static memory-planning instance in the benchmark format shared by
MiniMalloc and idealloc: a header "id,lower,upper,size", then one buffer per
line, live over the half-open step range [lower, upper) and needing size
bytes. Every buffer gets an arena offset so that no two buffers live at the
same step overlap; the score is arena / lower bound, where the lower bound
is the largest number of bytes live at one step.

Strategies: naive (no reuse), greedy-size (largest first into the
smallest gap, TFLite / XLA kSpatial), greedy-lifetime (longest first, XLA
kTemporal), greedy-breadth (widest step first), online-bestfit (alloc/free
events in time order through a best-fit free list), exact (branch and
bound over canonical solutions in the style of MiniMalloc, on a ladder of
capacities: proves optimality or reports its best and the gap), search
(exact, then a search over placement orders and a large-neighbourhood
repair around the arena's top), and best (all of them, keeping the
smallest arena; the default). best and search stop at the proven bound or
after --budget.

--budget bounds the whole command, reading included; every strategy
checks it. naive (O(n)) always finishes and online-bestfit is O(n log n);
a strategy asked for by name that cannot finish in time is an error
naming the instance size (best keeps whatever finished).

--align B rounds every size up to a multiple of B and keeps offsets
multiples of B (ggml's CPU buffers use 32).

--json prints one object:
  {"buffers", "lower_bound", "arena", "ratio", "bound", "proven_optimal",
   "gap", "naive", "strategy", "winner", "time_to_best_ms", "ms",
   "budget_ms", "strategies": {name: arena}, "strategy_ms": {name: ms},
   "unfinished": [name]}
where ratio = arena / lower_bound; bound is the proven lower bound (the
lower bound, raised by capacities the exact search refuted) and
proven_optimal says arena = bound; gap = (arena - bound) / bound; naive
is the arena without reuse; winner is the strategy or search phase that
found the arena (exact, orders, repair), time_to_best_ms when, and ms the
planner's wall time.

Given IR text (irtool ir -o FILE.ir, docs/IR.md), plans the graph as
written (no passes) with ggml's CPU in-place rule and execution reordering,
as compile's memory stage does for --target cpu; --align defaults to 32
there. A symbolic graph is specialised with --bind, or by default for the
worst case n_tokens = n_kv = n_outputs = the IR's n_ctx. The report is the
same; strategy_ms is empty.

With --compare, runs every strategy (the built-in ones, best included,
and those registered; --strategies picks some) one after the other on
each instance and prints, per instance, each strategy's arena, its ratio
to the lower bound and its wall time (--budget is then per strategy).
CSV arguments are instances as above; a model or an IR file (no argument:
the embedded model) gives two, the worst case and the decode step that
compile plans for the cpu target after the default passes.
plan --compare planner/testdata/bench/*/*.csv reproduces the strategy
tables of docs/PLANNER.md. --json prints {"instances": [{"instance",
"buffers", "lower_bound", "strategies": [{"strategy", "arena", "ratio",
"proven_optimal", "ms", "budget_exhausted", "error"}]}]}.`,
		Run:   cmdPlan,
		Flags: func(fs *flag.FlagSet) { declarePlanFlags(fs) },
	})
}

type planFlags struct {
	strategy   *string
	budget     *time.Duration
	align      *int64
	asJSON     *bool
	bind       *string
	compare    *bool
	strategies *string
	set        map[string]bool // the flags given on the command line
}

// flagGiven reports whether the flag name was on the command line.
func flagGiven(fl planFlags, name string) bool { return fl.set[name] }

func declarePlanFlags(fs *flag.FlagSet) planFlags {
	return planFlags{
		strategy:   fs.String("strategy", planner.StrategyBest, "strategy `NAME`: "+strings.Join(planner.Strategies(), ", ")+", or one registered in planner.DefaultStrategies (docs/PLANNER.md)"),
		budget:     fs.Duration("budget", planner.DefaultBudget, "time budget of the whole command, reading included; every strategy checks it"),
		align:      fs.Int64("align", 1, "round sizes up to, and keep offsets multiples of, `B` bytes (1 ≤ B ≤ 2^30)"),
		asJSON:     fs.Bool("json", false, "print one JSON object"),
		bind:       fs.String("bind", "", "for FILE.ir: the symbol `VALUES` to plan for, e.g. n_tokens=1,n_kv=256,n_outputs=1 (default: the worst case n_tokens = n_kv = n_outputs = the IR's n_ctx)"),
		compare:    fs.Bool("compare", false, "run every strategy (built-in and registered, or those of --strategies) on each instance and print each one's arena, ratio to the lower bound and time; the arguments are CSV instances, IR files or models (none: the embedded model)"),
		strategies: fs.String("strategies", "", "with --compare, the strategies to run (`LIST`, comma-separated; default: all)"),
		set:        map[string]bool{},
	}
}

func cmdPlan(reg *irtool.Context, args []string, stdout, stderr io.Writer) int {
	start := time.Now()
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fl := declarePlanFlags(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagError(err)
	}
	fs.Visit(func(f *flag.Flag) { fl.set[f.Name] = true })
	if *fl.compare {
		if *fl.budget <= 0 {
			return usageError(stderr, "plan", "--budget must be positive, got %v", *fl.budget)
		}
		if *fl.align < 1 || *fl.align > 1<<30 || *fl.align&(*fl.align-1) != 0 {
			return usageError(stderr, "plan", "--align must be a power of two in [1, 2^30], got %d", *fl.align)
		}
		return planCompare(reg, pos, fl, stdout, stderr)
	}
	if *fl.strategies != "" {
		return usageError(stderr, "plan", "--strategies applies to --compare only")
	}
	if len(pos) != 1 {
		return usageError(stderr, "plan", "want one INSTANCE.csv or FILE.ir argument, got %d", len(pos))
	}
	// Built-in strategies and those registered in planner.DefaultStrategies
	// (a file of this command may register one from init), and the name a
	// plan reports for a search phase (planner.StrategyOf).
	names := reg.Strategies.Names()
	if modelfile.IsIRText(pos[0]) {
		names = reg.Strategies.GraphNames() // a graph's strategies (as for compile)
	}
	if !slices.Contains(names, planner.StrategyOf(*fl.strategy)) {
		return usageError(stderr, "plan", "unknown strategy %q (have %s)", *fl.strategy, strings.Join(names, ", "))
	}
	if *fl.budget <= 0 {
		return usageError(stderr, "plan", "--budget must be positive, got %v", *fl.budget)
	}
	if *fl.align < 1 || *fl.align > 1<<30 || *fl.align&(*fl.align-1) != 0 {
		return usageError(stderr, "plan", "--align must be a power of two in [1, 2^30], got %d", *fl.align)
	}
	if modelfile.IsIRText(pos[0]) {
		return planIR(reg, pos[0], fl, stdout, stderr)
	}
	if *fl.bind != "" {
		return usageError(stderr, "plan", "--bind applies to IR files only")
	}
	p, err := planner.ReadCSVFile(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "irtool plan: %v\n", err)
		return 1
	}
	p.Alignment = *fl.align
	// The budget covers the whole command: reading counts against it.
	left := *fl.budget - time.Since(start)
	if left <= 0 {
		fmt.Fprintf(stderr, "irtool plan: %s: reading %d buffers took %v, the whole --budget %v; give a larger budget\n",
			pos[0], len(p.Buffers), time.Since(start).Round(time.Millisecond), *fl.budget)
		return 1
	}
	_, rep, err := reg.Strategies.Solve(context.Background(), p, *fl.strategy, planner.Options{Budget: left})
	if err != nil {
		fmt.Fprintf(stderr, "irtool plan: %s: %v\n", pos[0], err)
		return 1
	}
	if *fl.asJSON {
		err = jsonout.Write(stdout, rep)
	} else {
		err = rep.WriteText(stdout, filepath.Base(pos[0]), *fl.align, reg.Strategies)
	}
	if err != nil {
		fmt.Fprintf(stderr, "irtool plan: %v\n", err)
		return 1
	}
	return 0
}
