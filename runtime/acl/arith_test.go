//go:build cann

package acl

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
)

// againstReference runs m on a device in the "ggml" QuantMatmul mode with
// the emulator's arithmetic arith (1 ggml-cpu's, 0 the device's) and the
// CPU reference executor in step over ref's tokens, and returns the worst
// max|Δ|/max|logit| of a step and the first step above 2e-6 (-1: none).
func againstReference(t *testing.T, m *models.Model, f *gguf.File, ref *testmodel.LlamaRun, arith int64) (worst float64, first int) {
	t.Helper()
	d := newDevice(t, Options{PoolBytes: max(256<<20, 2*modelPool(f, QuantMatmulGGML)), WorkspaceReserve: 16 << 20, QuantMatmul: QuantMatmulGGML})
	fake.Set("arith", arith)
	pol := device.DefaultGraphPolicy()
	pol.Graphs = false
	s, cpu := pairedSessions(t, m, f, d, program.Options{Policy: pol, Compile: program.CompileOptions{Target: "ascend910b"}, Kernels: ref.Kernels(t)})
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

// TestGGMLArithmeticSurvey logs, for every reference model, the "ggml"
// mode against the CPU reference executor with the emulator's ggml-cpu
// arithmetic on and off.
func TestGGMLArithmeticSurvey(t *testing.T) {
	for _, path := range referenceModels(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".gguf")
		t.Run(name, func(t *testing.T) {
			name, ref, f, m, ok := openReference(t, path)
			if !ok {
				t.Skip("no llama.cpp run, or an architecture irtool does not build")
			}
			on, fon := againstReference(t, m, f, ref, 1)
			off, foff := againstReference(t, m, f, ref, 0)
			t.Logf("%s: ggml arithmetic worst %.2e (first step above 2e-6: %d); device arithmetic worst %.2e (first %d)", name, on, fon, off, foff)
		})
	}
}
