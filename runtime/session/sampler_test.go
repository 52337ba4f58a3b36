package session

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// cands makes the candidates of a vocabulary from logits, in id order.
func cands(logits ...float32) []candidate {
	c := make([]candidate, len(logits))
	for i, l := range logits {
		c[i] = candidate{id: int32(i), logit: l}
	}
	return c
}

func ids(c []candidate) []int32 {
	var out []int32
	for _, x := range c {
		out = append(out, x.id)
	}
	return out
}

// logs returns the logarithms of probabilities: logits whose softmax is p.
func logs(p ...float64) []float32 {
	out := make([]float32, len(p))
	for i, x := range p {
		out[i] = float32(math.Log(x))
	}
	return out
}

func TestTopK(t *testing.T) {
	for _, tc := range []struct {
		name   string
		logits []float32
		k      int
		want   []int32
	}{
		{"ties keep the lower ids", []float32{1, 3, 3, 2, 3}, 2, []int32{1, 2}},
		{"all tied", []float32{0, 0, 0, 0}, 3, []int32{0, 1, 2}},
		{"k past the vocabulary", []float32{1, 2}, 5, []int32{1, 0}},
		{"negative and -inf", []float32{float32(math.Inf(-1)), -1, -3, -2}, 3, []int32{1, 3, 2}},
	} {
		if got := ids(topK(cands(tc.logits...), tc.k)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: top-%d of %v = %v, want %v", tc.name, tc.k, tc.logits, got, tc.want)
		}
	}
	// The heap path (k much smaller than the vocabulary) agrees with a
	// full sort, ties included.
	var l []float32
	for i := range 1000 {
		l = append(l, float32((i*7919)%97)/8)
	}
	full := cands(l...)
	slices.SortFunc(full, byBetter)
	for _, k := range []int{1, 5, 40, 200} {
		if got, want := ids(topK(cands(l...), k)), ids(full[:k]); !slices.Equal(got, want) {
			t.Errorf("top-%d over 1000 logits: %v, want %v", k, got, want)
		}
	}
}

func TestTopP(t *testing.T) {
	// Probabilities 0.5, 0.3, 0.15, 0.05 in a shuffled order.
	l := logs(0.15, 0.5, 0.05, 0.3)
	for _, tc := range []struct {
		p       float32
		minKeep int
		want    []int32
	}{
		{0.4, 0, []int32{1}},
		{0.6, 0, []int32{1, 3}},
		{0.9, 0, []int32{1, 3, 0}},
		{0.99, 0, []int32{1, 3, 0, 2}},
		{0.4, 3, []int32{1, 3, 0}}, // min_keep
		{1, 0, []int32{1, 3, 0, 2}},
	} {
		if got := ids(topP(cands(l...), tc.p, tc.minKeep, false)); !slices.Equal(got, tc.want) {
			t.Errorf("top-p %v min_keep %d: %v, want %v", tc.p, tc.minKeep, got, tc.want)
		}
	}
}

func TestMinP(t *testing.T) {
	l := logs(0.15, 0.5, 0.05, 0.3)
	for _, tc := range []struct {
		p       float32
		minKeep int
		sorted  bool
		want    []int32
	}{
		{0.2, 0, false, []int32{0, 1, 3}},     // 0.05 < 0.2*0.5; order kept
		{0.7, 0, false, []int32{1}},           // 0.3 < 0.35
		{0.5, 0, false, []int32{1, 3}},        // 0.3 >= 0.25
		{0.7, 2, false, []int32{1, 3}},        // min_keep: sorted, best first
		{0.2, 0, true, []int32{1, 3, 0}},      // already sorted input
		{0.01, 0, false, []int32{0, 1, 2, 3}}, // keeps all
	} {
		c := cands(l...)
		if tc.sorted {
			slices.SortFunc(c, byBetter)
		}
		if got := ids(minP(c, tc.p, tc.minKeep, tc.sorted)); !slices.Equal(got, tc.want) {
			t.Errorf("min-p %v min_keep %d sorted %v: %v, want %v", tc.p, tc.minKeep, tc.sorted, got, tc.want)
		}
	}
}

