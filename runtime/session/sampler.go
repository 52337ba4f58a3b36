package session

import (
	"fmt"
	"math"
	"slices"
)

// SamplerOptions configure a Sampler: llama.cpp's sampler chain
// (common/sampling.cpp, common_sampler_init, with its default order
// penalties → top-k → top-p → min-p → temperature → dist; the samplers it
// also chains by default, DRY, top-n-σ, typical and XTC, are disabled by
// their default values and not offered here).
type SamplerOptions struct {
	// Temp divides the logits before the final draw; 0 (or less, as in
	// llama.cpp) picks the largest penalised logit, the lowest id on ties:
	// greedy decoding, with no random draw.
	Temp float32
	// TopK keeps the K largest logits (ties: the lower id first); 0 keeps
	// them all.
	TopK int
	// TopP keeps the fewest most probable tokens whose probabilities sum
	// to at least TopP (nucleus sampling); 1 keeps them all. In (0, 1].
	TopP float32
	// MinP drops the tokens whose probability is below MinP times the most
	// probable one's; 0 keeps them all. In [0, 1].
	MinP float32
	// MinKeep is the fewest tokens top-p and min-p keep (llama.cpp's
	// min_keep; 0 and 1 both keep at least one).
	MinKeep int
	// RepeatPenalty penalises the tokens among the last RepeatLastN
	// accepted ones (the prompt's included): a positive logit is divided
	// by it, a negative or zero one multiplied; 1 disables it.
	RepeatPenalty float32
	// RepeatLastN is the window of RepeatPenalty: 0 disables it, -1 means
	// every token accepted so far.
	RepeatLastN int
	// Seed seeds the draw's random numbers (splitmix64): the same seed
	// and logits give the same tokens on every backend and machine.
	Seed uint64
}

// DefaultSamplerOptions are llama.cpp's defaults (common/common.h,
// common_params_sampling): temp 0.8, top_k 40, top_p 0.95, min_p 0.05,
// min_keep 0, repeat_penalty 1 (off) over the last 64 tokens. llama.cpp's
// default seed (LLAMA_DEFAULT_SEED) means a random one; pick one and set
// Seed.
func DefaultSamplerOptions() SamplerOptions {
	return SamplerOptions{Temp: 0.8, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1, RepeatLastN: 64}
}

// Greedy reports whether the options pick the largest logit with no draw.
func (o SamplerOptions) Greedy() bool { return o.Temp <= 0 }

// Check reports the first option out of its range.
func (o SamplerOptions) Check() error {
	bad := func(name string, v any, want string) error {
		return fmt.Errorf("session: sampler: %s %v is outside %s", name, v, want)
	}
	switch {
	case o.Temp != o.Temp || math.IsInf(float64(o.Temp), 0):
		return bad("temp", o.Temp, "the finite numbers")
	case o.TopK < 0:
		return bad("top_k", o.TopK, "0.. (0: off)")
	case !(o.TopP > 0 && o.TopP <= 1):
		return bad("top_p", o.TopP, "(0, 1]")
	case !(o.MinP >= 0 && o.MinP <= 1):
		return bad("min_p", o.MinP, "[0, 1]")
	case o.MinKeep < 0:
		return bad("min_keep", o.MinKeep, "0..")
	case !(o.RepeatPenalty > 0) || math.IsInf(float64(o.RepeatPenalty), 0):
		return bad("repeat_penalty", o.RepeatPenalty, "the positive numbers (1: off)")
	case o.RepeatLastN < -1:
		return bad("repeat_last_n", o.RepeatLastN, "-1.. (0: off, -1: every token)")
	}
	return nil
}

// Sampler picks each next token from a step's logits on the host, after
// the device (or the CPU) computed them, so every backend draws the same
// tokens from the same logits and seed. It holds the random state and the
// tokens accepted so far (for the repeat penalty); GenerateWith accepts
// the prompt and each token it picks. Not safe for concurrent use.
type Sampler struct {
	o    SamplerOptions
	rng  splitMix64
	hist []int32         // the last RepeatLastN accepted tokens (ring; all with -1)
	head int             // the oldest entry of hist once it is full
	seen map[int32]int32 // the count of each token in hist
	cur  []candidate     // the candidates of one draw (reused)
}

