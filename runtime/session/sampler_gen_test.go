package session_test

import (
	"slices"
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/session"
)

// GenerateWith with a Sampler on the embedded model: the same seed gives
// the same tokens, another seed others, temp 0 the greedy tokens, and the
// sampler sees the prompt (a repeat penalty over it changes the text).
func TestGenerateWithSampler(t *testing.T) {
	f, err := gguf.Parse(irtool.EmbeddedModel, "stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := models.Build(f, models.Options{NCtx: 64})
	if err != nil {
		t.Fatal(err)
	}
	prompt := []int32{1, 403, 407, 261, 378}
	gen := func(o *session.SamplerOptions) []int32 {
		t.Helper()
		s, err := session.NewSession(m, f, session.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var smp *session.Sampler
		if o != nil {
			if smp, err = session.NewSampler(*o); err != nil {
				t.Fatal(err)
			}
		}
		res, err := session.GenerateWith(s, prompt, 24, session.GenerateOptions{Sampler: smp, UBatch: 2})
		if err != nil {
			t.Fatal(err)
		}
		return res.Tokens
	}
	greedy := gen(nil)
	o := session.DefaultSamplerOptions()
	o.Seed = 42
	a, b := gen(&o), gen(&o)
	if !slices.Equal(a, b) {
		t.Errorf("seed 42 twice:\n%v\n%v", a, b)
	}
	o.Seed = 7
	if c := gen(&o); slices.Equal(a, c) {
		t.Errorf("seeds 42 and 7 gave the same %v", a)
	}
	if slices.Equal(a, greedy) {
		t.Errorf("seed 42 gave the greedy tokens %v", a)
	}
	z := o
	z.Temp = 0
	if g := gen(&z); !slices.Equal(g, greedy) {
		t.Errorf("temp 0:\n%v\nwant greedy\n%v", g, greedy)
	}
	// A strong penalty over the prompt's last tokens: the greedy choice
	// 432 of the first step is not in the prompt, but the greedy text
	// repeats tokens, which the penalty must change.
	z.RepeatPenalty, z.RepeatLastN = 5, 64
	if g := gen(&z); slices.Equal(g, greedy) {
		t.Errorf("repeat penalty 5 left the greedy tokens %v", g)
	}
}
