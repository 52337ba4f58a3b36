package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/irtool/irtool/runtime/session"
)

// sampleFlags are run's sampling flags (llama.cpp's spellings) and -f.
type sampleFlags struct {
	temp, topP, minP, repeatPenalty float64
	topK, minKeep, repeatLastN      int
	seed                            int64
	file                            string
	// Set by check:
	opts       session.SamplerOptions
	randomSeed bool // no --seed: opts.Seed was picked at random
}

// maxPromptFile bounds what -f reads (a prompt longer than any context).
const maxPromptFile = 16 << 20

// declare adds the sampling flags to fs. The defaults are llama.cpp's
// (common/common.h, common_params_sampling) but for --temp, 0 here: run's
// default output is llama.cpp's greedy text.
func (f *sampleFlags) declare(fs *flag.FlagSet) {
	d := session.DefaultSamplerOptions() // top-p 0.95, min-p 0.05, repeat-penalty 1 below
	fs.Float64Var(&f.temp, "temp", 0, "sampling temperature `T`: 0 picks the largest logit (greedy decoding, irtool's default; llama.cpp's is 0.8); above 0 the tokens are drawn through llama.cpp's sampler chain (penalties, top-k, top-p, min-p, temperature, a seeded draw)")
	fs.IntVar(&f.topK, "top-k", d.TopK, "with --temp > 0, keep the `N` most probable tokens (0: all)")
	fs.Float64Var(&f.topP, "top-p", 0.95, "with --temp > 0, keep the most probable tokens up to cumulative probability `P` in (0, 1] (1: all)")
	fs.Float64Var(&f.minP, "min-p", 0.05, "with --temp > 0, drop the tokens less probable than `P` times the most probable one, P in [0, 1] (0: none)")
	fs.IntVar(&f.minKeep, "min-keep", d.MinKeep, "with --temp > 0, the fewest `N` tokens top-p and min-p keep (0: at least one)")
	fs.Float64Var(&f.repeatPenalty, "repeat-penalty", 1, "penalise the tokens of the last --repeat-last-n (prompt included) by `X` > 0: positive logits divided by X, negative ones multiplied (1: off)")
	fs.IntVar(&f.repeatLastN, "repeat-last-n", d.RepeatLastN, "the `N` last tokens --repeat-penalty looks at (0: off, -1: all)")
	fs.Int64Var(&f.seed, "seed", -1, "with --temp > 0, the `SEED` of the draw (-1: a random one, printed on stderr and in --json, so the run can be repeated)")
	fs.Var(fs.Lookup("seed").Value, "s", "the same as --seed")
	fs.StringVar(&f.file, "f", "", "read the prompt TEXT from `FILE` (one trailing newline dropped, as llama.cpp does); the same as -p TEXT")
	fs.Var(fs.Lookup("f").Value, "file", "the same as -f")
}

// check checks the sampling flags, picks the seed and reads -f into
// *prompt. A usage error is returned as such; an unreadable file as a
// plain error.
func (f *sampleFlags) check(prompt *string, tokens string, rootInfo string) (usage, err error) {
	switch {
	case math.IsNaN(f.temp) || f.temp < 0 || math.IsInf(f.temp, 0):
		return fmt.Errorf("--temp %v: want 0 (greedy) or a positive temperature", f.temp), nil
	case f.topK < 0:
		return fmt.Errorf("--top-k %d: want 0 (all tokens) or a positive number of tokens", f.topK), nil
	case !(f.topP > 0 && f.topP <= 1):
		return fmt.Errorf("--top-p %v: want a probability in (0, 1] (1: off)", f.topP), nil
	case !(f.minP >= 0 && f.minP <= 1):
		return fmt.Errorf("--min-p %v: want a probability in [0, 1] (0: off)", f.minP), nil
	case f.minKeep < 0:
		return fmt.Errorf("--min-keep %d: want 0 or a positive number of tokens", f.minKeep), nil
	case !(f.repeatPenalty > 0) || math.IsInf(f.repeatPenalty, 0):
		return fmt.Errorf("--repeat-penalty %v: want a positive factor (1: off)", f.repeatPenalty), nil
	case f.repeatLastN < -1:
		return fmt.Errorf("--repeat-last-n %d: want -1 (every token), 0 (off) or a positive number of tokens", f.repeatLastN), nil
	case f.seed < -1:
		return fmt.Errorf("--seed %d: want -1 (random) or a seed in 0..%d", f.seed, int64(math.MaxInt64)), nil
	case f.file != "" && *prompt != "":
		return errors.New("give at most one of -p TEXT and -f FILE"), nil
	case f.file != "" && tokens != "":
		return errors.New("give at most one of -f FILE and --tokens IDS"), nil
	case f.temp > 0 && f.seed < 0 && rootInfo != "":
		return errors.New("--temp > 0 with --root-info needs --seed: every rank's process must draw the same tokens"), nil
	}
	f.opts = session.SamplerOptions{Temp: float32(f.temp), TopK: f.topK, TopP: float32(f.topP), MinP: float32(f.minP),
		MinKeep: f.minKeep, RepeatPenalty: float32(f.repeatPenalty), RepeatLastN: f.repeatLastN, Seed: uint64(f.seed)}
	if f.seed < 0 {
		// llama.cpp's LLAMA_DEFAULT_SEED: a random seed, 32 bits as
		// llama.cpp's are.
		f.opts.Seed, f.randomSeed = uint64(rand.Uint32()), true
	}
	if err := f.opts.Check(); err != nil {
		return err, nil
	}
	if f.file != "" {
		text, err := readPromptFile(f.file)
		if err != nil {
			return nil, err
		}
		*prompt = text
	}
	return nil, nil
}

// readPromptFile reads -f FILE: at most maxPromptFile bytes, one trailing
// newline dropped (llama.cpp's common/arg.cpp does the same).
func readPromptFile(path string) (string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("-f %s: cannot read the prompt: %w", path, err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxPromptFile+1))
	if err != nil {
		return "", fmt.Errorf("-f %s: cannot read the prompt: %w", path, err)
	}
	if len(b) > maxPromptFile {
		return "", fmt.Errorf("-f %s: the prompt file is larger than %d MiB", path, maxPromptFile>>20)
	}
	if len(b) == 0 {
		return "", fmt.Errorf("-f %s: the prompt file is empty", path)
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

// sampler returns the run's sampler, nil for plain greedy decoding (temp
// 0 and no repeat penalty), which takes the argmax directly.
func (f *sampleFlags) sampler() (*session.Sampler, error) {
	if f.opts.Greedy() && (f.opts.RepeatPenalty == 1 || f.opts.RepeatLastN == 0) {
		return nil, nil
	}
	return session.NewSampler(f.opts)
}

func (f *sampleFlags) json() *session.SamplingRecord {
	r := f.opts.Record()
	r.SeedRandom = r.Seed != nil && f.randomSeed
	return r
}

// describe is the sampling line of run's stderr ("" for greedy decoding
// without a penalty): SamplerOptions.Describe, and how to repeat a draw
// from a random seed.
func (f *sampleFlags) describe() string {
	s := f.opts.Describe()
	if f.randomSeed && !f.opts.Greedy() {
		s += fmt.Sprintf(" (random; --seed %d repeats this run)", f.opts.Seed)
	}
	return s
}
