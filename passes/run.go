package passes

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
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
	// PrintBefore and PrintAfter name passes whose input, respectively
	// output, IR is written to Print ("all" for every pass), each dump
	// under a header "// -----// IR Dump After NAME //----- //" as
	// mlir-opt's --mlir-print-ir-before/-after write them.
	PrintBefore []string
	PrintAfter  []string
	// PrintAfterChange prints the IR after a pass only when the pass
	// changed the graph (mlir-opt's --mlir-print-ir-after-change); with
	// PrintAfter empty it applies to every pass.
	PrintAfterChange bool
	Print            io.Writer
	// DumpDir receives the IR before the first pass (00-input.ir) and after
	// every pass (NN-name.ir).
	DumpDir string
	// Instruments observe the run: their hooks are called before and
	// after every pass, in order (instrument.go).
	Instruments []Instrument
	// Check, when set, validates every pass by execution (translation
	// validation, check.go): the graph runs on the CPU reference executor
	// before the first pass and after every pass that changed it, and the
	// run fails at the first pass whose outputs differ from those of the
	// graph before it by more than Check.Tol.
	Check *CheckOptions
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
	Snapshots []Snapshot  // with Options.Snapshots
	Checks    []CheckStat // with Options.Check: one per pass that ran
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
	inst, err := opts.instruments(out, res)
	if err != nil {
		return nil, res, err
	}
	var ran []string
	for i, ps := range p {
		for _, in := range inst {
			if in.Before == nil {
				continue
			}
			if err := in.Before(ps, i, out); err != nil {
				return nil, res, fmt.Errorf("passes: before pass %s (after %s): %s: %w", ps.Name, ranList(ran), in.Name, err)
			}
		}
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
		st.Changed, st.RuleHits, st.Stats, st.NodesAfter = changed, c.hits, c.stats, out.NumOps()
		res.Passes = append(res.Passes, st)
		if opts.Snapshots {
			res.Snapshots = append(res.Snapshots, Snapshot{Pass: ps.Name, Graph: out.Clone()})
		}
		for _, in := range inst {
			if in.After == nil {
				continue
			}
			if err := in.After(ps, i, out, st); err != nil {
				return nil, res, fmt.Errorf("passes: pass %s (after %s): %s: %w", ps.Name, ranList(ran), in.Name, err)
			}
		}
		ran = append(ran, ps.Name)
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

// newDumper makes dir, writes the input graph g there as 00-input.ir and
// returns the instrument that writes NN-name.ir after every pass.
func newDumper(dir string, g *ir.Graph) (Instrument, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Instrument{}, fmt.Errorf("passes: dump dir: %w", err)
	}
	if err := dump(dir, "00-input.ir", g); err != nil {
		return Instrument{}, err
	}
	return Instrument{Name: "dump-dir",
		After: func(p Pass, i int, g *ir.Graph, _ PassStat) error {
			return dump(dir, fmt.Sprintf("%02d-%s.ir", i+1, p.Name), g)
		}}, nil
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
