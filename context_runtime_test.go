package irtool_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testext"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
	"github.com/irtool/irtool/runtime/session"
)

// mySiluContext is testext's context: the op my_silu (silu under another
// name, CPU only) and the pass use-my-silu that rewrites silu into it.
func mySiluContext(t *testing.T) *irtool.Context { return testext.MySiluContext(t) }

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
