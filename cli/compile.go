package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/irtool/irtool/internal/jsonout"
	"github.com/irtool/irtool/internal/safeio"
	"github.com/irtool/irtool/models/modelfile"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/compiler/summary"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/parallel"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/target"
)

// The compile command loads the model, builds its graph, hands it to the
// compile driver (package compiler, the one pipeline the CLI, runtime and
// library share) and prints what each stage produced: the human summary,
// or with --json one object (docs/CLI.md). The printers of each stage's
// part live beside it: compile_passes.go, compile_memory.go,
// compile_lower.go and compile_report.go; the records and pictures they
// print are package compiler/summary's.

func init() {
	register(&command{
		Name:    "compile",
		Summary: "build a model's graph and run the compiler stages on it",
		Usage: `irtool compile [MODEL.gguf] [--target NAME | --target-file FILE.json] [--passes LIST|none]
               [--prompt-tokens N] [--print-ir-after PASS] [--print-ir-before PASS] [--print-ir-after-all]
               [--print-ir-after-change] [--check [--check-tol X] [--check-steps N]] [--ctx N] [--ubatch N] [--strategy NAME|best]
               [--threads N] [--out DIR] [--report FILE.html] [--json]
               [--tp N] [--pp M] [--tp-sweep LIST] [--hccl-buffsize MB] [--link-algo mesh|ring]

Builds the graph of one forward step of MODEL (default: the embedded
stories260K), then runs the compiler's stages in order: the pass pipeline,
memory planning for the worst case (n_tokens = ubatch, n_kv = ctx) and for
decode (n_tokens = 1), partition and lowering. Without --json it prints a
summary per stage; --json prints one object (see docs/CLI.md). On an NPU
target the cost model predicts the decode step (eager and ACL graph) and
the prefill of --prompt-tokens tokens, for irtool's program and for the
program llama.cpp's CANN backend runs for the same file (irtool targets
lists the targets and their costs). With --tp
and/or --pp every rank's graph goes through the stages too, its device
memory (HCCL buffers included) is checked, and the link model predicts the
decode step; --tp-sweep predicts it at several degrees.`,
		Run:   cmdCompile,
		Flags: func(fs *flag.FlagSet) { new(compileFlags).declare(fs) },
	})
}

// compileFlags are every compile flag; stages read the ones they own.
type compileFlags struct {
	Passes        string
	PassFlags     passFlags
	DumpDir       string
	JSON          bool
	Ctx           int64
	UBatch        int64
	KVType        string
	KVWrite       string
	Align         int64
	Strategy      string
	Budget        time.Duration
	ExportBuffers string
	Target        string
	Out           string
	Report        string
	MergeQKV      bool
	Requant       string
	Threads       int
	TP            tpFlags
	HCCLBuffMB    int64
	TPSweep       string
	LinkAlgo      string
	PromptTokens  int64
	TargetFile    string

	ubatchDefault bool          // --ubatch was not given: defaultUBatch, capped by the context
	ctxDefault    bool          // --ctx was not given: defaultCtx, capped by the model's context_length
	rules         *target.Rules // --target-file's rule set (nil: the defaults)
	// reg holds the registries names resolve in (passes, ops, kernels,
	// target rules, strategies).
	reg *irtool.Context
}

