package compiler_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/target"
)

func build(t testing.TB, path string, nctx int64) (*models.Model, *gguf.File) {
	t.Helper()
	var f *gguf.File
	var err error
	if path == "" {
		f, err = gguf.Parse(irtool.EmbeddedModel, "stories260K.gguf")
	} else {
		f, err = gguf.Open(path)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := models.Build(f, models.Options{NCtx: nctx})
	if err != nil {
		t.Fatal(err)
	}
	return m, f
}

// The memory stage plans the worst case and decode for the graph after
// the passes, with the target's alignment and workspaces.
func TestMemoryStage(t *testing.T) {
	m, _ := build(t, "", 128)
	r, err := compiler.Compile(context.Background(), m.Graph, compiler.Options{UBatch: 32, Until: compiler.StageMemory})
	if err != nil {
		t.Fatal(err)
	}
	if r.Partition != nil || r.Program != nil {
		t.Errorf("Until memory ran the partition or the lowering")
	}
	for _, c := range []struct {
		mp      *compiler.PlannedStep
		nTokens int64
	}{{r.Memory, 32}, {r.MemoryDecode, 1}} {
		p := c.mp.Plan
		if got := p.Graph.Find("inp_tokens").Type.Shape[0].Val; got != c.nTokens {
			t.Errorf("%s: planned for %d tokens, want %d", c.mp.What, got, c.nTokens)
		}
		if len(p.Workspaces) == 0 || p.Align != 64 || planner.ValidateMemoryPlan(p) != nil {
			t.Errorf("%s: %d workspaces, align %d", c.mp.What, len(p.Workspaces), p.Align)
		}
		if c.mp.Bindings[models.SymKV] != 128 || c.mp.Compare.GgmlLayout.GallocrBytes == 0 {
			t.Errorf("%s: bindings %v, compare %+v", c.mp.What, c.mp.Bindings, c.mp.Compare)
		}
	}
}

// Every target compiles every model of testdata, and the strategy the
// worst-case plan reports compiles again: the name a plan gives back is
// one the driver takes (a plan won by the exact search reports "exact",
// which the ggml-layout comparison once failed to plan with).
func TestCompileModelsTargets(t *testing.T) {
	paths, err := filepath.Glob("../testdata/*.gguf")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no models in ../testdata: %v", err)
	}
	if testing.Short() {
		paths = paths[:2]
	}
	seen := map[string]bool{}
	for _, path := range paths {
		m, _ := build(t, path, 64)
		for _, tgt := range target.Names() {
			r, err := compiler.Compile(context.Background(), m.Graph, compiler.Options{Target: tgt})
			if err != nil {
				t.Errorf("%s on %s: %v", filepath.Base(path), tgt, err)
				continue
			}
			if r.Program == nil || r.Prediction == nil || len(r.Ran) != 4 {
				t.Errorf("%s on %s: ran %v", filepath.Base(path), tgt, r.Ran)
			}
			name := r.Memory.Plan.Strategy
			if seen[name] {
				continue
			}
			seen[name] = true
			if _, err := compiler.Compile(context.Background(), m.Graph, compiler.Options{Target: tgt, Strategy: name, Until: compiler.StageMemory}); err != nil {
				t.Errorf("%s on %s: the reported strategy %q does not compile again: %v", filepath.Base(path), tgt, name, err)
			}
		}
	}
	t.Logf("reported strategies: %v", seen)
}

// Errors name the stage; the result keeps the stages before it.
func TestCompileErrors(t *testing.T) {
	m, _ := build(t, "", 64)
	for _, c := range []struct {
		opts compiler.Options
		want string
	}{
		{compiler.Options{Target: "tpu"}, `unknown target "tpu"`},
		{compiler.Options{Strategy: "area"}, `unknown strategy "area"`},
		{compiler.Options{Passes: "cse,rope-cache"}, "rope-cache must run before cse"},
		{compiler.Options{Ctx: 64, UBatch: 65}, "ubatch 65 exceeds ctx 64"},
		{compiler.Options{Requant: ir.Q4_0}, "requantise: no weights"},
		{compiler.Options{AfterPass: "cse"}, "needs PassOptions.Snapshots"},
	} {
		r, err := compiler.Compile(context.Background(), m.Graph, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err = %v, want %q", c.opts, err, c.want)
			continue
		}
		var se *compiler.StageError
		if errors.As(err, &se) && se.Stage == compiler.StagePartition && (r == nil || r.Memory == nil) {
			t.Errorf("%+v: the partition failed but the result lost the memory plans", c.opts)
		}
	}
	if err := (compiler.Options{Target: "tpu"}).Check(); err == nil {
		t.Error("Check accepted an unknown target")
	}
	if err := (compiler.Options{Strategy: "orders"}).Check(); err != nil {
		t.Errorf("Check rejected a search phase's name: %v", err)
	}
}

