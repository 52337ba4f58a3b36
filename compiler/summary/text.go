package summary

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/passes"
)

// This file holds the text lines of compile's summary that are not one
// record's: the passes table and the memory layouts' comparison.

// WritePasses prints compile's passes summary: the pipeline p with the
// op counts of the graph before (in) and after (g) and the total
// milliseconds, a row per pass of out (PassesOf: changed, ms, nodes after,
// rule hits and [statistics]) and the table of op counts before and after.
func WritePasses(w io.Writer, p passes.Pipeline, out []Pass, total float64, in, g *ir.Graph) {
	opsBefore, opsAfter, nBefore, nAfter := in.OpCounts(), g.OpCounts(), in.NumOps(), g.NumOps()
	fmt.Fprintf(w, "passes %s: %d -> %d ops in %.2f ms\n", p, nBefore, nAfter, total)
	if len(out) > 0 {
		fmt.Fprintf(w, "  %-20s %-7s %8s %5s  %s\n", "pass", "changed", "ms", "ops", "rule hits / stats")
	}
	for _, x := range out {
		changed := "no"
		if x.Changed {
			changed = "yes"
		}
		line := fmt.Sprintf("  %-20s %-7s %8.3f %5d  %s", x.Name, changed, math.Round(x.MS*1000)/1000, x.NodesAfter, passCounts(x.RuleHits, x.Stats))
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	names := map[string]int{}
	for k := range opsBefore {
		names[k] = 1
	}
	for k := range opsAfter {
		names[k] = 1
	}
	keys := sortedKeys(names)
	fmt.Fprintf(w, "  %-20s %6s %6s\n", "op", "before", "after")
	for _, k := range keys {
		fmt.Fprintf(w, "  %-20s %6d %6d\n", k, opsBefore[k], opsAfter[k])
	}
}

// passCounts prints rule hits, then statistics in brackets, sorted by key.
func passCounts(hits, stats map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(hits) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, hits[k]))
	}
	for _, k := range sortedKeys(stats) {
		parts = append(parts, fmt.Sprintf("[%s=%d]", k, stats[k]))
	}
	return strings.Join(parts, " ")
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// WriteCompare prints a plan's two layouts against ggml-alloc's replay
// (compile's lines under a plan's summary): this target's and ggml's.
func WriteCompare(w io.Writer, c compiler.Compare) {
	for _, l := range []struct {
		name string
		f    compiler.LayoutCompare
	}{{"this target's layout", c.Target}, {"ggml's layout (llama.cpp's compute buffer)", c.GgmlLayout}} {
		bound := fmt.Sprintf("lower bound %d B", l.f.GraphOrderBound)
		if l.f.OursReordered && l.f.OursLowerBound != l.f.GraphOrderBound {
			bound = fmt.Sprintf("lower bound %d B in graph order, %d B in ours", l.f.GraphOrderBound, l.f.OursLowerBound)
		}
		fmt.Fprintf(w, "  %s: ours %d B, ggml-alloc (gallocr replay) %d B; %s\n", l.name, l.f.OursBytes, l.f.GallocrBytes, bound)
	}
}
