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

// TestSessionsShareRepackedWeights opens two sessions on one model file:
// the second reuses the first's repacked Q4_K copies (kernels.WeightPacks'
// process cache) instead of making its own, the copies outlive the first
// session's Close while the second holds them, and leave with the last.
func TestSessionsShareRepackedWeights(t *testing.T) {
	f, err := gguf.Open(testref.Testdata("synth-llama256-Q4_K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := models.Build(f, models.Options{NCtx: 64})
	if err != nil {
		t.Fatal(err)
	}
	n0, b0 := kernels.SharedPacks()
	step := func() *session.Session {
		s, err := session.NewSession(m, f, session.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Step([]int32{1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	s1 := step()
	n1, b1 := kernels.SharedPacks()
	if s1.PackedBytes() == 0 {
		s1.Close()
		t.Skip("nothing repacked in this build (no AVX2, or -tags purego)")
	}
	if b1-b0 != s1.PackedBytes() || n1 == n0 {
		t.Fatalf("first session: %d bytes in %d new copies in the process, session reports %d", b1-b0, n1-n0, s1.PackedBytes())
	}
	s2 := step()
	if n, b := kernels.SharedPacks(); n != n1 || b != b1 {
		t.Fatalf("second session made copies of its own: %d copies, %d bytes (after the first: %d, %d)", n, b, n1, b1)
	}
	if s2.PackedBytes() != s1.PackedBytes() {
		t.Fatalf("sessions hold %d and %d bytes of the same copies", s1.PackedBytes(), s2.PackedBytes())
	}
	s1.Close()
	if n, b := kernels.SharedPacks(); n != n1 || b != b1 {
		t.Fatalf("after closing the first session: %d copies, %d bytes; want %d, %d (the second still uses them)", n, b, n1, b1)
	}
	if _, err := s2.Step([]int32{4}); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	if n, b := kernels.SharedPacks(); n != n0 || b != b0 {
		t.Fatalf("after closing both: %d copies, %d bytes; want %d, %d", n, b, n0, b0)
	}
}

// TestKQuantMixesMatchLlamaCpp checks llama-quantize's Q4_K_M, Q5_K_M and
// Q6_K mixes of the reference set's 256-wide llama (q4_K, q5_K and q6_K
// matrices) against llama.cpp
// 3f545bec's llama-ref runs of them (testdata/reference, trimmed): the
// default kernels — Q4_K from its q4_K_8x8-ordered interleaved copy, Q5_K
// and Q6_K rows in that build's vec_dot orders — stay within 1e-6 of every
// step. The models are the external reference set's (skipped when absent).
func TestKQuantMixesMatchLlamaCpp(t *testing.T) {
	for _, name := range []string{"synth-llama256-Q4_K_M", "synth-llama256-Q5_K_M", "synth-llama256-Q6_K"} {
		t.Run(name, func(t *testing.T) {
			ref := testmodel.LoadRun(t, filepath.Join(testref.CopyDir(), "llamacpp", name+".3f545bec.llamacpp.json"))
			f, err := gguf.Open(testref.Shared(t, "models/"+name+".gguf"))
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
