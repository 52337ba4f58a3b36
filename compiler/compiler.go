// Package compiler is irtool's one compile driver: it takes a model's
// graph through the compiler's stages in order and returns every stage's
// result as a field of one Result.
//
//	graph as built ─► passes ─► memory plans (worst case, decode)
//	               ─► requantisation ─► partition ─► lowering + prediction
//
// The irtool CLI (compile, viz, passes), runtime/program and library users
// (irtool.Context.Compile) all call it, so a stage's options, defaults and
// errors are the same everywhere. Each stage reads the fields earlier
// stages filled; Options.Until stops after a stage, Options.NoMemory skips
// the memory plans (a runtime session plans each shape bucket itself, with
// Result.Lower).
//
// The package sits above lower/cann and below runtime and cmd
// (docs/ARCHITECTURE.md, "Packages follow the data flow").
package compiler

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/lower/cann"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/partition"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/target"
)

// Stage names one stage of the pipeline.
type Stage int

// The stages, in the order Compile runs them.
const (
	StagePasses Stage = iota + 1
	StageMemory
	StagePartition
	StageLower
)

// Stages lists every stage in order.
func Stages() []Stage { return []Stage{StagePasses, StageMemory, StagePartition, StageLower} }

func (s Stage) String() string {
	switch s {
	case StagePasses:
		return "passes"
	case StageMemory:
		return "memory"
	case StagePartition:
		return "partition"
	case StageLower:
		return "lower"
	}
	return "stage(" + strconv.Itoa(int(s)) + ")"
}

// DefaultTarget is the target of Options.Target "".
const DefaultTarget = "ascend910b"

// DefaultBudget is the planning budget of Options.Budget 0.
const DefaultBudget = 2 * time.Second

// Options configure Compile. The zero value compiles for DefaultTarget
// with the default pass pipeline, the "best" strategy and the graph's own
// n_ctx.
type Options struct {
	// Target names the target profile (DefaultTarget when empty).
	Target string
	// Passes is the pass pipeline as passes.Registry.Parse reads it
	// ("" means default, "none" the required passes only); MergeQKV adds
	// merge-qkv when the pipeline lacks it.
	Passes   string
	MergeQKV bool
	// PassOptions are handed to passes.Run (snapshots, print-after, the
	// dump directory, rewrite limits).
	PassOptions passes.Options
	// AfterPass, when set, continues from the graph after that pass of the
	// pipeline instead of the graph after the whole pipeline (irtool viz
	// --after); it needs PassOptions.Snapshots.
	AfterPass string

	// Ctx is the KV cells of the planned steps (n_kv; 0: the graph's n_ctx
	// meta value, else 256) and UBatch the tokens of the worst case
	// (n_tokens; 0: Ctx). Decode is one token over Ctx cells.
	Ctx, UBatch int64
	// Align overrides the target's arena alignment (0: the target's).
	Align int64
	// Strategy is the memory planning strategy of every plan ("" : best);
	// any name a plan reports is accepted (planner.StrategyOf). Every plan
	// is planner.MemoryOptions.Deterministic: its search is bounded by work
	// (planner.WorkBudget of the problem's size), so the same graph gives
	// the same plan on any machine; Budget (0: DefaultBudget) is only a
	// safety cap on its wall time, and a plan it cut short says so
	// (planner.MemoryPlan.BudgetExhausted).
	Strategy string
	Budget   time.Duration
	// Threads bounds the planner's concurrent searches (0: GOMAXPROCS);
	// the plans do not depend on it.
	Threads int
	// NoMemory skips the memory stage (runtime/program plans per bucket).
	NoMemory bool

	// Requant re-quantises the weights the target cannot multiply to q8_0
	// or q4_0 before partitioning (0: none); Weights are the stored
	// weights it reads.
	Requant ir.DType
	Weights eval.WeightSource
	// KVWrite is the KV-cache write mode recorded in the lowered program
	// ("": the graph's kv_write meta value).
	KVWrite string
	// PrefillGraph lowers the segments of a prefill step (n_tokens > 1)
	// as capturable (cann.Options.PrefillGraph; by default prefill runs
	// eagerly, as upstream).
	PrefillGraph bool

	// LlamaCpp costs the program as llama.cpp's CANN backend drives the
	// target (target.Profile.LlamaCpp): ForecastPrograms sets it for
	// llama.cpp's program.
	LlamaCpp bool

	// Until is the last stage to run (0: every stage).
	Until Stage
	// Progress, when set, is called before each stage runs.
	Progress func(Stage)

	// The registries the stages consult (nil: each package's default);
	// irtool.Context.Compile fills them from the context.
	PassRegistry *passes.Registry
	Rules        *target.Rules
	Strategies   *planner.StrategySet
}