func (f *compileFlags) declare(fs *flag.FlagSet) {
	fs.StringVar(&f.Passes, "passes", "default", "the pass pipeline `LIST`: default, none, or comma-separated pass names in which default stands for the default pipeline (see irtool passes)")
	f.PassFlags.declare(fs)
	fs.StringVar(&f.DumpDir, "dump-dir", "", "write the IR after every pass into `DIR` as NN-pass.ir (00-input.ir first)")
	fs.BoolVar(&f.JSON, "json", false, "print one JSON object (docs/CLI.md)")
	fs.Int64Var(&f.Ctx, "ctx", defaultCtx, "KV cache cells (n_ctx), capped by the model's context_length unless given; 0: the model's context_length")
	fs.Int64Var(&f.UBatch, "ubatch", 0, "tokens per step in the planned worst case (n_ubatch), 1 ≤ N ≤ ctx (default: 512, llama.cpp's n_ubatch, or ctx when smaller)")
	fs.StringVar(&f.KVType, "kv-type", "f16", "KV cache element `TYPE`: f16 or f32")
	fs.StringVar(&f.KVWrite, "kv-write", "set_rows", "how new K/V rows reach the cache (`MODE`): set_rows (scatter by index into the whole cache; addresses never move) or cpy (llama.cpp c392e50's copy into a view at kv_head)")
	fs.Int64Var(&f.Align, "align", 0, "arena alignment in `B` bytes, a power of two ≤ 2^30 (default: the target's: 32 for cpu, 64 otherwise)")
	fs.StringVar(&f.Strategy, "strategy", "best", "memory planning `STRATEGY` (see irtool plan), or best: all of them, smallest arena")
	fs.DurationVar(&f.Budget, "budget", compiler.DefaultBudget, "safety cap on the wall time of each plan's search (best, search and exact stop at the lower bound, else after a work budget set by the problem's size, so plans do not depend on the machine); a plan it cuts short says budget_exhausted")
	fs.StringVar(&f.ExportBuffers, "export-buffers", "", "write the worst-case planning problem to `FILE` as CSV (id,lower,upper,size), sizes rounded to the alignment, so irtool plan FILE scores the same instance")
	fs.StringVar(&f.Target, "target", compiler.DefaultTarget, "the target `NAME`: ascend910b (the 910B3), ascend910b1..ascend910b4, ascend310p, ascend310b, ascend310b-strict or cpu (irtool targets prints them)")
	fs.StringVar(&f.TargetFile, "target-file", "", "compile for the target profile in `FILE` (JSON, the format irtool targets --json prints) under the file's own name; overrides --target")
	fs.StringVar(&f.Out, "out", "", "write program.json, partition.dot and segments.dot into `DIR`")
	fs.StringVar(&f.Report, "report", "", "write the self-contained HTML report of every stage to `FILE`")
	fs.BoolVar(&f.MergeQKV, "merge-qkv", false, "merge Q, K and V projections sharing an input into one matmul")
	fs.StringVar(&f.Requant, "requant", "", "re-quantise the weights the target cannot multiply to `TYPE`: q8_0 or q4_0")
	fs.IntVar(&f.Threads, "threads", 0, "concurrent searches of the memory planner's exact search (0 = GOMAXPROCS); compile's plans are bounded by work and run the search's phases one after the other so that they do not depend on the machine, so it changes neither the output nor the plans")
	f.TP.declare(fs)
	f.TP.declarePP(fs)
	fs.Int64Var(&f.HCCLBuffMB, "hccl-buffsize", 0, "with --tp or --pp, each communicator's HCCL buffer in `MB`, counted twice (send and receive) in every rank's device memory (default: the environment's HCCL_BUFFSIZE, else CANN's default 200)")
	fs.StringVar(&f.LinkAlgo, "link-algo", "", "with --tp, --pp or --tp-sweep, the collective `ALGORITHM` of the link model: mesh or ring (default: the target's, mesh on ascend910b)")
	fs.Int64Var(&f.PromptTokens, "prompt-tokens", compiler.DefaultPromptTokens, "the prompt `N` of the prefill predictions (predicted.prefill_tok_per_s and llama.cpp's; llama-bench's pp512 by default)")
	fs.StringVar(&f.TPSweep, "tp-sweep", "", "predict the decode step at each tensor-parallel degree of `LIST` (comma-separated, e.g. 1,2,4,8) with the link model, instead of compiling every rank")
}

// compileJSON is the --json output. Each stage fills its own fields with
// its own types; docs/CLI.md documents them.
type compileJSON struct {
	Model        string         `json:"model"`
	Arch         string         `json:"arch"`
	Target       string         `json:"target"`
	NodesBefore  int            `json:"nodes_before"`
	NodesAfter   int            `json:"nodes_after"`
	OpsBefore    map[string]int `json:"ops_before"`
	OpsAfter     map[string]int `json:"ops_after"`
	Passes       any            `json:"passes"`
	Memory       any            `json:"memory,omitempty"`
	MemoryDecode any            `json:"memory_decode,omitempty"`
	Partition    any            `json:"partition,omitempty"`
	Program      any            `json:"program,omitempty"`
	Predicted    any            `json:"predicted,omitempty"`
	// PredictedLlamaCpp is the same prediction for the program llama.cpp's
	// CANN backend runs for the file; VsLlamaCpp the aclnn operators whose
	// eager decode time differs most between the two.
	PredictedLlamaCpp any                  `json:"predicted_llamacpp,omitempty"`
	VsLlamaCpp        []summary.KernelDiff `json:"vs_llamacpp,omitempty"`
	// DeviceMemory is one device's memory (compiler.DeviceMemory).
	DeviceMemory any `json:"device_memory,omitempty"`
	// TP, PP and Ranks: with --tp N and/or --pp M, the split and each
	// rank's stages; Parallel the link model's prediction of the step.
	TP       *parallel.TPInfo     `json:"tp,omitempty"`
	PP       *parallel.PPInfo     `json:"pp,omitempty"`
	Ranks    []parallel.Rank      `json:"ranks,omitempty"`
	Parallel *parallel.Prediction `json:"parallel,omitempty"`
	// TPSweep: with --tp-sweep, the prediction at each degree.
	TPSweep []parallel.SweepRow `json:"tp_sweep,omitempty"`
}

