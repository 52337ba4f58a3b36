package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/irtool/irtool/passes"
)

// The passes stage of irtool compile: it runs the pipeline named by
// --passes (plus merge-qkv with --merge-qkv) on the graph as built, prints
// or dumps the IR after the passes --print-after and --dump-dir name, and
// leaves the optimised graph and the per-pass snapshots to later stages.

func init() {
	registerCompileStage(compileStage{Name: "passes", Order: stagePasses, Run: runPassesStage})
}

// passJSON is one entry of compile --json's "passes" list.
type passJSON struct {
	Name       string         `json:"name"`
	Changed    bool           `json:"changed"`
	MS         float64        `json:"ms"`
	RuleHits   map[string]int `json:"rule_hits"`
	Stats      map[string]int `json:"stats,omitempty"`
	NodesAfter int            `json:"nodes_after"`
}

// passesPipeline turns the --passes and --merge-qkv flags into a pipeline.
func passesPipeline(list string, mergeQKV bool) (passes.Pipeline, error) {
	p, err := passes.Parse(list)
	if err != nil {
		return nil, err
	}
	if mergeQKV && !p.Contains("merge-qkv") {
		mq, ok := passes.Lookup("merge-qkv")
		if !ok {
			return nil, fmt.Errorf("passes: merge-qkv is not registered")
		}
		p = append(p, mq)
		if err := p.Check(); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func runPassesStage(j *compileJob) error {
	p, err := passesPipeline(j.Flags.Passes, j.Flags.MergeQKV)
	if err != nil {
		return err
	}
	opts := passes.Options{Snapshots: true, DumpDir: j.Flags.DumpDir}
	if pa := strings.TrimSpace(j.Flags.PrintAfter); pa != "" {
		for _, name := range strings.Split(pa, ",") {
			name = strings.TrimSpace(name)
			if name != "all" && !p.Contains(name) {
				return fmt.Errorf("--print-after %s: the pipeline %s does not run it", name, p)
			}
			opts.PrintAfter = append(opts.PrintAfter, name)
		}
		// With --json, stdout holds only the JSON object.
		opts.Print = j.Stdout
		if j.Flags.JSON {
			opts.Print = j.Stderr
		}
	}
	g, res, err := passes.Run(j.Graph, p, opts)
	if err != nil {
		return err
	}
	if opts.DumpDir != "" {
		fmt.Fprintf(j.Stderr, "irtool compile: wrote %d IR files into %s\n", len(res.Passes)+1, opts.DumpDir)
	}
	before := j.Graph
	j.Graph = g
	j.Values["snapshots"] = res.Snapshots
	out := make([]passJSON, len(res.Passes))
	var total float64
	for i, st := range res.Passes {
		ms := float64(st.Duration.Microseconds()) / 1000
		total += ms
		hits := st.RuleHits
		if hits == nil {
			hits = map[string]int{}
		}
		var stats map[string]int
		if len(st.Stats) > 0 {
			stats = st.Stats
		}
		out[i] = passJSON{Name: st.Name, Changed: st.Changed, MS: ms, RuleHits: hits, Stats: stats, NodesAfter: st.NodesAfter}
	}
	j.Out.Passes = out
	passesText(j.Text, p, out, total, before.OpCounts(), g.OpCounts(), before.NumOps(), g.NumOps())
	return nil
}

func passesText(w io.Writer, p passes.Pipeline, out []passJSON, total float64, opsBefore, opsAfter map[string]int, nBefore, nAfter int) {
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
