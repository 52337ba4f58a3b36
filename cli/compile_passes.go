package cli

import (
	"context"
	"fmt"
	"github.com/irtool/irtool/compiler/summary"
	"io"
	"math"
	"sort"
	"strings"

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
	passesText(j.Text, j.R.Pipeline, out, total, j.Input.OpCounts(), g.OpCounts(), j.Input.NumOps(), g.NumOps())
	return nil
}

func passesText(w io.Writer, p passes.Pipeline, out []summary.Pass, total float64, opsBefore, opsAfter map[string]int, nBefore, nAfter int) {
	fmt.Fprintf(w, "passes %s: %d -> %d ops in %.2f ms\n", p, nBefore, nAfter, total)
	if len(out) > 0 {
		fmt.Fprintf(w, "  %-20s %-7s %8s %5s  %s\n", "pass", "changed", "ms", "ops", "rule hits / stats")
	}
	for _, x := range out {
		changed := "no"
		if x.Changed {
			changed = "yes"
		}
		line := fmt.Sprintf("  %-20s %-7s %8.3f %5d  %s", x.Name, changed, math.Round(x.MS*1000)/1000, x.NodesAfter, passesCounts(x.RuleHits, x.Stats))
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	names := map[string]int{}
	for k := range opsBefore {
		names[k] = 1
	}
	for k := range opsAfter {
		names[k] = 1
	}
	keys := passesSortedKeys(names)
	fmt.Fprintf(w, "  %-20s %6s %6s\n", "op", "before", "after")
	for _, k := range keys {
		fmt.Fprintf(w, "  %-20s %6d %6d\n", k, opsBefore[k], opsAfter[k])
	}
}

// passesCounts prints rule hits, then statistics in brackets, sorted by key.
func passesCounts(hits, stats map[string]int) string {
	var parts []string
	for _, k := range passesSortedKeys(hits) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, hits[k]))
	}
	for _, k := range passesSortedKeys(stats) {
		parts = append(parts, fmt.Sprintf("[%s=%d]", k, stats[k]))
	}
	return strings.Join(parts, " ")
}

func passesSortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