// PlannedStep is one planned step of the memory stage.
type PlannedStep struct {
	// What is "worst case" or "decode".
	What string
	// Bindings are the symbol values the graph was specialised with (only
	// the symbols it uses).
	Bindings ir.Bindings
	// Plan is the plan on the target's layout; its Graph is the
	// specialised graph and its Order the execution order to use.
	Plan *planner.MemoryPlan
	// Compare puts the same graph on ggml's layout too.
	Compare Compare
}

// Result holds every stage's result; a stage that did not run leaves its
// fields nil. When Compile fails, the Result holds the stages before the
// failing one.
type Result struct {
	// Options are the options used, defaults filled in.
	Options Options
	// Profile is the target profile (Options.Align overrides its Align in
	// the plans and the lowering, not here).
	Profile *target.Profile
	// Input is the graph as given (never modified).
	Input *ir.Graph
	// Pipeline, PassResult and Optimised are the passes stage: the
	// pipeline run, its statistics (and snapshots) and the graph after it
	// (after Options.AfterPass when set).
	Pipeline   passes.Pipeline
	PassResult *passes.Result
	Optimised  *ir.Graph
	// Memory and MemoryDecode are the memory stage's two plans.
	Memory, MemoryDecode *PlannedStep
	// Requant and RequantSource are the requantisation (Options.Requant):
	// its report and the weight source that converts on read.
	Requant       *partition.RequantReport
	RequantSource *partition.RequantSource
	// Partitioned is the graph placed for the target, transfers included,
	// and Partition the placement; PartitionBindings the step it priced.
	Partitioned       *ir.Graph
	Partition         *partition.Result
	PartitionBindings ir.Bindings
	// Program is the lowered decode step, ProgramPlan its memory plan and
	// Prediction the cost model's figures for it.
	Program     *cann.Program
	ProgramPlan *planner.MemoryPlan
	Prediction  *cann.Prediction
	// Ran lists the stages that completed.
	Ran []Stage
}

// Graph returns the latest graph: the partitioned one, else the optimised
// one, else the input.
func (r *Result) Graph() *ir.Graph {
	switch {
	case r.Partitioned != nil:
		return r.Partitioned
	case r.Optimised != nil:
		return r.Optimised
	}
	return r.Input
}

// StageError is a stage's failure.
type StageError struct {
	Stage Stage
	Err   error
}

func (e *StageError) Error() string { return e.Stage.String() + ": " + e.Err.Error() }
func (e *StageError) Unwrap() error { return e.Err }

// Check validates the options that name things (target, pipeline,
// strategy, shapes) without compiling anything: callers that take them
// from flags report a usage error before loading a model.
func (o Options) Check() error {
	o, err := o.withDefaults(nil)
	if err != nil {
		return err
	}
	if _, err := o.profile(); err != nil {
		return err
	}
	if _, err := o.Pipeline(); err != nil {
		return err
	}
	return nil
}

