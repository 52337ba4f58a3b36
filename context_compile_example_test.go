package irtool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/target"
)

// A custom op on a real model, through the compile driver: the context
// defines "my_silu" (typing, CPU kernel, a target rule that keeps it on the
// host), builds the model's graph in the context (so the graph resolves
// the op), and registers a rule pass that rewrites silu into it ahead of
// the default pipeline. The driver partitions the result for the 910B,
// where my_silu falls back to the CPU, and lowers it.
func ExampleContext_Compile_customOp() {
	ctx := irtool.NewContext()
	err := ctx.RegisterOp(irtool.Op{
		Info: ir.OpInfo{Name: "my_silu", MinArgs: 1, ElementWise: true, Doc: "my_silu(x): x*sigmoid(x)",
			Infer: func(n *ir.Node) (ir.Type, error) { return n.Args[0].Type, nil }},
		Kernel: func(n *ir.Node, dst kernels.Tensor, args []kernels.Tensor, _ kernels.Options) error {
			return kernels.Silu(dst, args[0])
		},
		Rule: target.OpRule{
			CPUOnly: "my_silu: no CANN recipe yet",
			// The cost model's view: 4 FLOPs per element, read and written once.
			Traffic: func(n *ir.Node, b ir.Bindings) (float64, float64, error) {
				t := n.Type
				s, err := t.Shape.Eval(b)
				if err != nil {
					return 0, 0, err
				}
				t.Shape = s
				size, err := t.Bytes()
				return float64(size), float64(2 * size), err
			},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	rule := &passes.Rule{
		Name:    "silu-to-my-silu",
		Pattern: passes.Op(ir.OpSilu, passes.Any("x")),
		Build: func(b *passes.Builder, m *passes.Match) (*ir.Node, error) {
			return b.Op("my_silu", nil, m.Get("x"))
		},
	}
	if err := ctx.Passes.Register(passes.RulePass("use-my-silu", "silu(x) -> my_silu(x)", rule)); err != nil {
		fmt.Println(err)
		return
	}
	f, err := gguf.Parse(irtool.EmbeddedModel, "stories260K.gguf")
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := ctx.BuildModel(f, models.Options{NCtx: 64})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := ctx.Compile(context.Background(), m.Graph, compiler.Options{Target: "ascend910b", Passes: "use-my-silu,default"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("rule hits:", r.PassResult.Passes[0].RuleHits)
	fmt.Println("my_silu nodes:", r.Optimised.OpCounts()["my_silu"])
	fmt.Println("on the CPU:", r.Partition.Fallbacks[len(r.Partition.Fallbacks)-1].Reason)
	fmt.Println("CPU kernels:", r.Program.KernelsByName()["cpu.my_silu"])
	// Output:
	// rule hits: map[silu-to-my-silu:5]
	// my_silu nodes: 5
	// on the CPU: my_silu: no CANN recipe yet
	// CPU kernels: 5
}

// A custom planner strategy through the compile driver: registered in the
// context's strategy set, it is a name Options.Strategy may give; every
// plan it makes is validated (no overlap of live tensors, alignment) and
// scored against the lower bound like a built-in one.
func ExampleContext_Compile_customStrategy() {
	ctx := irtool.NewContext()
	// No reuse at all: every buffer above the previous one.
	err := ctx.Strategies.Register("stack", func(_ context.Context, p *planner.Problem, _ planner.Options) (*planner.Assignment, error) {
		a := &planner.Assignment{Offsets: make([]int64, len(p.Buffers))}
		for i := range p.Buffers {
			a.Offsets[i] = a.Arena
			a.Arena += p.AlignedSize(i)
		}
		return a, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	f, err := gguf.Parse(irtool.EmbeddedModel, "stories260K.gguf")
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := ctx.BuildModel(f, models.Options{NCtx: 64})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := ctx.Compile(context.Background(), m.Graph, compiler.Options{Target: "cpu", Strategy: "stack", Until: compiler.StageMemory})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, mp := range []*compiler.PlannedStep{r.Memory, r.MemoryDecode} {
		p := mp.Plan
		fmt.Printf("%s: %s, arena %d B = naive %v, %.2f x lower bound\n", mp.What, p.Strategy, p.ArenaBytes, p.ArenaBytes == p.NaiveBytes, p.Ratio())
	}
	names := ctx.Strategies.GraphNames()
	fmt.Println("the context's strategies end with:", strings.Join(names[len(names)-3:], ", "))
	_, err = compiler.Compile(context.Background(), m.Graph, compiler.Options{Target: "cpu", Strategy: "stack"})
	fmt.Println("without the context:", err)
	// Output:
	// worst case: stack, arena 1327104 B = naive true, 10.80 x lower bound
	// decode: stack, arena 20896 B = naive true, 10.70 x lower bound
	// the context's strategies end with: search, best, stack
	// without the context: compiler: unknown strategy "stack" (have naive, online-bestfit, greedy-size, greedy-lifetime, greedy-breadth, greedy-area, exact, gallocr, search, best)
}

// A hypothetical NPU as data: the 910B4's profile with half its memory
// bandwidth and no rms_norm kernel, registered under its own name. The
// driver compiles for it by that name; the norms stay on the host, the
// cost model moves the nodes whose copies would cost more with them, and the
// reports name the new target.
func ExampleContext_RegisterTarget() {
	ctx := irtool.NewContext()
	p, err := target.Get("ascend910b4")
	if err != nil {
		fmt.Println(err)
		return
	}
	f := p.File() // the format irtool targets --json prints
	f.Name = "half-bw-npu"
	f.NPU.MemBW /= 2
	var ops []string
	for _, op := range f.NPUOps {
		if op != "rms_norm" && op != "rms_norm_mul" && op != "add_rms_norm_mul" {
			ops = append(ops, op)
		}
	}
	f.NPUOps = ops
	data, _ := json.Marshal(f)
	q, err := target.ParseFile(data, ctx.Rules)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := ctx.RegisterTarget(q); err != nil {
		fmt.Println(err)
		return
	}
	gf, err := gguf.Parse(irtool.EmbeddedModel, "stories260K.gguf")
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := ctx.BuildModel(gf, models.Options{NCtx: 256})
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := ctx.Compile(context.Background(), m.Graph, compiler.Options{Target: "half-bw-npu", NoMemory: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	cpu := map[ir.Op]int{}
	for _, fb := range r.Partition.Fallbacks {
		cpu[fb.Op]++
	}
	fmt.Println(r.Partition.Target, r.Profile.NPU.MemBW/1e9, "GB/s; on the CPU:", cpu)
	// Output:
	// half-bw-npu 400 GB/s; on the CPU: map[add_rms_norm_mul:10 get_rows:3 mul_mat:11 rms_norm_mul:1]
}
