package cli

import (
	"context"
	"fmt"
	"github.com/irtool/irtool/compiler/summary"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
)

// The passes stage of irtool compile: the driver runs the pipeline named
// by --passes (plus merge-qkv with --merge-qkv) on the graph as built,
// printing or dumping the IR after the passes --print-after and --dump-dir
// name; this file prints what it did.

// passesPipeline turns the --passes and --merge-qkv flags into a pipeline.
// Names resolve in reg's pass registry.
func passesPipeline(reg *irtool.Context, list string, mergeQKV bool) (passes.Pipeline, error) {
	return compiler.Options{Passes: list, MergeQKV: mergeQKV, PassRegistry: reg.Passes}.Pipeline()
}

// optimiseModel runs the pass pipeline list ("default", "none" or names,
// as --passes takes it) on m's symbolic graph through the compile driver,
// its passes stage only, and returns the model with the optimised graph;
// irtool run and bench call it, so they run exactly the pipeline compile
// runs. An empty pipeline ("none") returns m as built: run and bench then
// execute the graph without even the required passes.
func optimiseModel(reg *irtool.Context, m *models.Model, list string) (*models.Model, error) {
	p, err := passesPipeline(reg, list, false)
	if err != nil {
		return nil, err
	}
	if len(p) == 0 {
		return m, nil
	}
	r, err := reg.Compile(context.Background(), m.Graph, compiler.Options{Passes: list, Until: compiler.StagePasses})
	if err != nil {
		return nil, err
	}
	optimised := *m
	optimised.Graph = r.Optimised
	return &optimised, nil
}

// outPasses fills the JSON's passes and prints the stage's summary.
func outPasses(j *compileJob) error {
	res := j.R.PassResult
	if d := j.Flags.DumpDir; d != "" {
		fmt.Fprintf(j.Stderr, "irtool compile: wrote %d IR files into %s\n", len(res.Passes)+1, d)
	}
	out, total := summary.PassesOf(res)
	j.Out.Passes = out
	g := j.R.Optimised
	summary.WritePasses(j.Text, j.R.Pipeline, out, total, j.Input, g)
	return nil
}
