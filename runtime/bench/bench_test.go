package bench_test

import (
	"slices"
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/bench"
	"github.com/irtool/irtool/runtime/session"
)

func TestMeanStddev(t *testing.T) {
	m, s := bench.MeanStddev([]float64{2, 4, 4, 4, 5, 5, 7, 9})
	if m != 5 || s < 2.138 || s > 2.139 { // sample sd = sqrt(32/7)
		t.Errorf("MeanStddev = %v, %v", m, s)
	}
	if m, s := bench.MeanStddev([]float64{3}); m != 3 || s != 0 {
		t.Errorf("one value: %v, %v", m, s)
	}
}

func TestNeed(t *testing.T) {
	for _, c := range []struct {
		t    bench.Tests
		want int64
	}{
		{bench.Tests{}, 0},
		{bench.Tests{Prompts: []int{64, 8}, Gens: []int{32}}, 64},
		{bench.Tests{Prompts: []int{4}, PG: [][2]int{{16, 20}}}, 36},
	} {
		if got := c.t.Need(); got != c.want {
			t.Errorf("%+v.Need() = %d, want %d", c.t, got, c.want)
		}
	}
}

// TestRun runs every kind of test on the embedded model: one row per test
// in the order prefill, decode, prefill+decode, each with a positive rate.
func TestRun(t *testing.T) {
	f, err := gguf.Parse(irtool.EmbeddedModel, "stories260K.gguf")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := models.Build(f, models.Options{NCtx: 256})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := session.NewSession(m, f, session.SessionOptions{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	res, err := bench.Run(sess, f, m.HParams.NVocab, bench.Tests{Prompts: []int{5}, Gens: []int{3}, PG: [][2]int{{2, 2}}, Reps: 2}, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range res {
		names = append(names, r.Test)
		if r.TokS <= 0 || r.Threads != 1 || r.UBatch != 2 || r.NPrompt+r.NGen == 0 {
			t.Errorf("row %+v", r)
		}
	}
	if want := []string{"pp5", "tg3", "pp2+tg2"}; !slices.Equal(names, want) {
		t.Errorf("tests %v, want %v", names, want)
	}
	size, params := bench.ModelSize(f)
	if size <= 0 || params <= 0 || size < params {
		t.Errorf("ModelSize = %d B, %d params", size, params)
	}
}
