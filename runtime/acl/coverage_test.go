//go:build cann

package acl

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
	"github.com/irtool/irtool/target"
)

// neverLaunched are ops a target has a rule for that never says yes, with
// the reason; the test checks the rule indeed refuses them.
var neverLaunched = map[ir.Op]*ir.Node{
	// computed on the host and folded into a constant
	ir.OpRopeTheta: {Op: ir.OpRopeTheta, Attrs: ir.Attrs{"n_dims": int64(64), "freq_base": 10000.0}},
}

// TestEveryClaimedOpHasARecipe: every op an NPU target profile has a
// support rule for has an aclnn recipe in this binding, so that a node the
// partition places on the NPU can be launched. A failure names the op and
// the target.
func TestEveryClaimedOpHasARecipe(t *testing.T) {
	for _, name := range target.Names() {
		p, err := target.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if !p.HasNPU() {
			continue
		}
		for _, op := range p.Ops() {
			if _, ok := recipes[op]; ok {
				continue
			}
			if n, ok := neverLaunched[op]; ok {
				if s := p.Supports(n); s.OK {
					t.Errorf("target %s: op %s has no recipe, yet the target claims it (%s)", name, op, s.Kernel)
				}
				continue
			}
			t.Errorf("target %s claims op %s for the NPU, but runtime/acl has no aclnn recipe for it: add one (recipes_<family>.go and a row of the recipes table in recipes.go) or make the target refuse it with the reason (target/<family>.go)", name, op)
		}
	}
}

// TestEveryClaimedTypeHasARecipe: for every weight-reading op whose recipe
// takes quantised types (quantRecipeTypes) and every quantised dtype, a
// target that claims a node of the op with a weight of that type for the
// NPU must find the type in the recipe's list. Removing a type from a
// recipe (or claiming a new one in target) fails here, naming the op, the
// type and the target.
func TestEveryClaimedTypeHasARecipe(t *testing.T) {
	var quantised []ir.DType
	for dt := ir.DType(0); dt < 64; dt++ {
		if dt.Quantized() && dt.BlockSize() > 0 {
			quantised = append(quantised, dt)
		}
	}
	probe := func(op ir.Op, dt ir.DType) *ir.Node {
		const k, n = 512, 64
		w := &ir.Node{ID: 0, Op: ir.OpWeight, Name: "w", Type: ir.Type{DType: dt, Shape: ir.Shape{ir.C(k), ir.C(n), ir.C(1), ir.C(1)}}}
		x := &ir.Node{ID: 1, Op: ir.OpInput, Name: "x", Type: ir.Type{DType: ir.F32, Shape: ir.Shape{ir.C(k), ir.C(4), ir.C(1), ir.C(1)}}}
		out := ir.Type{DType: ir.F32, Shape: ir.Shape{ir.C(n), ir.C(4), ir.C(1), ir.C(1)}}
		switch op {
		case ir.OpMulMatAdd:
			bias := &ir.Node{ID: 2, Op: ir.OpWeight, Name: "b", Type: ir.Type{DType: ir.F32, Shape: ir.Shape{ir.C(n), ir.C(1), ir.C(1), ir.C(1)}}}
			return &ir.Node{ID: 3, Op: op, Args: []*ir.Node{w, x, bias}, Type: out}
		case ir.OpMulMatID:
			w.Type.Shape[2] = ir.C(4)
			x.Type.Shape = ir.Shape{ir.C(k), ir.C(1), ir.C(2), ir.C(1)}
			ids := &ir.Node{ID: 2, Op: ir.OpInput, Name: "ids", Type: ir.Type{DType: ir.I32, Shape: ir.Shape{ir.C(2), ir.C(2), ir.C(1), ir.C(1)}}}
			return &ir.Node{ID: 3, Op: op, Args: []*ir.Node{w, x, ids},
				Type: ir.Type{DType: ir.F32, Shape: ir.Shape{ir.C(n), ir.C(2), ir.C(2), ir.C(1)}}}
		case ir.OpGetRows:
			ids := &ir.Node{ID: 1, Op: ir.OpInput, Name: "ids", Type: ir.Type{DType: ir.I32, Shape: ir.Shape{ir.C(4), ir.C(1), ir.C(1), ir.C(1)}}}
			return &ir.Node{ID: 2, Op: op, Args: []*ir.Node{w, ids},
				Type: ir.Type{DType: ir.F32, Shape: ir.Shape{ir.C(k), ir.C(4), ir.C(1), ir.C(1)}}}
		}
		return &ir.Node{ID: 2, Op: op, Args: []*ir.Node{w, x}, Type: out}
	}
	claimed := 0
	for _, name := range target.Names() {
		p, _ := target.Get(name)
		if !p.HasNPU() {
			continue
		}
		for op := range quantRecipeTypes {
			for _, dt := range quantised {
				if s := p.Supports(probe(op, dt)); !s.OK {
					continue
				}
				claimed++
				if !recipeTakes(op, dt) {
					t.Errorf("target %s claims %s with %s weights for the NPU, but runtime/acl's %s recipe has no %s path (quantRecipeTypes)", name, op, dt, op, dt)
				}
			}
		}
	}
	if claimed == 0 {
		t.Fatal("no target claims any quantised type: the probes are wrong")
	}
	// The other direction: every type a recipe lists is claimed by
	// ascend910b (no recipe path left unreachable).
	p, _ := target.Get("ascend910b")
	for op, types := range quantRecipeTypes {
		for _, dt := range types {
			if s := p.Supports(probe(op, dt)); !s.OK {
				t.Errorf("runtime/acl's %s recipe takes %s weights, but ascend910b does not claim them: %s", op, dt, s.Reason)
			}
		}
	}
}