// The repeat penalty as llama.cpp applies it: positive logits divided,
// negative and zero ones multiplied, each token once however often it
// was seen, only tokens in the window.
func TestRepeatPenalty(t *testing.T) {
	c := cands(2, -2, 1, 0, 3)
	penalise(c, map[int32]int32{0: 3, 1: 1, 3: 1}, 2)
	want := []float32{1, -4, 1, 0, 3}
	for i, x := range c {
		if x.logit != want[i] {
			t.Errorf("logit %d: %v, want %v", i, x.logit, want[i])
		}
	}
	// The window: the last 3 accepted tokens.
	s, err := NewSampler(SamplerOptions{Temp: 0, TopP: 1, RepeatPenalty: 100, RepeatLastN: 3})
	if err != nil {
		t.Fatal(err)
	}
	logits := []float32{5, 4, 3, 2}
	if got := s.Sample(logits); got != 0 {
		t.Fatalf("no history: %d, want 0", got)
	}
	for _, tok := range []int32{0, 1, 0, 2, 3} { // window now 0, 2, 3
		s.Accept(tok)
	}
	if got := s.Sample(logits); got != 1 {
		t.Errorf("window {0,2,3} penalised: picked %d, want 1", got)
	}
	if logits[0] != 5 {
		t.Errorf("Sample changed its input: %v", logits)
	}
	s.Reset()
	if got := s.Sample(logits); got != 0 {
		t.Errorf("after Reset: %d, want 0", got)
	}
}

