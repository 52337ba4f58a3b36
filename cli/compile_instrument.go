package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/tokenizer"
)

// The pass instruments of compile and passes: mlir-opt's IR printing
// flags (the IR goes to stderr under "// -----// IR Dump After PASS
// //----- //" headers) and translation validation (--check), both
// passes.Options fields the pass manager turns into instruments.

// passFlags are the instrument flags.
type passFlags struct {
	PrintBefore      string
	PrintAfter       string
	PrintAfterAll    bool
	PrintAfterChange bool
	Check            bool
	CheckTol         float64
	CheckSteps       int
}

// checkPrompt is the prompt --check prefills (the reference prompt of
// llama.cpp's recorded runs, testdata/README.md).
const checkPrompt = "Once upon a time"

func (f *passFlags) declare(fs *flag.FlagSet) {
	fs.StringVar(&f.PrintAfter, "print-ir-after", "", "print the IR after `PASS` (comma-separated names) to stderr, as mlir-opt's --mlir-print-ir-after")
	fs.StringVar(&f.PrintAfter, "print-after", "", "the same as --print-ir-after (`PASS` or all)")
	fs.StringVar(&f.PrintBefore, "print-ir-before", "", "print the IR before `PASS` (comma-separated names) to stderr")
	fs.BoolVar(&f.PrintAfterAll, "print-ir-after-all", false, "print the IR after every pass to stderr")
	fs.BoolVar(&f.PrintAfterChange, "print-ir-after-change", false, "print the IR after a pass only if it changed the graph (alone: after every pass that did)")
	fs.BoolVar(&f.Check, "check", false, "translation validation: run the graph on the CPU reference executor before the passes and after each pass that changes it (a prefill of \""+checkPrompt+"\" and --check-steps decode steps) and compare its logits and KV cache with the graph's before the pass; fail at the first pass past --check-tol")
	fs.Float64Var(&f.CheckTol, "check-tol", 0, "with --check, the largest max|Δ| a pass may introduce (`X`; 0: bit-identical, which every default pass is)")
	fs.IntVar(&f.CheckSteps, "check-steps", 3, "with --check, the greedy decode steps after the prefill (`N`)")
}

// names splits a comma-separated list of pass names and checks that the
// pipeline p runs each ("all" too when all is true).
func (f *passFlags) names(flagName, list string, p passes.Pipeline, all bool) ([]string, error) {
	var out []string
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if !(all && name == "all") && !p.Contains(name) {
			return nil, fmt.Errorf("--%s %s: the pipeline %s does not run it", flagName, name, p)
		}
		out = append(out, name)
	}
	return out, nil
}

// instrument sets the pass options of the instrument flags on opts:
// printing to stderr and, with --check, translation validation whose
// per-pass lines go to report.
func (j *compileJob) instrument(opts *compiler.Options, report io.Writer) error {
	f := &j.Flags.PassFlags
	po := &opts.PassOptions
	if f.PrintBefore != "" || f.PrintAfter != "" || f.PrintAfterAll || f.PrintAfterChange {
		p, err := opts.Pipeline()
		if err != nil {
			return err
		}
		if po.PrintBefore, err = f.names("print-ir-before", f.PrintBefore, p, false); err != nil {
			return err
		}
		if po.PrintAfter, err = f.names("print-ir-after", f.PrintAfter, p, true); err != nil {
			return err
		}
		if f.PrintAfterAll {
			po.PrintAfter = []string{"all"}
		}
		po.PrintAfterChange = f.PrintAfterChange
		po.Print = j.Stderr
	}
	if !f.Check {
		return nil
	}
	if f.CheckTol < 0 || f.CheckTol != f.CheckTol {
		return fmt.Errorf("--check-tol %v: want 0 or more", f.CheckTol)
	}
	if f.CheckSteps < 0 {
		return fmt.Errorf("--check-steps %d: want 0 or more", f.CheckSteps)
	}
	c := &passes.CheckOptions{Decode: f.CheckSteps, NCtx: j.Model.Options.NCtx, Tol: f.CheckTol, Step: modelStep(),
		Exec: eval.ExecOptions{KernelSet: po.Fold.Kernels}}
	if j.File != nil {
		c.Weights = j.File
		if tok, err := tokenizer.FromGGUF(j.File); err == nil {
			if ids, err := tok.Encode(checkPrompt, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true}); err == nil && len(ids) > 0 {
				c.Prompt = ids
			}
		}
	}
	c.Report = func(s passes.CheckStat) { fmt.Fprintf(report, "check %s\n", s) }
	po.Check = c
	return nil
}

// modelStep is how translation validation runs a model's step graph
// (passes sits below models, so the caller hands it models' functions).
func modelStep() *passes.ModelStep {
	return &passes.ModelStep{IsStep: models.IsStepGraph, Bind: models.StepBindings, Inputs: models.Inputs}
}
