package cli

import (
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/session"
)

func init() {
	register(&command{
		Name:    "bench",
		Summary: "measure prefill and decode tokens/s on the CPU (like llama-bench)",
		Usage: `irtool bench [MODEL.gguf|FILE.ir] [-p N] [-n N] [-t N] [-r N] [--passes LIST|none] [--reference] [--json]

Measures the CPU executor as llama.cpp's llama-bench measures llama.cpp:
prefill ("ppN") decodes -p random token ids (BOS first when the vocabulary
adds one) in one step on an empty KV cache; decode ("tgN") decodes -n
tokens one at a time on an empty KV cache, with no prompt. Each test runs
once untimed (which compiles the step graphs), then -r times; the KV cache
is cleared before every run. The figure is tokens/s: the mean over the
repetitions of tokens / wall time, with the sample standard deviation.
-p 0 or -n 0 skips that test. --threads (-t) sets the worker threads
(default: the number of physical cores) of the compiled plan;
--reference measures the reference executor instead. The token ids come from a fixed
seed, so runs are repeatable.

The table has llama-bench's columns; --json prints one object: "model",
"threads", "repetitions", and "prefill" and "decode", each
{"n": N, "tok_s": mean, "stddev": s} (absent when skipped).
scripts/bench-vs-llamacpp.sh runs this and llama-bench side by side.`,
		Run: cmdBench,
	})
}

// benchTest is the result of one test (pp or tg) in --json.
type benchTest struct {
	N      int     `json:"n"`
	TokS   float64 `json:"tok_s"`
	Stddev float64 `json:"stddev"`
}

type benchJSON struct {
	Model       string     `json:"model"`
	Threads     int        `json:"threads"`
	Repetitions int        `json:"repetitions"`
	Prefill     *benchTest `json:"prefill,omitempty"`
	Decode      *benchTest `json:"decode,omitempty"`
}

// threadsFlag declares -t and --threads on fs, both setting one value.
func threadsFlag(fs *flag.FlagSet) *int {
	t := new(int)
	usage := "worker threads of the CPU executor (0 = the number of physical cores)"
	fs.IntVar(t, "threads", 0, usage)
	fs.IntVar(t, "t", 0, "shorthand for --threads")
	return t
}

func cmdBench(reg *irtool.Context, args []string, stdout, stderr io.Writer) int {
	bf, code := parseBenchFlags(reg, args, stderr)
	if bf == nil {
		return code
	}
	modelPath := bf.modelPath
	src, err := openSource(reg, modelPath)
	if err != nil {
		fmt.Fprintf(stderr, "irtool bench: %v\n", err)
		return 1
	}
	defer src.Close()
	if src.File == nil {
		fmt.Fprintf(stderr, "irtool bench: %s: %v\n", modelName(modelPath), errNoWeights)
		return 1
	}
	f := src.File
	m, code := benchModel(src, bf, stderr)
	if m == nil {
		return code
	}
	sess, err := reg.NewSession(m, f, session.SessionOptions{Threads: bf.threads, Reference: bf.reference,
		Exec: eval.ExecOptions{Kernels: kernels.Options{Threads: bf.threads}}})
	if err != nil {
		fmt.Fprintf(stderr, "irtool bench: %v\n", err)
		return 1
	}
	defer sess.Close()
	out, err := runBench(sess, f, m.HParams.NVocab, bf)
	if err != nil {
		fmt.Fprintf(stderr, "irtool bench: %v\n", err)
		return 1
	}
	if bf.asJSON {
		if err := writeJSON(stdout, out); err != nil {
			fmt.Fprintf(stderr, "irtool bench: %v\n", err)
			return 1
		}
		return 0
	}
	writeBenchTable(stdout, f, bf, out)
	return 0
}

// benchFlags are bench's parsed flags; threads is resolved (never 0).
type benchFlags struct {
	nPrompt, nGen, reps, threads int
	asJSON, reference            bool
	passList                     string
	modelPath                    string
}

// parseBenchFlags parses and checks bench's flags. On a usage error it
// returns nil and the exit code.
func parseBenchFlags(reg *irtool.Context, args []string, stderr io.Writer) (*benchFlags, int) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	nPrompt := fs.Int("p", 64, "prompt tokens of the prefill test (0 skips it)")
	nGen := fs.Int("n", 32, "tokens of the decode test (0 skips it)")
	reps := fs.Int("r", 5, "repetitions of each test")
	threads := threadsFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	passList := fs.String("passes", "default", "the pass pipeline `LIST` applied first, as for run: default, none, or a comma-separated list")
	reference := fs.Bool("reference", false, "run the reference executor instead of the compiled plan")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return nil, flagError(err)
	}
	if len(pos) > 1 {
		return nil, usageError(stderr, "bench", "want at most one model path, got %q", pos)
	}
	if *nPrompt < 0 || *nGen < 0 || *reps < 1 || *threads < 0 {
		return nil, usageError(stderr, "bench", "-p and -n must be >= 0, -r >= 1, --threads >= 0")
	}
	if *nPrompt == 0 && *nGen == 0 {
		return nil, usageError(stderr, "bench", "nothing to measure: -p and -n are both 0")
	}
	if _, err := passesPipeline(reg, *passList, false); err != nil {
		return nil, usageError(stderr, "bench", "%v", err)
	}
	nThreads := *threads
	if nThreads == 0 {
		nThreads = eval.DefaultThreads()
	}
	modelPath := ""
	if len(pos) == 1 {
		modelPath = pos[0]
	}
	return &benchFlags{nPrompt: *nPrompt, nGen: *nGen, reps: *reps, threads: nThreads, asJSON: *asJSON,
		reference: *reference, passList: *passList, modelPath: modelPath}, 0
}