// withDefaults fills the defaults; g (may be nil) gives n_ctx.
func (o Options) withDefaults(g *ir.Graph) (Options, error) {
	if o.Target == "" {
		o.Target = DefaultTarget
	}
	if o.Strategy == "" {
		o.Strategy = planner.StrategyBest
	}
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	if o.Strategies == nil {
		o.Strategies = planner.DefaultStrategies()
	}
	if o.PassRegistry == nil {
		o.PassRegistry = passes.DefaultRegistry()
	}
	if o.Rules == nil {
		o.Rules = target.DefaultRules()
	}
	switch {
	case o.Budget < 0:
		return o, fmt.Errorf("compiler: budget must be positive, got %v", o.Budget)
	case o.Threads < 0:
		return o, fmt.Errorf("compiler: threads %d must not be negative", o.Threads)
	case o.Ctx < 0 || o.UBatch < 0:
		return o, fmt.Errorf("compiler: ctx %d and ubatch %d must not be negative", o.Ctx, o.UBatch)
	case o.Align != 0 && (o.Align < 0 || o.Align > 1<<30 || o.Align&(o.Align-1) != 0):
		return o, fmt.Errorf("compiler: alignment %d: want a power of two up to 2^30", o.Align)
	case o.Requant != 0 && o.Requant != ir.Q8_0 && o.Requant != ir.Q4_0:
		return o, fmt.Errorf("compiler: requantise to %s: want q8_0 or q4_0", o.Requant)
	case o.AfterPass != "" && !o.PassOptions.Snapshots:
		return o, fmt.Errorf("compiler: after pass %s: needs PassOptions.Snapshots", o.AfterPass)
	}
	if !o.Strategies.HasGraph(o.Strategy) {
		return o, fmt.Errorf("compiler: unknown strategy %q (have %s)", o.Strategy, joinNames(o.Strategies.GraphNames()))
	}
	if g != nil && o.Ctx == 0 {
		o.Ctx = 256
		if v, err := strconv.ParseInt(g.Meta["n_ctx"], 10, 64); err == nil && v > 0 {
			o.Ctx = v
		}
	}
	if o.UBatch == 0 {
		o.UBatch = o.Ctx
	}
	if o.Ctx > 0 && o.UBatch > o.Ctx {
		return o, fmt.Errorf("compiler: ubatch %d exceeds ctx %d", o.UBatch, o.Ctx)
	}
	return o, nil
}

func (o Options) profile() (*target.Profile, error) {
	prof, err := o.Rules.Profile(o.Target)
	if err != nil {
		return nil, fmt.Errorf("compiler: %w", err)
	}
	if o.LlamaCpp {
		prof = prof.LlamaCpp()
	}
	return prof, nil
}