// compileJob is one compile run: the model, the graph as built and, once
// the driver ran, its Result.
type compileJob struct {
	Flags     compileFlags
	ModelPath string
	Source    *modelSource
	File      *gguf.File // the weights; nil for IR text that names none
	Model     *models.Model
	Input     *ir.Graph // the graph as built, never modified
	R         *compiler.Result
	// Warning is a context past the model's training context (ctxWarning),
	// printed on stderr by the command; "" if none.
	Warning string
	// Split holds the ranks of --tp/--pp, split before the first stage.
	Split []parallel.RankModel
	// Forecast and LlamaCpp are the prefill forecast of irtool's program
	// and llama.cpp's program (compile_forecast.go); forecast says to make
	// them (not for the ranks of a split model).
	Forecast, LlamaCpp *compiler.Forecast
	forecast           bool
	Out                compileJSON
	// Text collects the human summary (printed without --json);
	// CheckOut, when set, receives the --check lines instead.
	Text     io.Writer
	CheckOut io.Writer
	Stdout   io.Writer
	Stderr   io.Writer
}

// Graph is the latest graph: the driver's, else the graph as built.
func (j *compileJob) Graph() *ir.Graph {
	if j.R != nil {
		return j.R.Graph()
	}
	return j.Input
}

// options are the driver options of the flags, up to stage until.
func (f compileFlags) options(until compiler.Stage) (compiler.Options, error) {
	o := compiler.Options{
		Target: f.Target, Passes: f.Passes, MergeQKV: f.MergeQKV,
		PassOptions: passes.Options{Snapshots: f.Report != "", DumpDir: f.DumpDir}, // the report shows every pass
		Ctx:         f.Ctx, UBatch: f.UBatch, Align: f.Align, Strategy: f.Strategy, Budget: f.Budget,
		KVWrite: f.KVWrite, Until: until, Threads: f.Threads, Rules: f.rules,
	}
	if f.reg != nil {
		o = f.reg.CompileOptions(o)
	}
	if err := flagRange("--threads", int64(f.Threads), 0, maxThreads, "GOMAXPROCS"); err != nil {
		return o, err
	}
	if o.Budget <= 0 {
		return o, fmt.Errorf("--budget must be positive, got %v", f.Budget)
	}
	if f.Requant != "" {
		dt, ok := ir.ParseDType(strings.ToLower(f.Requant))
		if !ok || dt != ir.Q8_0 && dt != ir.Q4_0 {
			return o, fmt.Errorf("--requant %q: want q8_0 or q4_0", f.Requant)
		}
		o.Requant = dt
	}
	return o, nil
}

// compile runs the driver on the job's graph up to stage until; text
// goes where the job's writers say.
func (j *compileJob) compile(opts compiler.Options) error {
	if opts.Requant != 0 {
		if j.File == nil {
			return &compiler.StageError{Stage: compiler.StagePartition, Err: fmt.Errorf("--requant: %w", modelfile.ErrNoWeights)}
		}
		opts.Weights = j.File
	}
	report := j.CheckOut
	if report == nil {
		report = j.Text
	}
	if err := j.instrument(&opts, report); err != nil {
		return &compiler.StageError{Stage: compiler.StagePasses, Err: err}
	}
	r, err := compiler.Compile(context.Background(), j.Input, opts)
	if r != nil {
		j.R = r
	}
	return err
}

