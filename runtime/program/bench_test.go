package program

import (
	"testing"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/models"
)

// BenchmarkDecodeDispatch measures one decode step of stories260K on the
// simulated device, eager and with graph replay, at a fixed position (the
// session rewinds after each step, so every step after the first is in
// the same bucket). Besides ns/op (the whole step: host dispatch plus the
// simulated device computing), it reports host-dispatch-ns/token: the
// host time spent feeding the device, which is what graph replay removes,
// and launches/token.
func BenchmarkDecodeDispatch(b *testing.B) {
	for _, pipe := range []string{"none", "default"} {
		for _, graphs := range []bool{false, true} {
			name := "passes=" + pipe + "/eager"
			if graphs {
				name = "passes=" + pipe + "/graph"
			}
			b.Run(name, func(b *testing.B) {
				f, m := openModel(b, "stories260K.gguf", models.Options{NCtx: 256})
				s, err := NewRunner(m, f, newSim(b), Options{Policy: policy(graphs), Compile: compiler.Options{Passes: pipe}})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				if _, err := s.Step(prompt); err != nil {
					b.Fatal(err)
				}
				pos := s.Pos()
				step := func() {
					if _, err := s.Step([]int32{prompt[len(prompt)-1]}); err != nil {
						b.Fatal(err)
					}
					if err := s.Rewind(pos); err != nil {
						b.Fatal(err)
					}
				}
				step() // compile, load and (graph mode) capture the bucket
				before := s.Stats().Decode
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					step()
				}
				b.StopTimer()
				after := s.Stats().Decode
				tokens := float64(after.Tokens - before.Tokens)
				b.ReportMetric(float64(after.HostDispatchNS-before.HostDispatchNS)/tokens, "host-dispatch-ns/token")
				b.ReportMetric(float64(after.KernelLaunches-before.KernelLaunches)/tokens, "launches/token")
				b.ReportMetric(float64(after.Replays-before.Replays)/tokens, "replays/token")
				if graphs && after.Captures != before.Captures {
					b.Fatalf("captured during the timed loop: %+v", after)
				}
			})
		}
	}
}