// draw picks token i with probability softmax(logits)[i].
func TestDrawFrequencies(t *testing.T) {
	s, err := NewSampler(SamplerOptions{Temp: 1, TopP: 1, RepeatPenalty: 1, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	p := []float64{0.6, 0.25, 0.1, 0.05}
	l := logs(p...)
	const n = 40000
	count := make([]int, len(p))
	for range n {
		count[s.Sample(l)]++
	}
	for i, c := range count {
		got := float64(c) / n
		if sd := math.Sqrt(p[i] * (1 - p[i]) / n); math.Abs(got-p[i]) > 5*sd {
			t.Errorf("token %d drawn %.4f of the time, want %.4f (±%.4f)", i, got, p[i], 5*sd)
		}
	}
	// Temperature: 0.5 squares the odds (0.6:0.25 becomes 0.36:0.0625).
	s, _ = NewSampler(SamplerOptions{Temp: 0.5, TopP: 1, RepeatPenalty: 1, Seed: 7})
	clear(count)
	for range n {
		count[s.Sample(l)]++
	}
	q := []float64{0.36, 0.0625, 0.01, 0.0025}
	var z float64
	for _, x := range q {
		z += x
	}
	for i, c := range count {
		want := q[i] / z
		if sd := math.Sqrt(want * (1 - want) / n); math.Abs(float64(c)/n-want) > 5*sd+1e-4 {
			t.Errorf("temp 0.5: token %d drawn %.4f of the time, want %.4f", i, float64(c)/n, want)
		}
	}
}

// The whole chain on hand-made logits: top-k, then top-p, then min-p cut
// the candidates before the draw; only survivors are ever drawn.
func TestChain(t *testing.T) {
	l := logs(0.3, 0.02, 0.25, 0.2, 0.15, 0.08)
	for _, tc := range []struct {
		o    SamplerOptions
		want []int32 // the tokens that may be drawn
	}{
		{SamplerOptions{Temp: 1, TopK: 2, TopP: 1, RepeatPenalty: 1}, []int32{0, 2}},
		{SamplerOptions{Temp: 1, TopP: 0.7, RepeatPenalty: 1}, []int32{0, 2, 3}},
		{SamplerOptions{Temp: 1, TopP: 1, MinP: 0.6, RepeatPenalty: 1}, []int32{0, 2, 3}},
		{SamplerOptions{Temp: 1, TopK: 4, TopP: 0.5, MinP: 0.8, RepeatPenalty: 1}, []int32{0, 2}}, // 0.25/0.3 >= 0.8
		{SamplerOptions{Temp: 1, TopK: 4, TopP: 0.5, MinP: 0.9, RepeatPenalty: 1}, []int32{0}},
		{SamplerOptions{Temp: 1, TopP: 1, RepeatPenalty: 1}, []int32{0, 1, 2, 3, 4, 5}},
	} {
		s, err := NewSampler(tc.o)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int32]bool{}
		for range 3000 {
			seen[s.Sample(l)] = true
		}
		var got []int32
		for id := range seen {
			got = append(got, id)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%+v: drew %v, want exactly %v", tc.o, got, tc.want)
		}
	}
}

func TestGreedySampler(t *testing.T) {
	s, err := NewSampler(SamplerOptions{Temp: 0, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1, RepeatLastN: 64, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range [][]float32{{1, 3, 3, 2}, {-1, -2}, {0}} {
		if got, want := s.Sample(l), Argmax(l); got != want {
			t.Errorf("temp 0 on %v: %d, argmax %d", l, got, want)
		}
	}
}

func TestSamplerSeeds(t *testing.T) {
	seq := func(seed uint64) []int32 {
		o := DefaultSamplerOptions()
		o.Seed = seed
		s, err := NewSampler(o)
		if err != nil {
			t.Fatal(err)
		}
		l := logs(0.3, 0.25, 0.2, 0.15, 0.1)
		var out []int32
		for range 64 {
			out = append(out, s.Sample(l))
		}
		return out
	}
	if a, b := seq(42), seq(42); !slices.Equal(a, b) {
		t.Errorf("seed 42 twice: %v and %v", a, b)
	}
	if a, b := seq(42), seq(7); slices.Equal(a, b) {
		t.Errorf("seeds 42 and 7 drew the same %v", a)
	}
}

// SplitMix64's published outputs (the reference generator seeded with 0,
// and Java's SplittableRandom test vector for seed 1234567).
func TestSplitMix64(t *testing.T) {
	s := splitMix64(0)
	if got := s.next(); got != 0xe220a8397b1dcdaf {
		t.Errorf("seed 0: %#x, want 0xe220a8397b1dcdaf", got)
	}
	s = splitMix64(1234567)
	for _, want := range []uint64{6457827717110365317, 3203168211198807973, 9817491932198370423} {
		if got := s.next(); got != want {
			t.Errorf("seed 1234567: %d, want %d", got, want)
		}
	}
}

func TestSamplerOptionsCheck(t *testing.T) {
	ok := DefaultSamplerOptions()
	if err := ok.Check(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	nan := float32(math.NaN())
	for _, tc := range []struct {
		edit func(*SamplerOptions)
		want string
	}{
		{func(o *SamplerOptions) { o.Temp = nan }, "temp"},
		{func(o *SamplerOptions) { o.TopK = -1 }, "top_k -1"},
		{func(o *SamplerOptions) { o.TopP = 0 }, "top_p 0 is outside (0, 1]"},
		{func(o *SamplerOptions) { o.TopP = 1.5 }, "top_p 1.5"},
		{func(o *SamplerOptions) { o.MinP = -0.1 }, "min_p -0.1"},
		{func(o *SamplerOptions) { o.MinKeep = -2 }, "min_keep"},
		{func(o *SamplerOptions) { o.RepeatPenalty = 0 }, "repeat_penalty 0"},
		{func(o *SamplerOptions) { o.RepeatLastN = -2 }, "repeat_last_n -2"},
	} {
		o := ok
		tc.edit(&o)
		if _, err := NewSampler(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %q", o, err, tc.want)
		}
	}
}

// A tiny temperature would overflow logits divided by it to infinities;
// the draw still picks the largest.
func TestTinyTemperature(t *testing.T) {
	s, err := NewSampler(SamplerOptions{Temp: 1e-40, TopP: 1, RepeatPenalty: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if got := s.Sample([]float32{1, 3, 2, -5}); got != 1 {
			t.Fatalf("temp 1e-40: drew %d, want 1", got)
		}
	}
}