// Pipeline parses Passes (plus merge-qkv with MergeQKV) with the pass
// registry.
func (o Options) Pipeline() (passes.Pipeline, error) {
	if o.PassRegistry == nil {
		o.PassRegistry = passes.DefaultRegistry()
	}
	p, err := o.PassRegistry.Parse(o.Passes)
	if err != nil {
		return nil, err
	}
	if o.MergeQKV && !p.Contains("merge-qkv") {
		mq, ok := o.PassRegistry.Lookup("merge-qkv")
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

// Compile runs the stages on g (which it does not modify) up to
// opts.Until. An error is a *StageError naming the stage, and the Result
// holds what the stages before it produced.
func Compile(ctx context.Context, g *ir.Graph, opts Options) (*Result, error) {
	if g == nil {
		return nil, fmt.Errorf("compiler: nil graph")
	}
	opts, err := opts.withDefaults(g)
	if err != nil {
		return nil, err
	}
	prof, err := opts.profile()
	if err != nil {
		return nil, err
	}
	r := &Result{Options: opts, Profile: prof, Input: g}
	stages := []struct {
		s   Stage
		run func(context.Context, *Result) error
	}{
		{StagePasses, runPasses},
		{StageMemory, runMemory},
		{StagePartition, runPartition},
		{StageLower, runLower},
	}
	for _, st := range stages {
		if opts.Until != 0 && st.s > opts.Until {
			break
		}
		if st.s == StageMemory && opts.NoMemory {
			continue
		}
		if err := ctx.Err(); err != nil {
			return r, &StageError{st.s, err}
		}
		if opts.Progress != nil {
			opts.Progress(st.s)
		}
		if err := st.run(ctx, r); err != nil {
			return r, &StageError{st.s, err}
		}
		r.Ran = append(r.Ran, st.s)
	}
	return r, nil
}

func runPasses(_ context.Context, r *Result) error {
	p, err := r.Options.Pipeline()
	if err != nil {
		return err
	}
	r.Pipeline = p
	if name := r.Options.AfterPass; name != "" && !p.Contains(name) {
		return fmt.Errorf("after %s: the pipeline %s does not run it", name, p)
	}
	g, res, err := passes.Run(r.Input, p, r.Options.PassOptions)
	if err != nil {
		return err
	}
	r.PassResult, r.Optimised = res, g
	if name := r.Options.AfterPass; name != "" {
		for _, s := range res.Snapshots {
			if s.Pass == name && s.Graph != nil {
				r.Optimised = s.Graph.Clone()
				return nil
			}
		}
		return fmt.Errorf("after %s: no snapshot of that pass", name)
	}
	return nil
}

// stepBindings are the symbol values of a step of nTokens tokens over a
// cache of nKV cells (every row producing logits, cell 0 written).
func stepBindings(nTokens, nKV int64) ir.Bindings {
	return ir.Bindings{models.SymTokens: nTokens, models.SymKV: nKV, models.SymOutputs: nTokens, models.SymKVHead: 0}
}

// DecodeBindings are one decode step over the compiled Ctx cells: the
// step the partition prices and the lowering compiles.
func (r *Result) DecodeBindings() ir.Bindings { return stepBindings(1, r.Options.Ctx) }

// Align is the arena alignment of the plans: Options.Align, else the
// target's.
func (r *Result) Align() int64 {
	if r.Options.Align > 0 {
		return r.Options.Align
	}
	return r.Profile.Align
}

func runMemory(ctx context.Context, r *Result) error {
	g := r.Graph()
	for _, c := range []struct {
		what    string
		nTokens int64
		out     **PlannedStep
	}{
		{"worst case", r.Options.UBatch, &r.Memory},
		{"decode", 1, &r.MemoryDecode},
	} {
		b, p, err := r.planStep(ctx, g, stepBindings(c.nTokens, r.Options.Ctx), true)
		if err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
		cmp, err := compareLayouts(ctx, p.Graph, p, r.memoryOptions(true))
		if err != nil {
			return fmt.Errorf("%s: %w", c.what, err)
		}
		*c.out = &PlannedStep{What: c.what, Bindings: b, Plan: p, Compare: cmp}
	}
	return nil
}

func runPartition(_ context.Context, r *Result) error {
	g := r.Graph()
	if r.Options.Requant != 0 {
		if r.Options.Weights == nil {
			return fmt.Errorf("requantise: no weights (the model names no weight file)")
		}
		rg, src, rep, err := partition.Requant(g, r.Profile, r.Options.Weights, r.Options.Requant)
		if err != nil {
			return err
		}
		g, r.Requant, r.RequantSource = rg, rep, src
	}
	b, err := r.DecodeBindings().For(g)
	if err != nil {
		return err
	}
	pg, res, err := partition.RunOptions(g, r.Profile, partition.Options{Bindings: b})
	if err != nil {
		return err
	}
	r.Partitioned, r.Partition, r.PartitionBindings = pg, res, b
	return nil
}

func runLower(_ context.Context, r *Result) error {
	if r.Partition == nil {
		return fmt.Errorf("no partition: the partition stage did not run")
	}
	prog, plan, err := r.Lower(r.DecodeBindings())
	if err != nil {
		return err
	}
	pr, err := cann.Predict(prog, r.Profile)
	if err != nil {
		return err
	}
	r.Program, r.ProgramPlan, r.Prediction = prog, plan, &pr
	return nil
}

func joinNames(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}