// benchModel builds the model with a cache that fits the tests and runs
// the pass pipeline on it. On an error it returns nil and the exit code.
func benchModel(src *modelSource, bf *benchFlags, stderr io.Writer) (*models.Model, int) {
	modelPath := bf.modelPath
	need := int64(max(bf.nPrompt, bf.nGen))
	opts := models.Options{NCtx: max(256, (need+255)/256*256)}
	if src.IsIR() {
		// The IR fixes its cache (meta n_ctx): the tests must fit in it.
		var err error
		if opts, err = src.options(models.Options{}, models.Options{}); err != nil {
			fmt.Fprintf(stderr, "irtool bench: %v\n", err)
			return nil, 1
		}
		if opts.NCtx > 0 && need > opts.NCtx {
			return nil, usageError(stderr, "bench", "-p %d / -n %d need %d KV cells, more than the IR's cache, n_ctx=%d (write the IR again with irtool ir --ctx)", bf.nPrompt, bf.nGen, need, opts.NCtx)
		}
	}
	m, err := src.build(opts)
	if err != nil {
		fmt.Fprintf(stderr, "irtool bench: %s: %v\n", modelName(modelPath), err)
		return nil, 1
	}
	// The pass pipeline through the compile driver, as for run.
	if m, err = optimiseModel(src.reg, m, bf.passList); err != nil {
		fmt.Fprintf(stderr, "irtool bench: %v\n", err)
		return nil, 1
	}
	return m, 0
}

// runBench times the prefill and decode tests on random tokens (the first
// one BOS when the vocabulary adds it), drawn from a fixed seed.
func runBench(sess *session.Session, f *gguf.File, nVocab int64, bf *benchFlags) (benchJSON, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	first := func() int32 {
		if add, ok := f.GetBool("tokenizer.ggml.add_bos_token"); ok && add {
			if bos, ok := f.GetUint("tokenizer.ggml.bos_token_id"); ok && int64(bos) < nVocab {
				return int32(bos)
			}
		}
		return int32(rng.Int64N(nVocab))
	}
	out := benchJSON{Model: modelName(bf.modelPath), Threads: bf.threads, Repetitions: bf.reps}
	if bf.nPrompt > 0 {
		prompt := make([]int32, bf.nPrompt)
		prompt[0] = first()
		for i := 1; i < len(prompt); i++ {
			prompt[i] = int32(rng.Int64N(nVocab))
		}
		res, err := benchRuns(sess, bf.reps, bf.nPrompt, func() error {
			_, err := sess.Step(prompt)
			return err
		})
		if err != nil {
			return out, fmt.Errorf("prefill: %w", err)
		}
		out.Prefill = res
	}
	if bf.nGen > 0 {
		toks := make([]int32, bf.nGen)
		toks[0] = first()
		for i := 1; i < len(toks); i++ {
			toks[i] = int32(rng.Int64N(nVocab))
		}
		res, err := benchRuns(sess, bf.reps, bf.nGen, func() error {
			for _, t := range toks {
				if _, err := sess.Step([]int32{t}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return out, fmt.Errorf("decode: %w", err)
		}
		out.Decode = res
	}
	return out, nil
}

// writeBenchTable prints the results as llama-bench's markdown table.
func writeBenchTable(stdout io.Writer, f *gguf.File, bf *benchFlags, out benchJSON) {
	size, params := modelSize(f)
	name := filepath.Base(modelName(bf.modelPath))
	fmt.Fprintln(stdout, "| model | size | params | backend | threads | test | t/s |")
	fmt.Fprintln(stdout, "| --- | ---: | ---: | --- | ---: | ---: | ---: |")
	row := func(test string, r *benchTest) {
		fmt.Fprintf(stdout, "| %s | %.2f MiB | %.2f M | irtool cpu | %d | %s | %.2f ± %.2f |\n",
			name, float64(size)/(1<<20), float64(params)/1e6, bf.threads, test, r.TokS, r.Stddev)
	}
	if out.Prefill != nil {
		row(fmt.Sprintf("pp%d", out.Prefill.N), out.Prefill)
	}
	if out.Decode != nil {
		row(fmt.Sprintf("tg%d", out.Decode.N), out.Decode)
	}
}

// benchRuns runs one test: once untimed (warm-up), then reps timed runs,
// each on an empty KV cache. n is the tokens one run processes.
func benchRuns(sess *session.Session, reps, n int, runOnce func() error) (*benchTest, error) {
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
	mean, sd := meanStddev(ts)
	return &benchTest{N: n, TokS: round3(mean), Stddev: round3(sd)}, nil
}

// meanStddev returns the mean and the sample standard deviation (n-1 in
// the denominator; 0 for a single value), as llama-bench reports them.
func meanStddev(v []float64) (mean, sd float64) {
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

// modelSize returns the tensor bytes and parameter count of a file, the
// "size" and "params" columns of llama-bench.
func modelSize(f *gguf.File) (bytes, params int64) {
	for i := range f.Tensors {
		bytes += int64(f.Tensors[i].Size)
		params += f.Tensors[i].NElements()
	}
	return bytes, params
}
