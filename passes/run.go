package passes

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/irtool/irtool/internal/safeio"
	"github.com/irtool/irtool/ir"
)

// Options configure Run.
type Options struct {
	// NoVerify turns off ir.Verify after every pass (on by default, as
	// MLIR's enableVerifier and Go's ssa/check).
	NoVerify bool
	// Snapshots keeps a copy of the graph after every pass in the Result.
	Snapshots bool
	// PrintAfter names passes whose output IR is written to Print ("all"
	// for every pass).
	PrintAfter []string
	Print      io.Writer
	// DumpDir receives the IR before the first pass (00-input.ir) and after
	// every pass (NN-name.ir).
	DumpDir string
	// Rewrite bounds the rewrite driver of rule passes.
	Rewrite RewriteOptions
	// Fold configures constant folding.
	Fold FoldOptions
}

// PassStat is what one pass did.
type PassStat struct {
	Name        string
	Changed     bool
	Duration    time.Duration
	RuleHits    map[string]int // rewrites per rule (empty for passes without rules)
	Stats       map[string]int // pass-specific counts ("removed", "merged", ...)
	NodesBefore int            // non-leaf nodes before the pass
	NodesAfter  int            // and after
}

// Snapshot is the graph after one pass.
type Snapshot struct {
	Pass  string
	Graph *ir.Graph
}

// Result reports a run of a pipeline.
type Result struct {
	Passes    []PassStat
	Snapshots []Snapshot // with Options.Snapshots
}

// Run applies the pipeline to a copy of g (g is not modified) and returns
// the transformed graph. The graph is verified before the first pass and,
// unless opts.NoVerify, after every pass. An error names the failing pass
// and the passes that ran before it; a panic inside a pass becomes such an
// error too. The Result holds the statistics of the passes that completed.
func Run(g *ir.Graph, p Pipeline, opts Options) (*ir.Graph, *Result, error) {
	res := &Result{}
	if g == nil {
		return nil, res, fmt.Errorf("passes: nil graph")
	}
	if err := p.Check(); err != nil {
		return nil, res, err
	}
	if err := ir.Verify(g); err != nil {
		return nil, res, fmt.Errorf("passes: input graph: %w", err)
	}
	out := g.Clone()
	if opts.DumpDir != "" {
		if err := os.MkdirAll(opts.DumpDir, 0o755); err != nil {
			return nil, res, fmt.Errorf("passes: dump dir: %w", err)
		}
		if err := dump(opts.DumpDir, "00-input.ir", out); err != nil {
			return nil, res, err
		}
	}
	var ran []string
	for i, ps := range p {
		c := &Context{Options: opts, hits: map[string]int{}, stats: map[string]int{}}
		st := PassStat{Name: ps.Name, NodesBefore: out.NumOps()}
		start := time.Now()
		changed, err := runPass(ps, out, c)
		st.Duration = time.Since(start)
		if err != nil {
			return nil, res, fmt.Errorf("passes: pass %s failed (after %s): %w", ps.Name, ranList(ran), err)
		}
		if !opts.NoVerify {
			if err := ir.Verify(out); err != nil {
				return nil, res, fmt.Errorf("passes: pass %s left an invalid graph (after %s): %w", ps.Name, ranList(ran), err)
			}
		}
		ran = append(ran, ps.Name)
		st.Changed, st.RuleHits, st.Stats, st.NodesAfter = changed, c.hits, c.stats, out.NumOps()
		res.Passes = append(res.Passes, st)
		if opts.Snapshots {
			res.Snapshots = append(res.Snapshots, Snapshot{Pass: ps.Name, Graph: out.Clone()})
		}
		if opts.Print != nil && (slices.Contains(opts.PrintAfter, "all") || slices.Contains(opts.PrintAfter, ps.Name)) {
			fmt.Fprintf(opts.Print, "// IR after %s (pass %d)\n", ps.Name, i+1)
			if err := ir.Print(opts.Print, out); err != nil {
				return nil, res, fmt.Errorf("passes: print after %s: %w", ps.Name, err)
			}
		}
		if opts.DumpDir != "" {
			if err := dump(opts.DumpDir, fmt.Sprintf("%02d-%s.ir", i+1, ps.Name), out); err != nil {
				return nil, res, err
			}
		}
	}
	return out, res, nil
}

// runPass runs one pass, turning a panic into an error (Go's "panic during
// <pass>").
func runPass(ps Pass, g *ir.Graph, c *Context) (changed bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return ps.Run(g, c)
}

func ranList(ran []string) string {
	if len(ran) == 0 {
		return "no other pass"
	}
	return "[" + strings.Join(ran, " ") + "]"
}

// dump writes g to dir/name atomically (a temporary file renamed into
// place), so a failed write leaves no partial dump.
func dump(dir, name string, g *ir.Graph) error {
	f, err := safeio.Create(filepath.Join(dir, name))
	if err != nil {
		return fmt.Errorf("passes: dump: %w", err)
	}
	if err := ir.Print(f, g); err != nil {
		f.Abort()
		return fmt.Errorf("passes: dump %s: %w", name, err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("passes: dump %s: %w", name, err)
	}
	return nil
}
