package cli

import (
	"context"
	"fmt"
	"github.com/irtool/irtool/internal/jsonout"
	"github.com/irtool/irtool/models/modelfile"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/planner"
)

// irtool plan --compare: every strategy (the built-in ones and those
// registered) on each instance, against its lower bound, through the
// planner's comparison harness (planner.StrategySet.Compare).

// planCompareJSON is plan --compare --json.
type planCompareJSON struct {
	Instances []*planner.Comparison `json:"instances"`
}

// planInstance is one problem to compare on.
type planInstance struct {
	name string
	p    *planner.Problem
}

// compareInstances reads the problems of the arguments: a CSV instance
// as it is; IR text and GGUF models (none: the embedded one) through the
// compile driver's default passes and memory stage for the CPU, giving
// the worst-case and the decode step's problems.
func compareInstances(reg *irtool.Context, args []string, fl planFlags) ([]planInstance, error) {
	if len(args) == 0 {
		args = []string{""}
	}
	var out []planInstance
	for _, path := range args {
		if path != "" && !modelfile.IsIRText(path) && strings.EqualFold(filepath.Ext(path), ".csv") {
			p, err := planner.ReadCSVFile(path)
			if err != nil {
				return nil, err
			}
			p.Alignment = *fl.align
			out = append(out, planInstance{filepath.Base(path), p})
			continue
		}
		flags := compileFlags{Passes: "default", Ctx: defaultCtx, KVType: "f16", KVWrite: "set_rows", Budget: compiler.DefaultBudget,
			ubatchDefault: true, Target: "cpu", Strategy: planner.StrategyGreedySize, reg: reg}
		j, err := newCompileJob(path, flags)
		if err != nil {
			return nil, err
		}
		opts, err := j.Flags.options(compiler.StageMemory)
		if err == nil {
			if *fl.align > 1 {
				opts.Align = *fl.align
			}
			err = j.compile(opts)
		}
		j.close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", modelName(path), err)
		}
		for _, mp := range []*compiler.PlannedStep{j.R.Memory, j.R.MemoryDecode} {
			if mp == nil {
				continue
			}
			out = append(out, planInstance{fmt.Sprintf("%s %s (%s)", modelName(path), mp.What, mp.Bindings.String()), mp.Plan.Problem})
		}
	}
	return out, nil
}

// planCompare prints the comparison of every instance.
func planCompare(reg *irtool.Context, args []string, fl planFlags, stdout, stderr io.Writer) int {
	set := reg.Strategies
	var names []string
	if s := strings.TrimSpace(*fl.strategies); s != "" {
		for _, n := range strings.Split(s, ",") {
			names = append(names, strings.TrimSpace(n))
		}
	}
	for _, n := range names {
		if !slices.Contains(set.Names(), n) {
			return usageError(stderr, "plan", "--strategies: unknown strategy %q (have %s)", n, strings.Join(set.Names(), ", "))
		}
	}
	insts, err := compareInstances(reg, args, fl)
	if err != nil {
		fmt.Fprintf(stderr, "irtool plan: %v\n", err)
		return 1
	}
	out := planCompareJSON{Instances: []*planner.Comparison{}}
	for _, in := range insts {
		c, err := set.Compare(context.Background(), in.name, in.p, planner.CompareOptions{Strategies: names, Options: planner.Options{Budget: *fl.budget}})
		if err != nil {
			fmt.Fprintf(stderr, "irtool plan: %v\n", err)
			return 1
		}
		out.Instances = append(out.Instances, c)
		if !*fl.asJSON {
			if err := c.WriteText(stdout); err != nil {
				fmt.Fprintf(stderr, "irtool plan: %v\n", err)
				return 1
			}
		}
	}
	if *fl.asJSON {
		if err := jsonout.Write(stdout, out); err != nil {
			fmt.Fprintf(stderr, "irtool plan: %v\n", err)
			return 1
		}
	}
	return 0
}