// checkShape checks the step shapes and the model flags: an error is a
// usage error. The caller sets ctxDefault (--ctx not given) first.
//
// --ctx, when not given, is defaultCtx capped by the model's
// context_length, and --ctx 0 is the context_length, as for run; --ubatch
// 0 (not given) is defaultUBatch capped by the context. newCompileJob
// resolves them once the model is open (resolveShape).
func (f *compileFlags) checkShape() error {
	if f.Ctx < 0 || f.Ctx > maxCtx {
		return fmt.Errorf("--ctx %d: want 0 (the model's context_length) or 1..%d", f.Ctx, maxCtx)
	}
	f.ubatchDefault = f.UBatch == 0
	if f.UBatch < 0 || f.Ctx > 0 && !f.ctxDefault && f.UBatch > f.Ctx {
		return errors.New("--ubatch must be in [1, ctx]")
	}
	if f.Align != 0 && (f.Align < 0 || f.Align > 1<<30 || f.Align&(f.Align-1) != 0) {
		return fmt.Errorf("--align %d: want a power of two up to 2^30", f.Align)
	}
	if f.PromptTokens < 1 || f.PromptTokens > maxCtx {
		return fmt.Errorf("--prompt-tokens %d: want 1..%d", f.PromptTokens, maxCtx)
	}
	_, err := models.ParseOptions(max(f.Ctx, 1), f.KVType, f.KVWrite)
	return err
}

// resolveShape sets the context of --ctx from the model's context_length
// (resolveCtx) and --ubatch 0 to defaultUBatch capped by the context. It
// returns the warning of a context past the training one ("" if none).
func (f *compileFlags) resolveShape(file *gguf.File) (string, error) {
	hp, err := models.ReadHParams(file)
	if err != nil {
		return "", err
	}
	zero := f.Ctx == 0
	f.Ctx = resolveCtx(f.Ctx, !f.ctxDefault, hp.NCtxTrain)
	if zero && f.Ctx > maxCtx {
		return "", fmt.Errorf("--ctx 0: the model's context_length %d is more than %d; give --ctx", f.Ctx, maxCtx)
	}
	if f.UBatch > f.Ctx {
		return "", fmt.Errorf("--ubatch %d is more than the context (%d)", f.UBatch, f.Ctx)
	}
	if f.UBatch == 0 {
		f.UBatch = min(defaultUBatch, f.Ctx)
	}
	if f.ctxDefault {
		return "", nil
	}
	return ctxWarning(f.Ctx, hp.NCtxTrain), nil
}

// checkOutputs checks the output flags before any work: a stage that ran
// for minutes must not then fail on a path that was never usable.
func (f *compileFlags) checkOutputs() error {
	if f.Requant != "" {
		if dt, ok := ir.ParseDType(strings.ToLower(f.Requant)); !ok || dt != ir.Q8_0 && dt != ir.Q4_0 {
			return fmt.Errorf("--requant %q: want q8_0 or q4_0", f.Requant)
		}
	}
	return safeio.CheckPaths(nil, f.outputs())
}

// outputs are the files and directories the flags write.
func (f *compileFlags) outputs() []safeio.Path {
	return safeio.Outputs(
		safeio.Path{Flag: "--report", Path: f.Report},
		safeio.Path{Flag: "--export-buffers", Path: f.ExportBuffers},
		safeio.Path{Flag: "--out", Path: f.Out, Dir: true, Names: []string{"program.json", "partition.dot", "segments.dot"}},
		safeio.Path{Flag: "--dump-dir", Path: f.DumpDir, Dir: true, Names: []string{"[0-9][0-9]-*.ir"}},
	)
}

