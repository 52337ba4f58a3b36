package session_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/session"
)

// BenchmarkDecode measures greedy decode on the compiled plan (the
// session's default) of the graph as built: one op is one decode step (one
// token) after a 5-token prefill, with the KV cache growing from position
// 5; tokens/s is reported as a metric. The QuantDequant case is the
// baseline for the quantised path.
// Run: go test ./runtime/session -run '^$' -bench 'Decode$' -benchtime 200x
func BenchmarkDecode(b *testing.B) {
	cases := []struct {
		name string
		exec eval.ExecOptions
	}{
		{"stories260K", eval.ExecOptions{}},
		{"synth-llama-F32", eval.ExecOptions{}},
		{"synth-llama-Q4_0", eval.ExecOptions{}},
		// The baseline for the quantised path: the same model with its
		// weights dequantised to f32 row by row inside the matmul.
		{"synth-llama-Q4_0", eval.ExecOptions{Kernels: kernels.Options{Quant: kernels.QuantDequant}}},
	}
	for _, c := range cases {
		name := c.name
		b.Run(name+"/"+c.exec.Kernels.Quant.String(), func(b *testing.B) {
			f, m := testmodel.Build(b, testref.Testdata(name+".gguf"), models.Options{NCtx: 512})
			newSession := func() *session.Session {
				s, err := session.NewSession(m, f, session.SessionOptions{Exec: c.exec})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Step([]int32{1, 403, 407, 261, 378}); err != nil {
					b.Fatal(err)
				}
				return s
			}
			s := newSession()
			tok := int32(432)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if s.Pos() == s.NCtx() {
					b.StopTimer()
					s = newSession()
					b.StartTimer()
				}
				r, err := s.Step([]int32{tok})
				if err != nil {
					b.Fatal(err)
				}
				tok = session.Argmax(r.Logits[0])
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}

// BenchmarkPrefill measures a 64-token prefill step. IRTOOL_BENCH_MODELS
// (paths, colon-separated) adds larger GGUF files, e.g. the
// Qwen2.5-0.5B-shaped ones of docs/PERFORMANCE.md.
//
//	go test ./runtime/session -run '^$' -bench 'Prefill$' -benchtime 10x
func BenchmarkPrefill(b *testing.B) {
	paths := []string{testref.Testdata("stories260K.gguf"), testref.Testdata("synth-llama-Q4_0.gguf")}
	if env := os.Getenv("IRTOOL_BENCH_MODELS"); env != "" {
		paths = append(paths, strings.Split(env, ":")...)
	}
	for _, path := range paths {
		b.Run(strings.TrimSuffix(filepath.Base(path), ".gguf"), func(b *testing.B) {
			f, m := testmodel.Build(b, path, models.Options{NCtx: 256})
			prompt := make([]int32, 64)
			for i := range prompt {
				prompt[i] = int32(3 + i*7%500)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s, err := session.NewSession(m, f, session.SessionOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Step(prompt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(64*b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}
