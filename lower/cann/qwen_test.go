package cann

import (
	"testing"

	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/partition"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/target"
)

// qwen25 is Qwen2.5-0.5B's shape (config.json of Qwen/Qwen2.5-0.5B): 24
// layers, n_embd 896, 14 query heads and 2 KV heads of 64, n_ff 4864, a
// 151936-token vocabulary, q/k/v biases, tied embeddings, NEOX RoPE with
// base 1e6. Weights are f16 (norms and biases f32), as in the F16 GGUF
// llama.cpp's CANN numbers were taken with.
func qwen25(t testing.TB, ctx int64) *models.Model {
	t.Helper()
	return testmodel.Qwen25(t, ctx)
}

// TestPredictQwen25 is the check of the cost model against the field
// (docs/PERFORMANCE.md): a Qwen2.5-0.5B-shaped decode step on the 910B,
// as built and after the default passes, eager and with graph replay. It
// asserts what the model must get right whatever its constants (every
// decode segment captured, replay faster than eager launches, a launch-bound
// eager step) and logs the numbers the docs quote, plus their sensitivity
// to the two assumed overheads.
func TestPredictQwen25(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and plans a 24-layer graph")
	}
	m := qwen25(t, 4096)
	fg, _, err := passes.Run(m.Graph, passes.Default(), passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := ir.Bindings{"n_tokens": 1, "n_outputs": 1, "n_kv": 256, "kv_head": 0}
	for _, c := range []struct {
		name string
		g    *ir.Graph
	}{{"as built", m.Graph}, {"default passes", fg}} {
		prof, _ := target.Get("ascend910b")
		pg, part, err := partition.Run(c.g, prof, nil)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := lowerStep(pg, part, prof, b, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range prog.Segments {
			if !s.Capturable {
				t.Errorf("%s: segment %d not capturable: %s", c.name, s.ID, s.Blocker)
			}
		}
		pr, err := Predict(prog, prof)
		if err != nil {
			t.Fatal(err)
		}
		if pr.GraphUS >= pr.EagerUS || pr.HostLaunchUS < pr.DeviceUS {
			t.Errorf("%s: %+v", c.name, pr)
		}
		t.Logf("%s (n_kv %d): %d kernels, %d segments, %d eager aclnn calls; eager %.0f us = %.1f tok/s, graph %.0f us = %.1f tok/s, speedup %.2fx (device %.0f us, launches %.0f us, copies %.0f us)",
			c.name, b["n_kv"], prog.Kernels(), len(prog.Segments), pr.Launches, pr.EagerUS, 1e6/pr.EagerUS, pr.GraphUS, 1e6/pr.GraphUS,
			pr.EagerUS/pr.GraphUS, pr.DeviceUS, pr.HostLaunchUS, pr.CopyUS)
		for _, launch := range []float64{5, 10, 20} {
			for _, task := range []float64{2, 4, 8} {
				p2, _ := target.Get("ascend910b")
				p2.Overheads.LaunchUS, p2.Overheads.TaskUS = launch, task
				prog2, err := lowerStep(pg, part, p2, b, Options{})
				if err != nil {
					t.Fatal(err)
				}
				q, _ := Predict(prog2, p2)
				t.Logf("  %s launch %2.0f us task %.0f us: eager %6.1f tok/s graph %6.1f tok/s speedup %.2fx",
					c.name, launch, task, 1e6/q.EagerUS, 1e6/q.GraphUS, q.EagerUS/q.GraphUS)
			}
		}
	}
}