// coveragePipelines are the pass pipelines whose fused ops reach the NPU:
// the default one, none, ggml-cann's RoPE table, rope fused into the KV
// write without a cache, and merged QKV projections.
var coveragePipelines = []string{
	"none",
	"default",
	"default,merge-qkv",
	"noop,rope-cache,rope-table,fold,cse,fuse-norm,fuse-matmul-bias,fuse-swiglu,fuse-softmax,fuse-attention,fuse-rope-set-rows,dce",
	"noop,fold,cse,fuse-norm,fuse-matmul-bias,fuse-swiglu,fuse-attention,fuse-rope-set-rows,dce",
}

// TestPartitionedNPUNodesHaveRecipes compiles every reference model for
// every NPU target and pipeline and requires a recipe for every node the
// partition places on the NPU that launches a kernel.
func TestPartitionedNPUNodesHaveRecipes(t *testing.T) {
	seen := map[string]bool{}
	for _, path := range testref.Models(t) {
		_, m, ok := buildIfSupported(t, path)
		if !ok {
			continue
		}
		for _, tn := range target.Names() {
			p, _ := target.Get(tn)
			if !p.HasNPU() {
				continue
			}
			for _, pipe := range coveragePipelines {
				c, err := program.NewCompiler(m, compiler.Options{Target: tn, Passes: pipe})
				if err != nil {
					t.Fatalf("%s %s %q: %v", filepath.Base(path), tn, pipe, err)
				}
				g := c.Graph()
				for i, n := range g.Nodes {
					if c.Part.Device[i] != target.NPU {
						continue
					}
					s := p.Supports(n)
					if !s.OK || s.Kernel == "" {
						continue
					}
					seen[string(n.Op)] = true
					if _, ok := recipes[n.Op]; !ok {
						t.Errorf("%s, target %s, passes %q: node %d (%s %q) is placed on the NPU but has no recipe", filepath.Base(path), tn, pipe, n.ID, n.Op, n.Name)
					}
				}
			}
		}
	}
	ops := make([]string, 0, len(seen))
	for op := range seen {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	t.Logf("ops placed on the NPU across models, targets and pipelines: %s", strings.Join(ops, ", "))
}

func buildIfSupported(t *testing.T, path string) (*gguf.File, *models.Model, bool) {
	t.Helper()
	file, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { file.Close() })
	mod, err := models.Build(file, models.Options{NCtx: 64})
	if err != nil {
		if strings.Contains(err.Error(), "is not supported") {
			return nil, nil, false
		}
		t.Fatalf("%s: %v", path, err)
	}
	return file, mod, true
}

