package session_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/runtime/session"
)

// The unfused graph (as models.Build makes it: --passes none) and the
// default pipeline's fused graph give the same logits bit for bit on the
// compiled plan, over a prefill and greedy decode steps, at 1 and 2
// threads: the fused kernels are defined as bit-identical to the ops they
// replace, and the unfused graph's ops run as prepared jobs too.
func TestUnfusedMatchesFused(t *testing.T) {
	prompt := []int32{1, 403, 407, 261, 378, 9, 60, 301}
	for _, name := range []string{"stories260K", "synth-llama-Q4_0", "synth-gemma3-Q4_0", "synth-qwen2-tied-Q4_0", "synth-qwen3moe-Q4_0", "synth-llamamoe-Q4_0"} {
		for _, threads := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/t%d", name, threads), func(t *testing.T) {
				f, m := testmodel.Build(t, testref.Testdata(name+".gguf"), models.Options{NCtx: 64})
				pipe, err := passes.Parse("default")
				if err != nil {
					t.Fatal(err)
				}
				g, _, err := passes.Run(m.Graph, pipe, passes.Options{})
				if err != nil {
					t.Fatal(err)
				}
				fused := *m
				fused.Graph = g
				var ss [2]*session.Session
				for i, mm := range []*models.Model{m, &fused} {
					if ss[i], err = session.NewSession(mm, f, session.SessionOptions{Threads: threads}); err != nil {
						t.Fatal(err)
					}
					defer ss[i].Close()
				}
				feed := prompt
				for step := range 12 {
					var logits [2][]float32
					for i, s := range ss {
						r, err := s.Step(feed)
						if err != nil {
							t.Fatalf("step %d: %v", step, err)
						}
						logits[i] = r.Logits[len(r.Logits)-1]
					}
					for k := range logits[0] {
						if math.Float32bits(logits[0][k]) != math.Float32bits(logits[1][k]) {
							t.Fatalf("step %d: logit %d unfused %v, fused %v", step, k, logits[0][k], logits[1][k])
						}
					}
					feed = []int32{session.Argmax(logits[0])}
				}
			})
		}
	}
}
