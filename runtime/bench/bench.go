// Package bench measures the CPU executor as llama.cpp's llama-bench
// measures llama.cpp (irtool bench): prefill ("ppN") of random token ids in
// steps of n_ubatch tokens on an empty KV cache, decode ("tgN") one token at
// a time, and both in one run ("ppPP+tgTG"); each test runs once untimed,
// then Tests.Reps times, and reports the mean tokens/s with the sample
// standard deviation (llama-bench's tools/llama-bench/llama-bench.cpp).
package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/runtime/session"
)

// Tests are the tests of one run: prefill lengths, decode lengths,
// prefill+decode pairs and the timed repetitions of each.
type Tests struct {
	Prompts, Gens []int
	PG            [][2]int
	Reps          int
}

// Result is one row of irtool bench's table: a test at one combination of
// the parameters (its --json record).
type Result struct {
	Test    string  `json:"test"`
	NPrompt int     `json:"n_prompt"`
	NGen    int     `json:"n_gen"`
	Threads int     `json:"threads"`
	UBatch  int     `json:"ubatch"`
	TokS    float64 `json:"tok_s"`
	Stddev  float64 `json:"stddev"`
}

// Need is the KV cells the longest test fills.
func (t Tests) Need() int64 {
	n := slices.Max(append(append([]int{0}, t.Prompts...), t.Gens...))
	for _, p := range t.PG {
		n = max(n, p[0]+p[1])
	}
	return int64(n)
}

// Run times the prefill, decode and prefill+decode tests on random
// tokens (the first one BOS when the vocabulary adds it), drawn from a
// fixed seed, the prompt in steps of ub tokens; threads is the
// threads column of the results (sess runs with its own).
func Run(sess *session.Session, f *gguf.File, nVocab int64, t Tests, ub, threads int) ([]Result, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	tokens := func(n int) []int32 {
		toks := make([]int32, n)
		for i := range toks {
			toks[i] = int32(rng.Int64N(nVocab))
		}
		if add, ok := f.GetBool("tokenizer.ggml.add_bos_token"); ok && add && n > 0 {
			if bos, ok := f.GetUint("tokenizer.ggml.bos_token_id"); ok && int64(bos) < nVocab {
				toks[0] = int32(bos)
			}
		}
		return toks
	}
	prefill := func(prompt []int32) error {
		for i := 0; i < len(prompt); i += ub {
			if _, err := sess.Step(prompt[i:min(i+ub, len(prompt))]); err != nil {
				return err
			}
		}
		return nil
	}
	decode := func(toks []int32) error {
		for _, t := range toks {
			if _, err := sess.Step([]int32{t}); err != nil {
				return err
			}
		}
		return nil
	}
	var out []Result
	add := func(test string, np, ng int, runOnce func() error) error {
		r, err := Runs(sess, t.Reps, np+ng, runOnce)
		if err != nil {
			return fmt.Errorf("%s: %w", test, err)
		}
		out = append(out, Result{Test: test, NPrompt: np, NGen: ng, Threads: threads, UBatch: ub, TokS: r.TokS, Stddev: r.Stddev})
		return nil
	}
	for _, np := range t.Prompts {
		prompt := tokens(np)
		if err := add(fmt.Sprintf("pp%d", np), np, 0, func() error { return prefill(prompt) }); err != nil {
			return nil, err
		}
	}
	for _, ng := range t.Gens {
		toks := tokens(ng)
		if err := add(fmt.Sprintf("tg%d", ng), 0, ng, func() error { return decode(toks) }); err != nil {
			return nil, err
		}
	}
	for _, p := range t.PG {
		toks := tokens(p[0] + p[1])
		if err := add(fmt.Sprintf("pp%d+tg%d", p[0], p[1]), p[0], p[1], func() error {
			if err := prefill(toks[:p[0]]); err != nil {
				return err
			}
			return decode(toks[p[0]:])
		}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Runs runs one test: once untimed (warm-up), then reps timed runs,
// each on an empty KV cache. n is the tokens one run processes.
func Runs(sess *session.Session, reps, n int, runOnce func() error) (*Result, error) {
	sess.Reset()
	if err := runOnce(); err != nil {
		return nil, err
	}
	ts := make([]float64, reps)
	for i := range ts {
		sess.Reset()
		t0 := time.Now()
		if err := runOnce(); err != nil {
			return nil, err
		}
		ts[i] = float64(n) / time.Since(t0).Seconds()
	}
	mean, sd := MeanStddev(ts)
	return &Result{TokS: round3(mean), Stddev: round3(sd)}, nil
}

// MeanStddev returns the mean and the sample standard deviation (n-1 in
// the denominator; 0 for a single value), as llama-bench reports them.
func MeanStddev(v []float64) (mean, sd float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(v)-1))
}

// ModelSize returns the tensor bytes and parameter count of a file, the
// "size" and "params" columns of llama-bench.
func ModelSize(f *gguf.File) (bytes, params int64) {
	for i := range f.Tensors {
		bytes += int64(f.Tensors[i].Size)
		params += f.Tensors[i].NElements()
	}
	return bytes, params
}

// round3 rounds to three decimals, as irtool's JSON prints rates (0 for
// a non-finite value).
func round3(x float64) float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return 0
	}
	return math.Round(x*1000) / 1000
}
