package program

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/session"
)

// archModels are llama-quantize Q4_0 variants of the qwen3, qwen3moe,
// gemma3, phi3, llama3rope and llamamoe reference models and a 256-wide
// llama whose matrices are all Q4_K (repacked to q4_K_8x8 by llama.cpp),
// with llama.cpp's runs on them (testdata/README.md).
var archModels = []string{"synth-qwen3-Q4_0", "synth-qwen3moe-Q4_0", "synth-gemma3-Q4_0", "synth-phi3-Q4_0", "synth-llama3rope-Q4_0", "synth-llamamoe-Q4_0",
	"synth-llama256-Q4_K"}

// archBound is the accepted bound on max|Δlogit| / max|logit| against
// llama.cpp's logits for the models of archModels.
const archBound = 1e-6

// TestArchModelsMatchLlamaCpp feeds llama.cpp's tokens through the
// CPU reference session and through the whole pipeline on the simulated
// device (default passes, partition, plan, CANN lowering, ACL graphs) and
// compares the prefill and first decode logits in full and the top-5 of
// every one of the 32 steps with llama.cpp's. The decode steps must be
// captured once and then replayed.
func TestArchModelsMatchLlamaCpp(t *testing.T) {
	for _, name := range archModels {
		t.Run(name, func(t *testing.T) {
			ref := testmodel.LoadRun(t, filepath.Join(testref.CopyDir(), "llamacpp", name+".llamacpp.json"))
			f, err := gguf.Open(testref.Testdata(name + ".gguf"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			m, err := models.Build(f, models.Options{NCtx: ref.Context.NCtx})
			if err != nil {
				t.Fatal(err)
			}
			cpu, err := session.NewSession(m, f, session.SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			sim, err := NewRunner(m, f, newSim(t), Options{Policy: policy(true)})
			if err != nil {
				t.Fatal(err)
			}
			defer sim.Close()
			for _, be := range []struct {
				name string
				s    session.Stepper
			}{{"cpu", cpu}, {"sim", sim}} {
				feed := ref.Prompt.Tokens
				for i, tok := range ref.Generation.Tokens {
					res, err := be.s.Step(feed)
					if err != nil {
						t.Fatalf("%s step %d: %v", be.name, i, err)
					}
					logits := res.Logits[len(res.Logits)-1]
					switch i {
					case 0:
						if e := testmodel.RelErr(logits, ref.Prefill.LogitsLast); e > archBound {
							t.Errorf("%s prefill: max|Δ|/max|logit| = %.3g", be.name, e)
						}
					case 1:
						if e := testmodel.RelErr(logits, ref.Decode.Logits); e > archBound {
							t.Errorf("%s decode: max|Δ|/max|logit| = %.3g", be.name, e)
						}
					}
					scale := 0.0
					for _, v := range logits {
						scale = max(scale, math.Abs(float64(v)))
					}
					top5 := ref.Generation.Top5[i]
					for _, p := range top5 {
						if d := math.Abs(float64(logits[int(p[0])]) - p[1]); d > archBound*scale {
							t.Errorf("%s step %d: logit[%d] = %g, llama.cpp %g", be.name, i, int(p[0]), logits[int(p[0])], p[1])
						}
					}
					if got := session.Argmax(logits); got != tok && top5[0][1]-top5[1][1] > 2*archBound*scale {
						t.Errorf("%s step %d: token %d, llama.cpp %d", be.name, i, got, tok)
					}
					feed = []int32{tok}
				}
			}
			st := sim.Stats()
			if st.Decode.Captures == 0 || st.Decode.Replays == 0 {
				t.Errorf("decode: %d captures, %d replays; want the decode segments captured and replayed", st.Decode.Captures, st.Decode.Replays)
			}
		})
	}
}
