package irtool_test

import (
	"slices"
	"testing"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
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

// TestOpRecords walks every registered op against every table keyed by op
// (docs/ARCHITECTURE.md, "One record per op"): its typing in package ir,
// its CPU kernel in package eval, its rules in package target (NPU support,
// cost, workspace) for every target profile, and the in-place tables of the
// planner. Each failure names the op and the target.
func TestOpRecords(t *testing.T) {
	rules := target.DefaultRules()
	for _, info := range ir.Ops() {
		op := info.Name
		if !computes(info) {
			continue
		}
		if !eval.HasKernel(op) {
			t.Errorf("op %q: no CPU kernel in package eval", op)
		}
		r, ok := rules.Lookup(op)
		if !ok {
			t.Errorf("op %q: no rule in package target (cost, NPU support)", op)
			continue
		}
		if r.Traffic == nil {
			t.Errorf("op %q: no cost (Traffic) rule", op)
		}
		if r.NPU == nil && r.CPUOnly == "" {
			t.Errorf("op %q: neither an NPU rule nor a reason to stay on the CPU", op)
		}
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
	for _, op := range rules.Ops() {
		if _, ok := ir.Lookup(op); !ok {
			t.Errorf("package target has a rule for op %q, which package ir does not define", op)
		}
	}
	for _, op := range eval.KernelOps() {
		if _, ok := ir.Lookup(op); !ok {
			t.Errorf("package eval has a kernel for op %q, which package ir does not define", op)
		}
	}
	for _, op := range passes.Ops() {
		if info, ok := ir.Lookup(op); !ok || !eval.HasKernel(op) {
			t.Errorf("passes introduce op %q: defined in ir %v, with a CPU kernel %v", op, info != nil, eval.HasKernel(op))
		}
	}
	// The CPU in-place table lists ggml's in-place ops: each must carry the
	// registry's Inplace flag (which NPUPolicy and the fused ops rely on).
	for op := range planner.CPUPolicy().Table {
		if info, ok := ir.Lookup(op); !ok || !info.Inplace {
			t.Errorf("planner CPU in-place table: op %q is not an in-place op of package ir", op)
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
