//go:build cann

package acl

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
)

// againstReference runs m on a device in the "ggml" QuantMatmul mode with
// the emulator's arithmetic arith (1 ggml-cpu's, 0 the device's, -1
// IRTFAKE_ARITH's) and the CPU reference executor in step over ref's
// tokens, and returns the worst max|Δ|/max|logit| of a step and the first
// step above 2e-6 (-1: none).
func againstReference(t *testing.T, m *models.Model, f *gguf.File, ref *testmodel.LlamaRun, arith int64) (worst float64, first int) {
	t.Helper()
	d := newDevice(t, Options{PoolBytes: max(256<<20, 2*modelPool(f, QuantMatmulGGML)), WorkspaceReserve: 16 << 20, QuantMatmul: QuantMatmulGGML, LlamaBuild: ref.Kernels(t).LlamaBuild})
	fake.Set("arith", arith)
	pol := device.DefaultGraphPolicy()
	pol.Graphs = false
	s, cpu := pairedSessions(t, m, f, d, program.Options{Policy: pol, Compile: compiler.Options{Target: "ascend910b"}, Kernels: ref.Kernels(t)})
	gen, feed := ref.Generation.Tokens, ref.Prompt.Tokens
	first = -1
	nv := int(m.HParams.NVocab)
	for i := range gen {
		got, want := stepBoth(t, i, s, cpu, feed)
		feed = []int32{gen[i]}
		e := testmodel.RelErr(got[:nv], want[:nv])
		worst = max(worst, e)
		if e > 2e-6 && first < 0 {
			first = i
		}
	}
	return worst, first
}

// TestGGMLArithmeticMatchesReferenceExecutor: with the emulator's
// ggml-cpu arithmetic (what the "ggml" QuantMatmul mode turns on,
// newDevice) every reference model whose matrices are f32 or f16 runs
// through the emulated CANN path with logits bit-identical to the CPU
// reference executor's (itself bit-identical to llama.cpp's) at every one
// of its steps, graph mode off: the attention over the f16 KV cache, the
// norms, rope, silu, softmax and the f32/f16 matmuls all on the NPU. With
// the device's arithmetic instead (the switch off, everything else equal)
// the same runs differ, by 1.3e-5 to 7.1e-4 of max|logit| measured (held
// to 1e-3, the bound of f32/f16 files against llama.cpp): the test fails if
// the switch stops reaching the kernels. Quantised files are left to
// TestQuantisedDeparturesAreRoundingFlips (their matmuls compute ggml's
// bits too: TestQ8MatmulMatchesKernelsBitForBit,
// TestKQuantMatmulMatchesKernelsBitForBit).
func TestGGMLArithmeticMatchesReferenceExecutor(t *testing.T) {
	ran := 0
	for _, path := range referenceModels(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".gguf")
		t.Run(name, func(t *testing.T) {
			name, ref, f, m, ok := openReference(t, path)
			if !ok {
				t.Skip("no llama.cpp run, or an architecture irtool does not build")
			}
			if len(weightTypesOf(f).quant) > 0 {
				t.Skip("quantised matrices")
			}
			ran++
			var on, off float64
			first := -1
			t.Run("ggml", func(t *testing.T) { on, first = againstReference(t, m, f, ref, 1) })
			t.Run("device", func(t *testing.T) { off, _ = againstReference(t, m, f, ref, 0) })
			if on != 0 {
				t.Errorf("%s, ggml arithmetic: logits differ from the reference executor's by up to %.3g of max|logit| (first above 2e-6 at step %d), want bit-identical", name, on, first)
			}
			if off > 1e-3 {
				t.Errorf("%s, device arithmetic: %.3g of max|logit| from the reference executor, more than the 1e-3 of f32/f16 files", name, off)
			}
			if off <= 1e-6 {
				t.Errorf("%s, device arithmetic: within %.3g of the reference executor: the switch no longer changes the computation", name, off)
			}
			t.Logf("%s: ggml arithmetic max|Δ|/max|logit| %.2e, device arithmetic %.2e, over %d steps", name, on, off, len(ref.Generation.Tokens))
		})
	}
	if ran == 0 {
		t.Fatal("no reference model with f32/f16 matrices")
	}
}

// TestArithFromEnvironment: without a test's setting (irtfake_set("arith",
// -1)) the emulator takes its arithmetic from IRTFAKE_ARITH, as users of
// irtool run --backend cann set it: "ggml" gives stories260K's logits
// bit-identical to the reference executor, unset the device's arithmetic.
func TestArithFromEnvironment(t *testing.T) {
	_, ref, f, m, ok := openReference(t, testref.Testdata("stories260K.gguf"))
	if !ok {
		t.Skip("no llama.cpp run")
	}
	for _, c := range []struct {
		env  string
		ggml bool
	}{{"ggml", true}, {"", false}, {"cann", false}} {
		t.Run("IRTFAKE_ARITH="+c.env, func(t *testing.T) {
			t.Setenv("IRTFAKE_ARITH", c.env)
			worst, _ := againstReference(t, m, f, ref, -1)
			if c.ggml != (worst == 0) {
				t.Errorf("IRTFAKE_ARITH=%q: max|Δ|/max|logit| %.3g against the reference executor", c.env, worst)
			}
		})
	}
}
