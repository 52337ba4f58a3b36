package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/compiler/summary"
	"github.com/irtool/irtool/internal/safeio"
	"github.com/irtool/irtool/parallel"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/viz"
)

// irtool viz draws one stage of what irtool compile does. It does not
// re-implement the compiler: it runs compile's own stages (passes, memory
// planning, partition, lowering) on a job built from the same flags, stops
// after the stage the view needs, and draws what that stage left in the
// job. With --after PASS the graph after that pass replaces the pipeline's
// result before the later stages run.

func init() {
	register(&command{
		Name:    "viz",
		Summary: "draw a model's graph, memory plan, partition or segments (DOT, SVG, HTML)",
		Usage: `irtool viz [MODEL.gguf] --what graph|liveness|interference|partition|segments
           [--passes LIST|none] [--after PASS] [--ctx N] [--ubatch N] [--strategy NAME]
           [--target NAME] [--no-weights] [-o FILE.dot|.svg|.html]

Draws one stage of "irtool compile" for MODEL (default: the embedded
stories260K), running the same stages with the same flags:

  graph         the IR after the pass pipeline (or after --after PASS), as
                a DOT graph, one cluster per layer stacked top to bottom;
                symbolic shapes are kept
  liveness      the worst-case memory plan (n_tokens = ubatch, n_kv = ctx)
                as a chart: x the execution step, y the arena offset
  interference  which buffers of the same plan may share memory: a matrix
                per layer (identical layers drawn once); with .dot, the
                interference graph coloured by arena slot
  buffers       the same plan as a text table of buffers sorted by arena offset
  partition     the partitioned graph clustered by device
  segments      the lowered graph clustered by device and segment

--layer N zooms liveness, interference and buffers to one transformer
layer's steps; the liveness chart shades every other layer's steps.
--ubatch 1 plans one decode step. The format follows the extension of -o:
.dot (DOT text), .svg (Graphviz renders the DOT views; the liveness chart
and the interference matrix need nothing) or .html (one self-contained
page); viz names the file it wrote on stderr. Without -o, or with -o -, the
DOT text (the SVG for liveness and interference) goes to stdout.`,
		Run:   cmdViz,
		Flags: func(fs *flag.FlagSet) { declareVizFlags(fs, new(vizFlags)) },
	})
}

// vizFlags are viz's own flags plus the compile flags it shares.
type vizFlags struct {
	compile   compileFlags
	what      string
	after     string
	out       string
	noWeights bool
	layer     int
	rank      int
}

// vizViews lists --what values with the last compile stage each needs.
var vizViews = map[string]compiler.Stage{
	"graph":        compiler.StagePasses,
	"liveness":     compiler.StageMemory,
	"interference": compiler.StageMemory,
	"partition":    compiler.StagePartition,
	"segments":     compiler.StageLower,
	"buffers":      compiler.StageMemory,
}

func declareVizFlags(fs *flag.FlagSet, f *vizFlags) {
	// Take compile's defaults, then expose the flags viz shares with it.
	f.compile.declare(flag.NewFlagSet("compile defaults", flag.ContinueOnError))
	c := &f.compile
	fs.StringVar(&f.what, "what", "graph", "the `VIEW`: graph, liveness, interference, buffers, partition or segments (see below)")
	fs.StringVar(&f.after, "after", "", "draw the graph after `PASS` of the pipeline; later stages (memory, partition) see that graph")
	fs.StringVar(&f.out, "o", "", "the output `FILE`; its extension picks the format: .dot/.gv, .svg or .html (default: stdout)")
	fs.BoolVar(&f.noWeights, "no-weights", false, "leave weights out of graph drawings")
	fs.IntVar(&f.layer, "layer", -1, "liveness, interference, buffers: zoom to the steps of transformer layer `N` (the buffers live there, at their real offsets) (default: all layers)")
	fs.StringVar(&c.Passes, "passes", c.Passes, "the pass pipeline `LIST`, as for compile")
	fs.Int64Var(&c.Ctx, "ctx", c.Ctx, "KV cache cells (n_ctx), as for compile")
	fs.Int64Var(&c.UBatch, "ubatch", c.UBatch, "tokens per step of the planned worst case, as for compile (default: 512, or ctx when smaller)")
	fs.StringVar(&c.KVType, "kv-type", c.KVType, "KV cache element `TYPE`: f16 or f32")
	fs.StringVar(&c.KVWrite, "kv-write", c.KVWrite, "KV cache write `MODE`: set_rows or cpy (see irtool ir)")
	fs.StringVar(&c.Strategy, "strategy", c.Strategy, "memory planning `STRATEGY`, as for compile")
	fs.DurationVar(&c.Budget, "budget", c.Budget, "safety cap on the wall time of each plan's search, as for compile")
	fs.Int64Var(&c.Align, "align", c.Align, "arena alignment in `B` bytes (default: the target's)")
	fs.StringVar(&c.Target, "target", c.Target, "the target `NAME`, as for compile")
	fs.StringVar(&c.TargetFile, "target-file", "", "the target profile in `FILE`, as for compile; overrides --target")
	c.TP.declare(fs)
	c.TP.declarePP(fs)
	fs.IntVar(&f.rank, "rank", 0, "with --tp and/or --pp, draw rank `R`'s graph and stages (rank t×M+s is tensor-parallel rank t's pipeline stage s, as for compile)")
}

