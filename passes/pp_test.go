package passes_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testsession"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/session"
)

// TestPPMatchesOneDevice: the stages of a pipeline, each a CPU session,
// give one device's tokens and logits bit for bit.
func TestPPMatchesOneDevice(t *testing.T) {
	prompt := []int32{1, 403, 407, 261, 378}
	const steps = 6
	for _, c := range []struct {
		file   string
		stages []int
	}{
		{"../testdata/stories260K.gguf", []int{2, 3, 5}},
		{"../testdata/synth-qwen3moe-Q4_0.gguf", []int{2}},
		{"../testdata/synth-gemma3-Q4_0.gguf", []int{2}},
	} {
		f := openModel(t, c.file)
		want := testsession.OneDevice(t, f, prompt, steps)
		m, err := models.Build(f, models.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range c.stages {
			graphs, err := passes.ShardPP(m.Graph, s)
			if err != nil {
				t.Fatalf("%s --pp %d: %v", c.file, s, err)
			}
			grp, err := device.NewGroup(passes.PPGroup, s, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var steppers []session.Stepper
			for k, g := range graphs {
				comm, _ := grp.Comm(k)
				sm := *m
				sm.Graph = g
				sess, err := session.NewSession(&sm, f, session.SessionOptions{Threads: 1,
					Exec: eval.ExecOptions{KernelSet: eval.NewCollectiveKernels(nil, comm)}})
				if err != nil {
					t.Fatalf("%s --pp %d stage %d: %v", c.file, s, k, err)
				}
				steppers = append(steppers, sess)
			}
			ranks, err := session.NewRanks(steppers, grp.Fail)
			if err != nil {
				t.Fatal(err)
			}
			got, err := session.Generate(ranks, prompt, steps, true, nil)
			if err != nil {
				t.Fatalf("%s --pp %d: %v", c.file, s, err)
			}
			if !slices.Equal(got.Tokens, want.Tokens) {
				t.Errorf("%s --pp %d: tokens %v, one device %v", c.file, s, got.Tokens, want.Tokens)
			}
			for i := range want.Logits {
				if d := relDiff(want.Logits[i], got.Logits[i]); d != 0 {
					t.Errorf("%s --pp %d: step %d logits differ by %.3g of max|logit|", c.file, s, i, d)
				}
			}
			// Each stage holds only its layers' KV caches.
			caches := graphs[0].Leaves(ir.OpState)
			if len(caches) >= 2*int(m.HParams.NLayer) {
				t.Errorf("%s --pp %d: stage 0 holds %d caches", c.file, s, len(caches))
			}
		}
	}
}

func TestShardPPRefuses(t *testing.T) {
	f := openModel(t, "../testdata/stories260K.gguf")
	m, err := models.Build(f, models.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []int{0, 6} {
		if _, err := passes.ShardPP(m.Graph, s); err == nil || !strings.Contains(err.Error(), "want 1..5 stages (the graph has 5 layers)") {
			t.Errorf("--pp %d: %v", s, err)
		}
	}
}

func openModel(t *testing.T, path string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