// newCompileJob loads the model at path ("" = embedded; a GGUF file or IR
// text, see package models/modelfile) and builds its graph: the state every stage starts
// from. Its writers discard until the caller sets them; the caller calls
// j.close.
func newCompileJob(path string, flags compileFlags) (*compileJob, error) {
	src, err := openSource(flags.reg, path)
	if err != nil {
		return nil, err
	}
	// Errors past parsing name the model.
	fail := func(err error) (*compileJob, error) {
		src.Close()
		return nil, fmt.Errorf("%s: %w", modelName(path), err)
	}
	warning := ""
	if src.IsIR() {
		def, _ := models.ParseOptions(defaultCtx, "f16", "set_rows")
		opts, err := models.ParseOptions(max(flags.Ctx, 1), flags.KVType, flags.KVWrite)
		if err != nil {
			return fail(err)
		}
		if flags.Ctx == 0 || flags.ctxDefault {
			opts.NCtx = def.NCtx // what the IR says
		}
		if opts, err = src.Options(opts, def); err != nil {
			src.Close()
			return nil, err
		}
		if _, fixed := src.Graph.Meta[modelfile.MetaNCtx]; !fixed && src.File != nil {
			// No meta n_ctx: --ctx resolves as for the weights' GGUF.
			hp, err := models.ReadHParams(src.File)
			if err != nil {
				return fail(err)
			}
			opts.NCtx = resolveCtx(flags.Ctx, !flags.ctxDefault, hp.NCtxTrain)
		}
		flags.Ctx, flags.KVType, flags.KVWrite = opts.NCtx, opts.KVType.String(), opts.KVWrite.String()
		if flags.ubatchDefault {
			flags.UBatch = min(defaultUBatch, flags.Ctx)
		}
		if flags.UBatch > flags.Ctx {
			src.Close()
			return nil, fmt.Errorf("--ubatch %d exceeds the IR's n_ctx %d", flags.UBatch, flags.Ctx)
		}
	} else if warning, err = flags.resolveShape(src.File); err != nil {
		return fail(err)
	}
	opts, err := models.ParseOptions(flags.Ctx, flags.KVType, flags.KVWrite)
	if err != nil {
		return fail(err)
	}
	j := &compileJob{Flags: flags, ModelPath: path, Source: src, File: src.File, Warning: warning,
		Text: io.Discard, Stdout: io.Discard, Stderr: io.Discard}
	if j.Model, err = src.Build(opts); err != nil {
		return fail(err)
	}
	if model, ok := src.WeightsModel(); ok && flags.DumpDir != "" {
		// The dumps name the model, so each one runs as a model file: the
		// weights path is relative to the dump directory, also for IR
		// input, whose own "weights" is relative to the IR file.
		ref, err := modelfile.WeightsRef(model, filepath.Join(flags.DumpDir, "00-input.ir"))
		if err != nil {
			src.Close()
			return nil, err
		}
		if j.Model.Graph.Meta == nil {
			j.Model.Graph.Meta = map[string]string{}
		}
		j.Model.Graph.Meta[modelfile.MetaWeights] = ref
	}
	j.Input = j.Model.Graph
	j.Out = compileJSON{Model: modelName(path), Arch: j.Model.HParams.Arch, Target: flags.Target,
		NodesBefore: j.Input.NumOps(), OpsBefore: opCounts(j.Input), Passes: []any{}}
	return j, nil
}

// close releases the model files.
func (j *compileJob) close() { j.Source.Close() }

func opCounts(g *ir.Graph) map[string]int {
	return g.OpCounts()
}