// candidate is a token still in the running, with its (filtered) logit
// and, after a softmax, its probability.
type candidate struct {
	id    int32
	logit float32
	p     float32
}

// NewSampler checks the options and returns a sampler seeded with o.Seed.
func NewSampler(o SamplerOptions) (*Sampler, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	s := &Sampler{o: o, seen: map[int32]int32{}}
	s.Reset()
	return s, nil
}

// Options returns the sampler's options.
func (s *Sampler) Options() SamplerOptions { return s.o }

// Reset forgets the accepted tokens and restarts the random numbers from
// the seed.
func (s *Sampler) Reset() {
	s.rng = splitMix64(s.o.Seed)
	s.hist = s.hist[:0]
	s.head = 0
	clear(s.seen)
}

// penalising reports whether the repeat penalty is on.
func (s *Sampler) penalising() bool {
	return s.o.RepeatLastN != 0 && s.o.RepeatPenalty != 1
}

// Accept records a token of the sequence (a prompt token or a sampled
// one) for the repeat penalty's window.
func (s *Sampler) Accept(tok int32) {
	if !s.penalising() {
		return
	}
	n := s.o.RepeatLastN
	if n < 0 || len(s.hist) < n {
		s.hist = append(s.hist, tok)
		s.seen[tok]++
		return
	}
	old := s.hist[s.head]
	if s.seen[old]--; s.seen[old] == 0 {
		delete(s.seen, old)
	}
	s.hist[s.head] = tok
	s.head = (s.head + 1) % n
	s.seen[tok]++
}

// Sample picks a token from one row of logits (n_vocab floats, left
// unchanged) through the chain; it does not Accept the token.
func (s *Sampler) Sample(logits []float32) int32 {
	if len(logits) == 0 {
		return 0
	}
	if s.o.Greedy() && !s.penalising() {
		return Argmax(logits)
	}
	s.cur = s.cur[:0]
	for i, l := range logits {
		s.cur = append(s.cur, candidate{id: int32(i), logit: l})
	}
	c := s.cur
	if s.penalising() {
		penalise(c, s.seen, s.o.RepeatPenalty)
	}
	if s.o.Greedy() {
		best := 0
		for i := range c {
			if c[i].logit > c[best].logit {
				best = i
			}
		}
		return c[best].id
	}
	sorted := false
	if s.o.TopK > 0 {
		c, sorted = topK(c, s.o.TopK), true
	}
	if s.o.TopP < 1 {
		c, sorted = topP(c, s.o.TopP, s.o.MinKeep, sorted), true
	}
	if s.o.MinP > 0 {
		c = minP(c, s.o.MinP, s.o.MinKeep, sorted)
	}
	return c[draw(c, s.o.Temp, s.rng.float64())].id
}

// penalise applies the repeat penalty to the tokens seen in the window
// (c holds the whole vocabulary in id order): llama.cpp's
// llama_sampler_penalties divides a positive logit by the penalty and
// multiplies the others, so that a penalty above 1 always lowers a
// token's probability.
func penalise(c []candidate, seen map[int32]int32, penalty float32) {
	for id := range seen {
		if int(id) >= len(c) {
			continue
		}
		if l := &c[id].logit; *l <= 0 {
			*l *= penalty
		} else {
			*l /= penalty
		}
	}
}

// better orders candidates: larger logit first, the lower id on ties
// (llama.cpp's std::partial_sort leaves the order of ties unspecified).
func better(a, b candidate) bool {
	return a.logit > b.logit || a.logit == b.logit && a.id < b.id
}

func byBetter(a, b candidate) int {
	switch {
	case better(a, b):
		return -1
	case better(b, a):
		return 1
	}
	return 0
}