// ggmlCANNRules are the default rules with ggml-cann's own limit on
// quantised matmuls (q4_0 and q8_0 only): the target requantisation is
// for, now that the default rules take every gguf/wqconv type.
func ggmlCANNRules(t testing.TB) *target.Rules {
	t.Helper()
	r := target.NewRules()
	for _, op := range []ir.Op{ir.OpMulMat, ir.OpMulMatAdd} {
		base, _ := target.DefaultRules().Lookup(op)
		rule := base
		rule.NPU = func(n *ir.Node) target.Support {
			if dt := n.Args[0].Type.DType; dt.Quantized() && dt != ir.Q4_0 && dt != ir.Q8_0 {
				return target.Support{Reason: "ggml-cann multiplies only q4_0 and q8_0 quantised matmul"}
			}
			return base.NPU(n)
		}
		if err := r.Override(op, rule); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// Requantisation runs before the partition and reaches the lowering (for
// a target limited as ggml-cann is: the default rules need none).
func TestCompileRequant(t *testing.T) {
	m, f := build(t, "../testdata/synth-llama256-Q4_K.gguf", 64)
	r, err := compiler.Compile(context.Background(), m.Graph, compiler.Options{Target: "ascend910b", Requant: ir.Q8_0, Weights: f, Rules: ggmlCANNRules(t)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Requant == nil || len(r.Requant.Tensors) == 0 || r.RequantSource == nil {
		t.Fatalf("requant report %+v", r.Requant)
	}
	if r.Program == nil {
		t.Fatal("no program")
	}
}

// AfterPass continues from the graph after one pass of the pipeline.
func TestCompileAfterPass(t *testing.T) {
	m, _ := build(t, "", 64)
	opts := compiler.Options{Until: compiler.StagePasses, AfterPass: "rope-cache"}
	opts.PassOptions.Snapshots = true
	r, err := compiler.Compile(context.Background(), m.Graph, opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Optimised.OpCounts()["rope_cache"] == 0 || r.Optimised.OpCounts()["attention"] != 0 {
		t.Errorf("after rope-cache: %v", r.Optimised.OpCounts())
	}
}

// The bucket step (Result.Lower) lowers any binding of the partitioned
// graph with the plan options of the lowering (the target's policy, no
// reordering): the same program as the lower stage's for the decode
// step, bindings restricted to the graph's symbols, and an error naming
// a symbol the graph uses and the binding lacks.
func TestBucketStep(t *testing.T) {
	m, _ := build(t, "", 64)
	r, err := compiler.Compile(context.Background(), m.Graph, compiler.Options{Strategy: "greedy-size"})
	if err != nil {
		t.Fatal(err)
	}
	b := r.DecodeBindings()
	b["unused"] = 7
	prog, plan, err := r.Lower(b)
	if err != nil {
		t.Fatal(err)
	}
	if plan.OrderChanged || plan.Policy != planner.NPUPolicy().Name || prog.Bucket != r.Program.Bucket || len(prog.Steps) != len(r.Program.Steps) {
		t.Errorf("bucket %s (order changed %v, policy %s), want %s in graph order with the NPU policy", prog.Bucket, plan.OrderChanged, plan.Policy, r.Program.Bucket)
	}
	if _, _, err := r.Lower(ir.Bindings{models.SymTokens: 1}); err == nil || !strings.Contains(err.Error(), `symbol "n_kv" is not bound`) {
		t.Errorf("unbound symbol: %v", err)
	}
}