func cmdCompile(reg *irtool.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("compile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	flags := compileFlags{reg: reg}
	flags.declare(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagError(err)
	}
	if len(pos) > 1 {
		return usageError(stderr, "compile", "want at most one model path, got %q", pos)
	}
	flags.ctxDefault = !ctxGiven(fs)
	path := ""
	if len(pos) == 1 {
		path = pos[0]
	}
	if err := flags.checkCompile(); err != nil {
		return usageError(stderr, "compile", "%v", err)
	}
	j, err := newCompileJob(path, flags)
	if err != nil {
		fmt.Fprintf(stderr, "irtool compile: %v\n", err)
		return 1
	}
	defer j.close()
	if err := safeio.CheckPaths(j.Source.inputs(), j.Flags.outputs()); err != nil {
		fmt.Fprintf(stderr, "irtool compile: %v\n", err)
		return 1
	}
	if f := &j.Flags.TP; f.Ranks > 1 || f.Stages > 1 {
		// The split and the link model's flags are checked before the
		// first stage: a degree the model cannot take is refused at once.
		if j.Split, err = splitModel(j, f); err == nil {
			if _, err = linkProfile(j.Flags); err == nil {
				_, err = parallel.HCCLBuffMB(j.Flags.HCCLBuffMB)
			}
		}
		if err != nil {
			fmt.Fprintf(stderr, "irtool compile: %s: %v\n", j.Out.Model, err)
			return 1
		}
	}
	j.Stdout, j.Stderr = stdout, stderr
	if j.Warning != "" {
		fmt.Fprintf(stderr, "irtool compile: %s: %s\n", j.Out.Model, j.Warning)
	}
	j.forecast = true
	if j.Flags.JSON {
		j.Text = io.Discard
	} else {
		j.Text = stdout
	}
	fmt.Fprintf(j.Text, "%s: %s, %d layers, %d ops as built (ctx %d, ubatch %d)\n",
		j.Out.Model, j.Out.Arch, j.Model.HParams.NLayer, j.Out.NodesBefore, j.Flags.Ctx, j.Flags.UBatch)
	opts, _ := j.Flags.options(0) // the shape the model resolved
	opts.Progress = func(s compiler.Stage) { fmt.Fprintf(stderr, "irtool compile: %s\n", s) }
	cerr := j.compile(opts)
	if err := outStages(j); err != nil {
		fmt.Fprintf(stderr, "irtool compile: %v\n", err)
		return 1
	}
	if cerr != nil {
		fmt.Fprintf(stderr, "irtool compile: %v\n", cerr)
		return 1
	}
	if f := &j.Flags.TP; f.Ranks > 1 || f.Stages > 1 {
		fmt.Fprintf(stderr, "irtool compile: %s over %d tensor-parallel rank(s) and %d pipeline stage(s)\n", j.Out.Model, f.Ranks, f.Stages)
		if err := compileParallel(j, opts); err != nil {
			fmt.Fprintf(stderr, "irtool compile: %s: %v\n", j.Out.Model, err)
			return 1
		}
	}
	if j.Flags.TPSweep != "" {
		fmt.Fprintf(stderr, "irtool compile: tensor-parallel sweep %s\n", j.Flags.TPSweep)
		if err := compileSweep(j, opts); err != nil {
			fmt.Fprintf(stderr, "irtool compile: %s: %v\n", j.Out.Model, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "irtool compile: report\n")
	if err := outReport(j); err != nil {
		fmt.Fprintf(stderr, "irtool compile: report: %v\n", err)
		return 1
	}
	j.Out.NodesAfter = j.Graph().NumOps()
	j.Out.OpsAfter = opCounts(j.Graph())
	if j.Flags.JSON {
		if err := jsonout.Write(stdout, j.Out); err != nil {
			fmt.Fprintf(stderr, "irtool compile: %v\n", err)
			return 1
		}
	}
	return 0
}

// checkCompile checks compile's flags before any work: the shape, then
// the flag values that name things (target, passes, strategy, outputs,
// tensor parallelism).
func (flags *compileFlags) checkCompile() error {
	if err := flags.checkShape(); err != nil {
		return err
	}
	if flags.TargetFile != "" {
		rules, name, err := readTargetFile(flags.TargetFile)
		if err != nil {
			return err
		}
		flags.rules, flags.Target = rules, name
	} else if _, err := target.Get(flags.Target); err != nil {
		return fmt.Errorf("--target: %w", err)
	}
	opts, err := flags.options(0)
	if err != nil {
		return err
	}
	if _, err := opts.Pipeline(); err != nil {
		return fmt.Errorf("--passes: %w", err)
	}
	if !flags.reg.Strategies.HasGraph(flags.Strategy) {
		return fmt.Errorf("unknown --strategy %q (have %s)", flags.Strategy, strings.Join(flags.reg.Strategies.GraphNames(), ", "))
	}
	if err := flags.checkOutputs(); err != nil {
		return err
	}
	if err := flags.TP.check(""); err != nil {
		return err
	}
	if flags.TP.Ranks > 1 && flags.Requant != "" {
		return errors.New("--requant does not apply to --tp yet")
	}
	if flags.TP.Stages > 1 && flags.Requant != "" {
		return errors.New("--requant does not apply to --pp yet")
	}
	if flags.HCCLBuffMB < 0 || flags.HCCLBuffMB > parallel.MaxHCCLBuffMB {
		return fmt.Errorf("--hccl-buffsize %d: want 1..%d MB", flags.HCCLBuffMB, parallel.MaxHCCLBuffMB)
	}
	if a := flags.LinkAlgo; a != "" && a != string(target.Mesh) && a != string(target.Ring) {
		return fmt.Errorf("--link-algo %q: want mesh or ring", a)
	}
	if flags.TPSweep != "" {
		if _, err := parseSweep(flags.TPSweep); err != nil {
			return err
		}
		if flags.TP.Ranks > 1 || flags.TP.Stages > 1 {
			return errors.New("--tp-sweep replaces --tp and --pp; give one or the other")
		}
	}
	return nil
}

// outStages prints the part of every stage that ran, also when a later
// one failed; its error names the stage.
func outStages(j *compileJob) error {
	for _, s := range []struct {
		stage compiler.Stage
		out   func(*compileJob) error
	}{
		{compiler.StagePasses, outPasses},
		{compiler.StageMemory, outMemory},
		{compiler.StagePartition, outPartition},
		{compiler.StageLower, outLower},
		{compiler.StageLower, outDeviceMemory},
	} {
		if j.R == nil || !slices.Contains(j.R.Ran, s.stage) {
			continue
		}
		if err := s.out(j); err != nil {
			return fmt.Errorf("%s: %w", s.stage, err)
		}
	}
	return nil
}
