package irtool_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/target"
)

// computes reports whether nodes of the op run a kernel (not leaves, not
// pure views).
func computes(info *ir.OpInfo) bool {
	return info.Kind == ir.KindCompute || info.Kind == ir.KindView && info.SideEffect
}

// opGaps names, for every op of ctx's op table (the ops with a typing, a
// CPU kernel or a target rule), each piece of its record that is missing,
// in the order docs/ARCHITECTURE.md's "Adding an op" lists them: the
// typing (package ir), the CPU kernel (package eval), the target rule
// (package target: a cost rule, and an NPU rule with its workspace rule or
// the reason the op stays on the CPU) and, when the rule claims the NPU and
// hasRecipe is not nil, the aclnn recipe (runtime/acl). Leaves and pure
// views compute nothing and need their typing only.
func opGaps(ctx *irtool.Context, hasRecipe func(ir.Op) bool) []string {
	table := map[ir.Op]bool{}
	for _, info := range ctx.Ops.Ops() {
		table[info.Name] = true
	}
	for _, op := range ctx.Kernels.Ops() {
		table[op] = true
	}
	for _, op := range ctx.Rules.Ops() {
		table[op] = true
	}
	ops := make([]ir.Op, 0, len(table))
	for op := range table {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	var gaps []string
	for _, op := range ops {
		info, typed := ctx.Ops.Lookup(op)
		_, hasKernel := ctx.Kernels.Lookup(op)
		r, hasRule := ctx.Rules.Lookup(op)
		if !typed {
			gaps = append(gaps, fmt.Sprintf("op %q: no typing in package ir (ir.OpInfo), yet it has a CPU kernel %v, a target rule %v", op, hasKernel, hasRule))
			continue
		}
		if !computes(info) {
			continue
		}
		if !hasKernel {
			gaps = append(gaps, fmt.Sprintf("op %q: no CPU kernel in package eval", op))
		}
		if !hasRule {
			gaps = append(gaps, fmt.Sprintf("op %q: no rule in package target (cost, NPU support)", op))
			continue
		}
		if r.Traffic == nil {
			gaps = append(gaps, fmt.Sprintf("op %q: no cost (Traffic) rule", op))
		}
		switch {
		case r.NPU == nil && r.CPUOnly == "":
			gaps = append(gaps, fmt.Sprintf("op %q: neither an NPU rule nor a reason to stay on the CPU", op))
		case r.NPU != nil && r.Workspace == nil:
			gaps = append(gaps, fmt.Sprintf("op %q: an NPU rule without a workspace rule", op))
		}
		if r.NPU != nil && hasRecipe != nil && !hasRecipe(op) {
			gaps = append(gaps, fmt.Sprintf("op %q: the target rule claims the NPU, but there is no aclnn recipe (runtime/acl)", op))
		}
	}
	return gaps
}

// TestOpRecords walks every registered op against every table keyed by op
// (docs/ARCHITECTURE.md, "One record per op" and "Adding an op"): its
// typing in package ir, its CPU kernel in package eval, its rules in
// package target (NPU support, cost, workspace) for every target profile,
// and the in-place tables of the planner. Each failure names the op and
// the target. The aclnn recipes are checked by runtime/acl's
// TestEveryClaimedOpHasARecipe (-tags cann), which sees the recipe table.
func TestOpRecords(t *testing.T) {
	rules := target.DefaultRules()
	for _, gap := range opGaps(irtool.DefaultContext(), nil) {
		t.Error(gap)
	}
	for _, name := range target.Names() {
		p, err := target.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range p.Ops() {
			info, ok := ir.Lookup(op)
			if !ok {
				t.Errorf("target %s: claims op %q, which package ir does not define", name, op)
				continue
			}
			r, _ := rules.Lookup(op)
			if r.Traffic == nil {
				t.Errorf("target %s: op %q is supported on the NPU but has no cost rule", name, op)
			}
			if r.Workspace == nil {
				t.Errorf("target %s: op %q is supported on the NPU but has no workspace rule", name, op)
			}
			if !computes(info) {
				t.Errorf("target %s: claims op %q, which computes nothing", name, op)
			}
		}
	}
	for _, op := range passes.Ops() {
		if info, ok := ir.Lookup(op); !ok || !eval.HasKernel(op) {
			t.Errorf("passes introduce op %q: defined in ir %v, with a CPU kernel %v", op, info != nil, eval.HasKernel(op))
		}
	}
	// ggml's in-place ops (ggml_op_can_inplace, llama.cpp c392e50), which
	// the CPU policy lets overwrite any operand, are the registry's
	// InplaceAny flag: the set is the table the planner held before the flag,
	// and each carries Inplace too (which NPUPolicy and the fused ops rely on).
	ggmlInplace := []ir.Op{ir.OpAdd, ir.OpMul, ir.OpRMSNorm, ir.OpRope, ir.OpScale, ir.OpSilu, ir.OpSoftMax}
	var flagged []ir.Op
	for _, info := range ir.Ops() {
		if info.InplaceAny {
			flagged = append(flagged, info.Name)
			if !info.Inplace || info.Kind != ir.KindCompute {
				t.Errorf("op %q: InplaceAny without Inplace, or not a compute op", info.Name)
			}
		}
	}
	slices.Sort(ggmlInplace)
	if !slices.Equal(flagged, ggmlInplace) {
		t.Errorf("ops with ir.OpInfo.InplaceAny = %v, want ggml's in-place ops %v", flagged, ggmlInplace)
	}
	cpu := planner.CPUPolicy()
	for _, info := range ir.Ops() {
		n := &ir.Node{Op: info.Name, Args: make([]*ir.Node, 3)}
		want := 0
		switch {
		case info.Kind != ir.KindCompute:
		case info.InplaceAny:
			want = 10
		case info.Inplace:
			want = 1
		}
		if got := len(cpu.Candidates(n)); got != want {
			t.Errorf("planner.CPUPolicy: op %q has %d in-place candidates, want %d from its flags", info.Name, got, want)
		}
	}
}

// TestOpTablesMatchRegistry checks the tables keyed by op name that must
// stay above package ir (a target's HCCL calls, the ops the passes
// introduce) against ir's registry: a collective op without its HCCL call,
// an entry for an op that is not a collective of ir, or a fused op the
// passes' list lacks fails here naming the op. (The lowering's kernel
// extras are checked by lower/cann's TestKernelExtrasOps, the aclnn recipes
// by runtime/acl's TestRecipeOps and TestEveryClaimedOpHasARecipe, -tags
// cann.)
func TestOpTablesMatchRegistry(t *testing.T) {
	coll := ir.CollectiveOps()
	if len(coll) == 0 {
		t.Fatal("package ir registers no collective op")
	}
	for _, op := range coll {
		if target.HCCLCalls[op] == "" {
			t.Errorf("collective op %q has no HCCL call in target.HCCLCalls", op)
		}
	}
	for op := range target.HCCLCalls {
		if !ir.IsCollective(op) {
			t.Errorf("target.HCCLCalls names op %q, which is not a collective op of package ir", op)
		}
	}
	// passes.Ops lists, in irtool passes' order, the ops the passes
	// introduce: every fused op of ir must be among them (TestOpRecords
	// checks the other direction).
	for _, info := range ir.Ops() {
		if info.Fused && !slices.Contains(passes.Ops(), info.Name) {
			t.Errorf("fused op %q is missing from passes.Ops (passes/ops.go)", info.Name)
		}
	}
}

// TestOpRecordsOnModels runs the rules on every node of real graphs (the
// default pipeline, plus rope-table and merge-qkv) on every target: a node
// a profile supports on the NPU must be costed there, and every computing
// node must be costed on the CPU.
func TestOpRecordsOnModels(t *testing.T) {
	pipes := []string{"none", "default", "noop,rope-cache,rope-table,fold,cse,fuse-norm,fuse-matmul-bias,merge-qkv,fuse-swiglu,fuse-attention,dce", "fuse-rope-set-rows"}
	seen := map[ir.Op]bool{}
	for _, c := range []struct {
		file string
		kv   models.KVWrite
	}{{"stories260K.gguf", models.KVSetRows}, {"synth-llama-Q4_0.gguf", models.KVSetRows}, {"synth-llama-F16.gguf", models.KVCpy}} {
		file := c.file
		f, err := gguf.Open(testref.Testdata(file))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		m, err := models.Build(f, models.Options{NCtx: 64, KVWrite: c.kv})
		if err != nil {
			t.Fatal(err)
		}
		for _, pipe := range pipes {
			pl, err := passes.Parse(pipe)
			if err != nil {
				t.Fatal(err)
			}
			g, _, err := passes.Run(m.Graph, pl, passes.Options{})
			if err != nil {
				t.Fatalf("%s %s: %v", file, pipe, err)
			}
			g, err = g.Specialize(ir.Bindings{models.SymTokens: 4, models.SymKV: 32, models.SymOutputs: 1, models.SymKVHead: 0})
			if err != nil {
				t.Fatalf("%s %s: %v", file, pipe, err)
			}
			for _, name := range target.Names() {
				p, _ := target.Get(name)
				for _, n := range g.Nodes {
					info, _ := ir.Lookup(n.Op)
					if info == nil || !computes(info) {
						continue
					}
					seen[n.Op] = true
					if _, err := p.Estimate(n, target.CPU, nil); err != nil {
						t.Errorf("target %s: op %q on the CPU: %v", name, n.Op, err)
					}
					if s := p.Supports(n); s.OK {
						if _, err := p.Estimate(n, target.NPU, nil); err != nil {
							t.Errorf("target %s: op %q supported on the NPU: %v", name, n.Op, err)
						}
						if s.Kernel == "" {
							t.Errorf("target %s: op %q supported on the NPU names no aclnn kernel", name, n.Op)
						}
					}
				}
			}
		}
	}
	var ops []string
	for op := range seen {
		ops = append(ops, string(op))
	}
	slices.Sort(ops)
	t.Logf("ops exercised: %v", ops)
}

// TestHalfAddedOp defines ops piece by piece in a fresh context, as
// someone following "Adding an op" part way would, and checks that opGaps
// names exactly the pieces each one lacks. The recipe predicate stands in
// for runtime/acl's recipe table (which only a -tags cann build has): the
// built-in ops and "done" have a recipe.
func TestHalfAddedOp(t *testing.T) {
	info := func(name ir.Op) ir.OpInfo {
		return ir.OpInfo{Name: name, MinArgs: 1, ElementWise: true, Doc: string(name) + "(x)",
			Infer: func(n *ir.Node) (ir.Type, error) { return n.Args[0].Type, nil }}
	}
	kernel := func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.Cpy(dst, a[0])
	}
	traffic := func(n *ir.Node, b ir.Bindings) (float64, float64, error) { return 0, 0, nil }
	cpuOnly := target.OpRule{CPUOnly: "no aclnn recipe yet", Traffic: traffic}
	npu := target.OpRule{NPU: func(*ir.Node) target.Support { return target.Support{OK: true, Kernel: "aclnnX"} },
		Traffic: traffic, Workspace: target.NoWorkspace}
	hasRecipe := func(op ir.Op) bool {
		_, builtin := ir.Lookup(op)
		return builtin || op == "done"
	}
	for _, c := range []struct {
		name   string
		typing bool
		kernel bool
		rule   *target.OpRule
		want   []string
	}{
		{"typed", true, false, nil, []string{
			`op "typed": no CPU kernel in package eval`,
			`op "typed": no rule in package target (cost, NPU support)`}},
		{"kernel_only", false, true, nil, []string{
			`op "kernel_only": no typing in package ir (ir.OpInfo), yet it has a CPU kernel true, a target rule false`}},
		{"no_rule", true, true, nil, []string{
			`op "no_rule": no rule in package target (cost, NPU support)`}},
		{"rule_only", false, false, &cpuOnly, []string{
			`op "rule_only": no typing in package ir (ir.OpInfo), yet it has a CPU kernel false, a target rule true`}},
		{"no_kernel", true, false, &cpuOnly, []string{
			`op "no_kernel": no CPU kernel in package eval`}},
		{"cpu_only", true, true, &cpuOnly, nil},
		{"no_recipe", true, true, &npu, []string{
			`op "no_recipe": the target rule claims the NPU, but there is no aclnn recipe (runtime/acl)`}},
		{"done", true, true, &npu, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := irtool.NewContext()
			op := ir.Op(c.name)
			if c.typing {
				if err := ctx.Ops.Register(info(op)); err != nil {
					t.Fatal(err)
				}
			}
			if c.kernel {
				if err := ctx.Kernels.Register(op, kernel); err != nil {
					t.Fatal(err)
				}
			}
			if c.rule != nil {
				if err := ctx.Rules.Register(op, *c.rule); err != nil {
					t.Fatal(err)
				}
			}
			got := opGaps(ctx, hasRecipe)
			if !slices.Equal(got, c.want) {
				t.Errorf("gaps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(c.want, "\n"))
			}
		})
	}
}
