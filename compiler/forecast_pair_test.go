package compiler_test

import (
	"context"
	"testing"

	"github.com/irtool/irtool/compiler"
)

// ForecastPrograms: irtool's program runs the pass pipeline, llama.cpp's
// is the graph as built, so ours has fewer kernels per decode step; both
// forecast the same prompt.
func TestForecastPrograms(t *testing.T) {
	m, _ := build(t, "", 512)
	ours, ref, err := compiler.ForecastPrograms(context.Background(), m.Graph, compiler.Options{Target: "ascend910b", Ctx: 512}, 64)
	if err != nil {
		t.Fatal(err)
	}
	if ours.PromptTokens != 64 || ref.PromptTokens != 64 {
		t.Errorf("prompt tokens %d and %d, want 64", ours.PromptTokens, ref.PromptTokens)
	}
	if ours.Program.Kernels() >= ref.Program.Kernels() {
		t.Errorf("decode kernels: ours %d, llama.cpp's %d; want fewer after the passes", ours.Program.Kernels(), ref.Program.Kernels())
	}
}