// topK keeps the k best candidates, sorted best first.
func topK(c []candidate, k int) []candidate {
	k = min(k, len(c))
	if k*4 >= len(c) {
		slices.SortFunc(c, byBetter)
		return c[:k]
	}
	// A min-heap (the worst at the root) of the best k seen so far.
	h := c[:k]
	down := func(i int) {
		for {
			w := i
			if l := 2*i + 1; l < k && better(h[w], h[l]) {
				w = l
			}
			if r := 2*i + 2; r < k && better(h[w], h[r]) {
				w = r
			}
			if w == i {
				return
			}
			h[i], h[w] = h[w], h[i]
			i = w
		}
	}
	for i := k/2 - 1; i >= 0; i-- {
		down(i)
	}
	for _, x := range c[k:] {
		if better(x, h[0]) {
			h[0] = x
			down(0)
		}
	}
	slices.SortFunc(h, byBetter)
	return h
}

// softmax sets each candidate's probability from the logits (in float32,
// shifted by the largest logit, as llama.cpp does).
func softmax(c []candidate) {
	mx := c[0].logit
	for _, x := range c[1:] {
		mx = max(mx, x.logit)
	}
	var sum float32
	for i := range c {
		c[i].p = float32(math.Exp(float64(c[i].logit - mx)))
		sum += c[i].p
	}
	for i := range c {
		c[i].p /= sum
	}
}

// topP keeps the best candidates until their probabilities sum to at
// least p, and at least minKeep of them: llama.cpp's llama_sampler_top_p
// (cumulative sum in float32). The result is sorted best first.
func topP(c []candidate, p float32, minKeep int, sorted bool) []candidate {
	softmax(c)
	if !sorted {
		slices.SortFunc(c, byBetter)
	}
	var cum float32
	for i := range c {
		cum += c[i].p
		if cum >= p && i+1 >= minKeep {
			return c[:i+1]
		}
	}
	return c
}

// minP drops the candidates whose probability is below p times the
// largest one's, keeping at least minKeep (and always the best):
// llama.cpp's llama_sampler_min_p, which compares logits with the largest
// logit plus log(p). Order is kept.
func minP(c []candidate, p float32, minKeep int, sorted bool) []candidate {
	lg := float32(math.Log(float64(p)))
	if !sorted {
		mx := c[0].logit
		for _, x := range c[1:] {
			mx = max(mx, x.logit)
		}
		floor := mx + lg
		n := 0
		for _, x := range c {
			if x.logit >= floor {
				n++
			}
		}
		if n > 0 && n >= minKeep {
			n = 0
			for _, x := range c {
				if x.logit >= floor {
					c[n] = x
					n++
				}
			}
			return c[:n]
		}
		slices.SortFunc(c, byBetter)
	}
	floor := c[0].logit + lg
	i := 1
	for ; i < len(c); i++ {
		if c[i].logit < floor && i >= minKeep {
			break
		}
	}
	return c[:i]
}

// draw picks a candidate with probability proportional to
// exp(logit/temp): llama.cpp's llama_sampler_temp then
// llama_sampler_dist (float32 exponentials, summed in float64, one
// uniform number u in [0, 1), the first candidate whose running sum
// reaches u times the total). The temperature divides the difference to
// the largest logit, (l - max)/temp, rather than each logit, so that a
// tiny temperature cannot overflow the logits to infinities.
func draw(c []candidate, temp float32, u float64) int {
	if len(c) <= 1 {
		return 0
	}
	mx := c[0].logit
	for _, x := range c[1:] {
		mx = max(mx, x.logit)
	}
	var sum float64
	for i := range c {
		c[i].p = 1
		if c[i].logit != mx {
			c[i].p = float32(math.Exp(float64((c[i].logit - mx) / temp)))
		}
		sum += float64(c[i].p)
	}
	target := sum * u
	var run float64
	for i := range c {
		run += float64(c[i].p)
		if run >= target {
			return i
		}
	}
	return len(c) - 1
}

// splitMix64 is the state of SplitMix64 (Steele, Lea and Flood, "Fast
// splittable pseudorandom number generators", OOPSLA 2014; the constants
// of Vigna's public-domain reference): a 64-bit counter advanced by the
// golden-ratio increment and mixed by two xor-shift-multiplies.
type splitMix64 uint64

func (s *splitMix64) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// float64 is a uniform number in [0, 1) with 53 random bits.
func (s *splitMix64) float64() float64 {
	return float64(s.next()>>11) * 0x1p-53
}
