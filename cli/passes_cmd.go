package cli

import (
	"bytes"
	"flag"
	"fmt"
	"github.com/irtool/irtool/internal/jsonout"
	"github.com/irtool/irtool/models/modelfile"
	"io"
	"strings"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/internal/safeio"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/passes"
)

func init() {
	register(&command{
		Name:    "passes",
		Summary: "list the optimisation passes, their rewrite rules and the fused ops",
		Usage: `irtool passes [--json]
       irtool passes [MODEL.gguf|FILE.ir] [--passes LIST] [-o FILE.ir] [--json]
                     [--print-ir-after PASS] [--print-ir-before PASS] [--print-ir-after-all]
                     [--print-ir-after-change] [--dump-dir DIR] [--check [--check-tol X] [--check-steps N]]

Without a model and without flags but --json, lists every registered
pass in registration order: whether it is in the default pipeline,
whether it is required, what it does and the rewrite rules it applies
(name, pattern, description); then the ordering constraints between
passes and the ops the passes introduce (fused ops, concat). --passes of
compile and run takes a comma-separated list of these names, "default"
or "none".

With a model (a GGUF file or IR text), or with any other flag (then on
the embedded model), runs the pipeline --passes on its graph, prints the
optimised graph as IR text (on stdout, or to -o FILE.ir) and the
per-pass table on stderr; --json prints the per-pass records instead of
the IR. The --print-ir-* flags print the IR before or after passes to
stderr (mlir-opt's flags and headers); --dump-dir keeps the IR after
every pass as DIR/NN-PASS.ir.

--check validates every pass by execution: the graph runs on the CPU
reference executor before the first pass and after each pass that
changed it, on a prefill of "Once upon a time" and --check-steps greedy
decode steps, and its logits and KV cache are compared with those of the
graph before the pass. One line per pass goes to stdout ("check
fuse-norm: bit-identical (4 steps)", or max|Δ| and where); the IR is
written only with -o. The run fails, naming the pass, at the first pass
past --check-tol.`,
		Run: cmdPasses,
	})
}

func cmdPasses(reg *irtool.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("passes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print one JSON object (docs/CLI.md)")
	list := fs.String("passes", "default", "the pass pipeline `LIST` to run on the model, as for compile")
	out := fs.String("o", "", "write the optimised IR to `FILE` instead of stdout")
	var pf passFlags
	pf.declare(fs)
	dumpDir := fs.String("dump-dir", "", "write the IR after every pass into `DIR` as NN-pass.ir (00-input.ir first)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagError(err)
	}
	if len(pos) > 1 {
		return usageError(stderr, "passes", "want at most one model path, got %q", pos)
	}
	// A model, or a flag that only a run has, runs the pipeline (on the
	// embedded model without one); otherwise the passes are listed.
	run := len(pos) == 1
	fs.Visit(func(f *flag.Flag) { run = run || f.Name != "json" })
	if run {
		path := ""
		if len(pos) == 1 {
			path = pos[0]
		}
		return runPassesOn(reg, path, *list, *out, *dumpDir, pf, *asJSON, stdout, stderr)
	}
	all, err := passes.Describe(reg.Passes, reg.Ops)
	if err != nil {
		fmt.Fprintf(stderr, "irtool passes: %v\n", err)
		return 1
	}
	if *asJSON {
		if err := jsonout.Write(stdout, all); err != nil {
			fmt.Fprintf(stderr, "irtool passes: %v\n", err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(stdout, "default pipeline: %s\n\n", strings.Join(all.Default, ","))
	for _, p := range all.Passes {
		var tags []string
		if p.InDefault {
			tags = append(tags, "default")
		}
		if p.Required {
			tags = append(tags, "required")
		}
		tag := ""
		if len(tags) > 0 {
			tag = " [" + strings.Join(tags, ", ") + "]"
		}
		fmt.Fprintf(stdout, "%s%s\n    %s\n", p.Name, tag, p.Doc)
		for _, r := range p.Rules {
			fmt.Fprintf(stdout, "    rule %s: %s\n        pattern %s\n", r.Name, r.Doc, r.Pattern)
		}
	}
	fmt.Fprintln(stdout, "\nordering constraints:")
	for _, c := range all.Constraints {
		fmt.Fprintf(stdout, "    %s before %s: %s\n", c.Before, c.After, c.Why)
	}
	fmt.Fprintln(stdout, "\nops the passes introduce:")
	for _, o := range all.FusedOps {
		fmt.Fprintf(stdout, "    %s\n", o.Doc)
	}
	return 0
}

// passesRunJSON is passes --json with a model: compile's pass fields.
type passesRunJSON struct {
	Model       string         `json:"model"`
	Arch        string         `json:"arch"`
	NodesBefore int            `json:"nodes_before"`
	NodesAfter  int            `json:"nodes_after"`
	OpsBefore   map[string]int `json:"ops_before"`
	OpsAfter    map[string]int `json:"ops_after"`
	Passes      any            `json:"passes"`
}

// runPassesOn runs the pipeline list on the graph of the model at path
// (compile's passes stage) and prints the result as IR text.
func runPassesOn(reg *irtool.Context, path, list, out, dumpDir string, pf passFlags, asJSON bool, stdout, stderr io.Writer) int {
	if _, err := passesPipeline(reg, list, false); err != nil {
		return usageError(stderr, "passes", "--passes: %v", err)
	}
	flags := compileFlags{Passes: list, PassFlags: pf, DumpDir: dumpDir, Ctx: defaultCtx, KVType: "f16", KVWrite: "set_rows", Budget: compiler.DefaultBudget, ctxDefault: true, ubatchDefault: true, reg: reg}
	j, err := newCompileJob(path, flags)
	if err != nil {
		fmt.Fprintf(stderr, "irtool passes: %v\n", err)
		return 1
	}
	defer j.close()
	if err := safeio.CheckPaths(j.Source.inputs(), safeio.Outputs(safeio.Path{Flag: "-o", Path: out})); err != nil {
		fmt.Fprintf(stderr, "irtool passes: %v\n", err)
		return 1
	}
	j.Stdout, j.Stderr, j.Text = stderr, stderr, stderr
	if pf.Check && !asJSON {
		j.CheckOut = stdout
	}
	opts, err := j.Flags.options(compiler.StagePasses)
	if err == nil {
		err = j.compile(opts)
	}
	if err == nil {
		err = outPasses(j)
	}
	if err != nil {
		fmt.Fprintf(stderr, "irtool passes: %v\n", err)
		return 1
	}
	if asJSON {
		err = jsonout.Write(stdout, passesRunJSON{Model: j.Out.Model, Arch: j.Out.Arch, NodesBefore: j.Out.NodesBefore,
			NodesAfter: j.Graph().NumOps(), OpsBefore: j.Out.OpsBefore, OpsAfter: opCounts(j.Graph()), Passes: j.Out.Passes})
	} else if !pf.Check || out != "" {
		g := j.Graph()
		if model, ok := j.Source.WeightsModel(); ok {
			if g.Meta[modelfile.MetaWeights], err = modelfile.WeightsRef(model, out); err != nil {
				fmt.Fprintf(stderr, "irtool passes: %v\n", err)
				return 1
			}
		}
		var buf bytes.Buffer
		if err = ir.Print(&buf, g); err == nil {
			if out == "" || out == "-" {
				_, err = stdout.Write(buf.Bytes())
			} else {
				if err = safeio.WriteFile(out, buf.Bytes()); err == nil {
					wroteFile(stderr, "passes", out, buf.Len())
				}
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "irtool passes: %v\n", err)
		return 1
	}
	return 0
}
