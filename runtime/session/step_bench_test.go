package session

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
)

// BenchmarkDecodeStep measures one decode step of the compiled plan after
// the default pass pipeline (and, as MODEL-none, of the unfused graph of
// the required passes only: --passes none; synth-qwen3moe-Q4_0 runs the
// MoE ops mul_mat_id, top_k and sum_rows), at a fixed position (the session rewinds one
// token after each step, so every step has the same shape and n_kv), with
// StepLogits (no copies): the steady state of greedy decode. It reports
// allocations: the step allocates nothing. IRTOOL_BENCH_MODELS (paths,
// colon-separated) adds larger GGUF files, e.g. the Qwen2.5-0.5B-shaped
// ones of docs/PERFORMANCE.md.
//
//	go test ./runtime/session -run '^$' -bench DecodeStep -benchtime 200x
func BenchmarkDecodeStep(b *testing.B) {
	paths := []string{testref.Testdata("stories260K.gguf"), testref.Testdata("synth-llama-Q4_0.gguf"), testref.Testdata("synth-qwen3moe-Q4_0.gguf")}
	if env := os.Getenv("IRTOOL_BENCH_MODELS"); env != "" {
		paths = append(paths, strings.Split(env, ":")...)
	}
	for _, path := range paths {
		for _, pl := range []string{"default", "none"} {
			name := strings.TrimSuffix(filepath.Base(path), ".gguf")
			if pl != "default" {
				name += "-" + pl
			}
			b.Run(name, func(b *testing.B) {
				f, m := testmodel.Build(b, path, models.Options{NCtx: 256})
				pipe, _ := passes.Parse(pl)
				g, _, err := passes.Run(m.Graph, pipe, passes.Options{})
				if err != nil {
					b.Fatal(err)
				}
				opt := *m
				opt.Graph = g
				s, err := NewSession(&opt, f, SessionOptions{})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				if _, err := s.StepLogits([]int32{1, 403, 407, 261, 378}); err != nil {
					b.Fatal(err)
				}
				tok := []int32{432}
				// A step first compiles the decode plan. After a GC (which
				// empties the Go runtime's caches of the records, sudogs, a
				// parking worker waits on), more steps refill those caches;
				// until then a parking worker allocates one.
				for i := range 8 {
					if i == 1 {
						runtime.GC()
					}
					if _, err := s.StepLogits(tok); err != nil {
						b.Fatal(err)
					}
					s.pos--
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if _, err := s.StepLogits(tok); err != nil {
						b.Fatal(err)
					}
					s.pos--
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
			})
		}
	}
}
