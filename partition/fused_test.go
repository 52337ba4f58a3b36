package partition

import (
	"testing"

	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/target"
)

// TestFusedQuantisedGraphsStayOnNPU: after the default pipeline, the
// quantised matmuls read the slot views of add_rms_norm_mul, whose shapes
// are symbolic (n_tokens). Those views are dense, so on the 910B no matmul
// may fall back to the CPU; on the Q8_0 model nothing does (on Q4_0 the
// embedding gather does: ggml-cann gathers f32, f16 and q8_0 only).
func TestFusedQuantisedGraphsStayOnNPU(t *testing.T) {
	prof, err := target.Get("ascend910b")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"synth-llama-Q8_0.gguf", "synth-llama-Q4_0.gguf"} {
		_, m := testmodel.Build(t, testref.Testdata(file), models.Options{NCtx: 64})
		g, _, err := passes.Run(m.Graph, passes.Default(), passes.Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, res, err := Run(g, prof, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range res.Fallbacks {
			if f.Op == "mul_mat" || f.Op == "mul_mat_add" {
				t.Errorf("%s: %s %q fell back to the CPU: %s", file, f.Op, f.Name, f.Reason)
			}
		}
		if file == "synth-llama-Q8_0.gguf" && (res.CPUNodes != 0 || len(res.Copies) != 0) {
			t.Errorf("%s: %d nodes on the CPU, %d copies; fallbacks %v", file, res.CPUNodes, len(res.Copies), res.Fallbacks)
		}
	}
}
