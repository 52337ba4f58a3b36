package session_test

import (
	"path/filepath"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/kernels"
)

// TestQuantTypesMatchLlamaCpp runs the models whose matrices are all of
// one of the types llama-quantize makes besides Q4_0/Q8_0/Q4_K/Q6_K
// (`llama-quantize --pure` of the synth-llama F32 masters: Q5_0, Q5_1,
// Q4_1, IQ4_NL at n_embd 64, IQ4_XS and Q3_K_S at n_embd 256) through a CPU
// session with the default kernels and compares every step with llama.cpp
// 3f545bec's run (llama-ref): the full prefill and first decode logits and
// the top-5 of all 32 greedy steps, relative to each step's max |logit|.
func TestQuantTypesMatchLlamaCpp(t *testing.T) {
	for _, name := range []string{"synth-llama-Q5_0", "synth-llama-Q5_1", "synth-llama-Q4_1",
		"synth-llama-IQ4_NL", "synth-llama256-IQ4_XS", "synth-llama256-Q3_K_S"} {
		t.Run(name, func(t *testing.T) {
			ref := testmodel.LoadRun(t, filepath.Join(testref.CopyDir(), "llamacpp", name+".llamacpp.json"))
			f, err := gguf.Open(testref.Testdata(name + ".gguf"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if e := worstStepErr(t, f, ref, kernels.Options{}); e > 1e-6 {
				t.Errorf("worst max|Δ|/max|logit| %.3g over 32 steps, want <= 1e-6", e)
			} else {
				t.Logf("worst %.3g", e)
			}
		})
	}
}
