package session_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/session"
)

// worstStepErr feeds llama.cpp's tokens (prompt, then its greedy tokens)
// through a CPU session with kernel options ko and returns the worst
// relative difference from llama.cpp's run: the full prefill and first
// decode logits, and the top-5 logits of every step (each relative to the
// step's max |logit|).
func worstStepErr(t *testing.T, f *gguf.File, ref *testmodel.LlamaRun, ko kernels.Options) float64 {
	t.Helper()
	m, err := models.Build(f, ref.Options(t))
	if err != nil {
		t.Fatal(err)
	}
	s, err := session.NewSession(m, f, session.SessionOptions{Exec: eval.ExecOptions{Kernels: ko}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	worst := 0.0
	feed := ref.Prompt.Tokens
	for i, tok := range ref.Generation.Tokens {
		res, err := s.Step(feed)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		logits := res.Logits[len(res.Logits)-1]
		switch i {
		case 0:
			worst = max(worst, testmodel.RelErr(logits, ref.Prefill.LogitsLast))
		case 1:
			worst = max(worst, testmodel.RelErr(logits, ref.Decode.Logits))
		}
		scale := 0.0
		for _, v := range logits {
			scale = max(scale, math.Abs(float64(v)))
		}
		for _, p := range ref.Generation.Top5[i] {
			worst = max(worst, math.Abs(float64(logits[int(p[0])])-p[1])/scale)
		}
		feed = []int32{tok}
	}
	return worst
}

// TestRepackedQ4KMatchesLlamaCpp checks the q4_K_8x8 order on a model whose
// every matrix is Q4_K with a multiple of 8 rows (llama-quantize --pure
// Q4_K_S of a 256-wide llama), against llama.cpp 3f545bec's run, which
// repacks them all: the default kernels (kernels.LlamaCurrent) match it to
// 1e-6 at every step, and the ggml_vec_dot_q4_K_q8_K order of older builds
// (kernels.LlamaC392e50) does not, so the test tells the two orders apart.
func TestRepackedQ4KMatchesLlamaCpp(t *testing.T) {
	const name = "synth-llama256-Q4_K"
	ref := testmodel.LoadRun(t, filepath.Join(testref.CopyDir(), "llamacpp", name+".llamacpp.json"))
	f, err := gguf.Open(testref.Testdata(name + ".gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if e := worstStepErr(t, f, ref, kernels.Options{}); e > 1e-6 {
		t.Errorf("q4_K_8x8 order (default): worst max|Δ|/max|logit| %.3g over 32 steps, want <= 1e-6", e)
	} else {
		t.Logf("q4_K_8x8 order (default): worst %.3g", e)
	}
	if e := worstStepErr(t, f, ref, kernels.Options{LlamaBuild: kernels.LlamaC392e50}); e <= 1e-6 {
		t.Errorf("vec_dot order (c392e50): worst %.3g: the reference no longer tells the orders apart", e)
	} else {
		t.Logf("vec_dot order (c392e50): worst %.3g (expected > 1e-6)", e)
	}
}