// TestPipelinesOnEmulatedCANN runs the fused ops of every pipeline of
// coveragePipelines through their recipes on the emulator and compares the
// logits of a prefill and three decode steps with the reference executor
// (session.Session, ggml's arithmetic), within 1e-3 of max|logit|. It also
// requires that the ops the pipeline introduces were launched on the NPU.
func TestPipelinesOnEmulatedCANN(t *testing.T) {
	cases := []struct {
		model string
		pipe  string
		want  []ir.Op // ops that must have been launched through a recipe
	}{
		{"stories260K.gguf", coveragePipelines[0], []ir.Op{ir.OpRope, ir.OpSoftMax, ir.OpMulMat, ir.OpSetRows}},
		{"stories260K.gguf", coveragePipelines[1], []ir.Op{ir.OpRopeCache, ir.OpRopeApply, ir.OpAttention, ir.OpRopeApplySetRows}},
		{"stories260K.gguf", coveragePipelines[3], []ir.Op{ir.OpRopeCacheTable, ir.OpRopeApply}},
		{"stories260K.gguf", coveragePipelines[4], []ir.Op{ir.OpRopeSetRows, ir.OpRope}},
		{"synth-qwen2-tied-F32", coveragePipelines[1], []ir.Op{ir.OpMulMatAdd}},
		{"synth-qwen2-tied-F32", coveragePipelines[2], []ir.Op{ir.OpMulMatAdd}},
		{"synth-llama3rope-F32", coveragePipelines[1], []ir.Op{ir.OpRopeCache}},
		{"synth-llama3rope-F32", coveragePipelines[0], []ir.Op{ir.OpRope}},
	}
	for _, c := range cases {
		t.Run(c.model+"/"+c.pipe, func(t *testing.T) {
			var path string
			if strings.HasSuffix(c.model, ".gguf") {
				path = testref.Testdata(c.model)
			} else {
				path = testref.Shared(t, "models/"+c.model+".gguf")
			}
			f, m := testmodel.Build(t, path, models.Options{NCtx: 64})
			d := newDevice(t, Options{PoolBytes: 128 << 20, WorkspaceReserve: 16 << 20})
			var mu sync.Mutex
			launched := map[ir.Op]int{}
			d.onLaunch = func(k *device.KernelLaunch, _ []string) {
				mu.Lock()
				launched[k.Op]++
				mu.Unlock()
			}
			_, opts := npuPinned(t)
			opts.Passes = c.pipe
			s, ref := pairedSessions(t, m, f, d, program.Options{Policy: device.DefaultGraphPolicy(), Compile: opts})
			worst := 0.0
			for step, toks := range [][]int32{{1, 403, 407, 261, 378}, {42}, {7}, {300}} {
				e := testmodel.RelErr(stepBoth(t, step, s, ref, toks))
				worst = max(worst, e)
				if e > 1e-3 {
					t.Errorf("step %d: max|Δ|/max|logit| = %.3g against the reference executor", step, e)
				}
			}
			for _, op := range c.want {
				if launched[op] == 0 {
					t.Errorf("no %s was launched on the NPU (launched: %v)", op, fmt.Sprint(launched))
				}
			}
			t.Logf("worst max|Δ|/max|logit| %.2e; launches by op: %v", worst, launched)
		})
	}
}
