package irtool_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
	"github.com/irtool/irtool/runtime/session"
	"github.com/irtool/irtool/target"
)

// mySiluContext is a context with the op my_silu (silu under another
// name, CPU only) and the pass use-my-silu that rewrites silu into it.
func mySiluContext(t *testing.T) *irtool.Context {
	t.Helper()
	ctx := irtool.NewContext()
	err := ctx.RegisterOp(irtool.Op{
		Info: ir.OpInfo{Name: "my_silu", MinArgs: 1, ElementWise: true, Doc: "my_silu(x): x*sigmoid(x)",
			Infer: func(n *ir.Node) (ir.Type, error) { return n.Args[0].Type, nil }},
		Kernel: func(n *ir.Node, dst kernels.Tensor, args []kernels.Tensor, _ kernels.Options) error {
			return kernels.Silu(dst, args[0])
		},
		Rule: target.OpRule{CPUOnly: "my_silu: no CANN recipe",
			Traffic: func(n *ir.Node, b ir.Bindings) (float64, float64, error) { return 1, 1, nil }},
	})
	if err != nil {
		t.Fatal(err)
	}
	rule := &passes.Rule{Name: "silu-to-my-silu", Pattern: passes.Op(ir.OpSilu, passes.Any("x")),
		Build: func(b *passes.Builder, m *passes.Match) (*ir.Node, error) { return b.Op("my_silu", nil, m.Get("x")) }}
	if err := ctx.Passes.Register(passes.RulePass("use-my-silu", "silu(x) -> my_silu(x)", rule)); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// TestContextKernelsReachRuntime: a custom op's kernel reaches the CPU
// session, the simulated device and the program runner a context creates,
// without a KernelSet handed to any of them; the tokens are those of the
// built-in silu. Without the context the session refuses the op.
func TestContextKernelsReachRuntime(t *testing.T) {
	ctx := mySiluContext(t)
	f, err := gguf.Parse(irtool.EmbeddedModel, "stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	m, err := ctx.BuildModel(f, models.Options{NCtx: 64})
	if err != nil {
		t.Fatal(err)
	}
	r, err := ctx.Compile(context.Background(), m.Graph, compiler.Options{Passes: "use-my-silu,default", Until: compiler.StagePasses})
	if err != nil {
		t.Fatal(err)
	}
	if r.Optimised.OpCounts()["my_silu"] != 5 {
		t.Fatalf("my_silu nodes: %v", r.Optimised.OpCounts())
	}
	mm := *m
	mm.Graph = r.Optimised
	prompt := []int32{1, 403, 407, 261}

	ref, err := session.NewSession(m, f, session.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Generate(prompt, 6, false, nil)
	if err != nil {
		t.Fatal(err)
	}

	s, err := ctx.NewSession(&mm, f, session.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Generate(prompt, 6, false, nil)
	if err != nil {
		t.Fatalf("context session: %v", err)
	}
	if !slices.Equal(got.Tokens, want.Tokens) {
		t.Errorf("context session: tokens %v, want %v", got.Tokens, want.Tokens)
	}

	dev, err := ctx.NewSimDevice(device.SimOptions{MemoryBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	run, err := ctx.NewRunner(m, f, dev, program.Options{Policy: device.DefaultGraphPolicy(),
		Compile: compiler.Options{Passes: "use-my-silu,default"}})
	if err != nil {
		t.Fatal(err)
	}
	gotSim, err := run.Generate(prompt, 6, false, nil)
	if err != nil {
		t.Fatalf("context runner on the simulated device: %v", err)
	}
	if !slices.Equal(gotSim.Tokens, want.Tokens) {
		t.Errorf("runner: tokens %v, want %v", gotSim.Tokens, want.Tokens)
	}

	plain, err := session.NewSession(&mm, f, session.SessionOptions{})
	if err == nil {
		_, err = plain.Generate(prompt, 1, false, nil)
	}
	if err == nil || !strings.Contains(err.Error(), "my_silu") {
		t.Errorf("a session without the context's kernels: err = %v, want it to name my_silu", err)
	}
}
