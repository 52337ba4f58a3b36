package irtool

import (
	"context"
	"fmt"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/target"
)

// Context holds the registries an experiment extends: the op set (typing),
// the CPU kernels, the passes, the target rules (NPU support, cost,
// workspace) and the planner's offset strategies. Each package keeps a
// default registry that its package-level functions use (ir.Register,
// passes.Parse, target.Get, planner.Solve, ...); DefaultContext gathers
// those. NewContext layers fresh registries over the defaults, so what one
// context registers no other context, and no package-level function, sees:
// two experiments (or two tests) in one process stay apart.
//
// Graphs made or parsed through Ops keep their definitions (ir.Node.Info),
// so every package resolves their ops as the context does.
type Context struct {
	Ops        *ir.OpSet
	Kernels    *eval.KernelSet
	Passes     *passes.Registry
	Rules      *target.Rules
	Strategies *planner.StrategySet
}

// DefaultContext returns the package defaults as a Context: registering
// into it is registering into each package's default registry.
func DefaultContext() *Context {
	return &Context{Ops: ir.DefaultOps(), Kernels: eval.DefaultKernels(), Passes: passes.DefaultRegistry(),
		Rules: target.DefaultRules(), Strategies: planner.DefaultStrategies()}
}

// NewContext returns a Context whose registries see the built-in ops,
// kernels, passes, rules and strategies and keep their own additions.
func NewContext() *Context {
	return &Context{Ops: ir.NewOpSet(), Kernels: eval.NewKernelSet(), Passes: passes.NewRegistry(),
		Rules: target.NewRules(), Strategies: planner.NewStrategySet()}
}

// Op is the whole record of one op: its typing, its reference CPU kernel
// (with, optionally, the prepared job compiled plans run instead) and its
// target rule (docs/ARCHITECTURE.md, "One record per op").
type Op struct {
	Info    ir.OpInfo
	Kernel  eval.Kernel
	Prepare eval.Prepare // optional: see eval.KernelDef
	Rule    target.OpRule
}

// RegisterOp defines an op in the context: typing in Ops, kernel in
// Kernels, rule in Rules. It checks all three before registering any, so
// a failure leaves the context unchanged.
func (c *Context) RegisterOp(op Op) error {
	name := op.Info.Name
	switch {
	case name == "":
		return fmt.Errorf("irtool: register op: empty name")
	case op.Kernel == nil:
		return fmt.Errorf("irtool: register op %q: no CPU kernel", name)
	case op.Rule.Traffic == nil:
		return fmt.Errorf("irtool: register op %q: no cost (Traffic) rule", name)
	case op.Rule.NPU != nil && op.Rule.Workspace == nil:
		return fmt.Errorf("irtool: register op %q: an NPU rule needs a Workspace rule", name)
	case op.Rule.NPU == nil && op.Rule.CPUOnly == "":
		return fmt.Errorf("irtool: register op %q: no NPU rule and no reason (CPUOnly) to stay on the CPU", name)
	}
	if _, dup := c.Ops.Lookup(name); dup {
		return fmt.Errorf("irtool: register op %q: already defined", name)
	}
	if _, dup := c.Kernels.Lookup(name); dup {
		return fmt.Errorf("irtool: register op %q: already has a kernel", name)
	}
	if _, dup := c.Rules.Lookup(name); dup {
		return fmt.Errorf("irtool: register op %q: already has a target rule", name)
	}
	if err := c.Ops.Register(op.Info); err != nil {
		return err
	}
	if err := c.Kernels.RegisterDef(name, eval.KernelDef{Run: op.Kernel, Prepare: op.Prepare}); err != nil {
		return err
	}
	return c.Rules.Register(name, op.Rule)
}

// BuildModel builds a model's graph (models.Build) in the context: the
// graph resolves the context's ops, so rewrites on it may introduce them.
func (c *Context) BuildModel(f *gguf.File, opts models.Options) (*models.Model, error) {
	opts.Ops = c.Ops
	return models.Build(f, opts)
}

// CompileOptions returns opts with the registries the context holds and
// opts leaves unset: passes, target rules, planner strategies, and the
// kernels constant folding evaluates with.
func (c *Context) CompileOptions(opts compiler.Options) compiler.Options {
	if opts.PassRegistry == nil {
		opts.PassRegistry = c.Passes
	}
	if opts.Rules == nil {
		opts.Rules = c.Rules
	}
	if opts.Strategies == nil {
		opts.Strategies = c.Strategies
	}
	if opts.PassOptions.Fold.Kernels == nil {
		opts.PassOptions.Fold.Kernels = c.Kernels
	}
	return opts
}

// Compile runs the compile driver (compiler.Compile) on g with the
// context's registries.
func (c *Context) Compile(ctx context.Context, g *ir.Graph, opts compiler.Options) (*compiler.Result, error) {
	return compiler.Compile(ctx, g, c.CompileOptions(opts))
}

// PlanMemory plans a static graph (planner.PlanMemory) with the context's
// strategies: a strategy registered in c.Strategies is a name
// opts.Strategy may give.
func (c *Context) PlanMemory(g *ir.Graph, opts planner.MemoryOptions) (*planner.MemoryPlan, error) {
	if opts.Strategies == nil {
		opts.Strategies = c.Strategies
	}
	return planner.PlanMemory(g, opts)
}

// RegisterTarget adds a target profile to the context under its own name
// (target.Rules.RegisterTarget): Compile with Options.Target set to that
// name compiles for it, deciding support and cost with the context's
// rules. A profile read from a target file (target.ParseFile, the format
// irtool targets --json prints) or a built-in one changed
// (target.Get, then its fields) are both fine.
func (c *Context) RegisterTarget(p *target.Profile) error {
	return c.Rules.RegisterTarget(p)
}