func cmdViz(reg *irtool.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("viz", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f vizFlags
	declareVizFlags(fs, &f)
	f.compile.reg = reg
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagError(err)
	}
	if len(pos) > 1 {
		return usageError(stderr, "viz", "want at most one model path, got %q", pos)
	}
	need, ok := vizViews[f.what]
	if !ok {
		return usageError(stderr, "viz", "--what %q: want one of graph, liveness, interference, buffers, partition, segments", f.what)
	}
	format, err := vizFormat(f.out, f.what)
	if err != nil {
		return usageError(stderr, "viz", "%v", err)
	}
	f.compile.ctxDefault = !ctxGiven(fs)
	if err := f.compile.checkShape(); err != nil {
		return usageError(stderr, "viz", "%v", err)
	}
	if c := &f.compile; c.TargetFile != "" {
		rules, name, err := readTargetFile(c.TargetFile)
		if err != nil {
			return usageError(stderr, "viz", "%v", err)
		}
		c.rules, c.Target = rules, name
	}
	if err := f.compile.TP.check(""); err != nil {
		return usageError(stderr, "viz", "%v", err)
	}
	if t := f.compile.TP; f.rank < 0 || f.rank >= t.Ranks*t.Stages {
		if t.Stages > 1 {
			return usageError(stderr, "viz", "--rank %d: want 0..%d (--tp %d, --pp %d)", f.rank, t.Ranks*t.Stages-1, t.Ranks, t.Stages)
		}
		return usageError(stderr, "viz", "--rank %d: want 0..%d (--tp %d)", f.rank, t.Ranks-1, t.Ranks)
	}
	path := ""
	if len(pos) == 1 {
		path = pos[0]
	}
	out, err := drawViz(path, &f, need, format)
	if err != nil {
		fmt.Fprintf(stderr, "irtool viz: %v\n", err)
		return 1
	}
	if f.out == "" || f.out == "-" {
		_, err = stdout.Write(out)
	} else {
		if err = safeio.WriteFile(f.out, out); err == nil {
			wroteFile(stderr, "viz", f.out, len(out))
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "irtool viz: %v\n", err)
		return 1
	}
	return 0
}

// wroteFile tells the user, on stderr, which file a command wrote: every
// command that writes a file says so ("irtool viz: wrote graph.svg (12.3 KiB)").
func wroteFile(stderr io.Writer, cmd, path string, n int) {
	fmt.Fprintf(stderr, "irtool %s: wrote %s (%s)\n", cmd, path, viz.HumanBytes(int64(n)))
}

// vizFormat picks the output format from the file name.
func vizFormat(out, what string) (string, error) {
	if what == "buffers" {
		if out != "" && out != "-" && !strings.EqualFold(filepath.Ext(out), ".txt") {
			return "", fmt.Errorf("-o %s: the buffer table is text; use .txt or stdout", out)
		}
		return "txt", nil
	}
	if out == "" || out == "-" {
		if what == "liveness" || what == "interference" {
			return "svg", nil
		}
		return "dot", nil
	}
	switch ext := strings.ToLower(filepath.Ext(out)); ext {
	case ".dot", ".gv":
		if what == "liveness" {
			return "", fmt.Errorf("-o %s: the liveness chart is SVG, not DOT; use .svg or .html", out)
		}
		return "dot", nil
	case ".svg", ".html":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("-o %s: unknown extension %q (want .dot, .svg or .html)", out, ext)
	}
}

// drawViz runs the compile stages the view needs and draws it.
func drawViz(path string, f *vizFlags, need compiler.Stage, format string) ([]byte, error) {
	opts, err := f.compile.options(need)
	if err != nil {
		return nil, err
	}
	if f.after != "" {
		p, err := opts.Pipeline()
		if err != nil {
			return nil, err
		}
		if err := checkAfter(p, f.after, f.compile.Passes); err != nil {
			return nil, err
		}
		opts.AfterPass = f.after
	}
	j, err := newCompileJob(path, f.compile)
	if err != nil {
		return nil, err
	}
	defer j.close()
	if err := safeio.CheckPaths(j.Source.inputs(), safeio.Outputs(safeio.Path{Flag: "-o", Path: f.out})); err != nil {
		return nil, err
	}
	opts, _ = j.Flags.options(need) // the shape the model resolved
	opts.AfterPass = f.after
	if f.after != "" {
		opts.PassOptions.Snapshots = true
	}
	if t := &j.Flags.TP; t.Ranks > 1 || t.Stages > 1 {
		rms, err := splitModel(j, t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", modelName(path), err)
		}
		rm := rms[f.rank]
		j.Model, j.Input = rm.Model, rm.Model.Graph
		if opts.Rules, err = parallel.Rules(); err != nil {
			return nil, err
		}
		path = fmt.Sprintf("%s rank %d of %d", modelName(path), f.rank, len(rms))
		if t.Stages > 1 {
			path += fmt.Sprintf(" (stage %d)", rm.Stage)
		}
	}
	if err := j.compile(opts); err != nil {
		return nil, err
	}
	title := fmt.Sprintf("%s (%s)", modelName(path), f.what)
	if f.after != "" {
		title = fmt.Sprintf("%s after %s", modelName(path), f.after)
	}

	what := modelName(path) + ": worst case"
	if j.Flags.UBatch == 1 {
		what = modelName(path) + ": decode step"
	}
	if f.after != "" {
		what = modelName(path) + " after " + f.after + ":"
	}
	return summary.Draw(context.Background(), j.R, summary.Picture{View: f.what, Format: format, Title: title, ChartWhat: what,
		UBatch: j.Flags.UBatch, Ctx: j.Flags.Ctx, Layer: f.layer, NoWeights: f.noWeights, Target: j.Flags.Target})
}

// checkAfter checks that --after names a pass of the pipeline p.
func checkAfter(p passes.Pipeline, name, list string) error {
	var names []string
	for _, n := range p.Names() {
		if n == name {
			return nil
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("--after %s: the pipeline %q ran no passes", name, list)
	}
	return fmt.Errorf("--after %s: no such pass in the pipeline (it ran %s)", name, strings.Join(names, ", "))
}
