package cli

import (
	"flag"
	"fmt"
	"github.com/irtool/irtool/internal/jsonout"
	"github.com/irtool/irtool/models/modelfile"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/bench"
	"github.com/irtool/irtool/runtime/session"
)

func init() {
	register(&command{
		Name:    "bench",
		Summary: "measure prefill and decode tokens/s on the CPU (like llama-bench)",
		Usage: `irtool bench [MODEL.gguf|FILE.ir] [-p LIST] [-n LIST] [-pg PP,TG] [-t LIST] [-ub LIST] [-r N]
             [--passes LIST|none] [--reference] [--json]

Measures the CPU executor as llama.cpp's llama-bench measures llama.cpp:
prefill ("ppN") decodes -p random token ids (BOS first when the vocabulary
adds one) on an empty KV cache, in steps of at most --ubatch (-ub) tokens;
decode ("tgN") decodes -n tokens one at a time on an empty KV cache, with
no prompt; -pg PP,TG ("ppPP+tgTG") does both in one run, its figure the
PP+TG tokens over the whole time. Each test runs once untimed (which
compiles the step graphs), then -r times; the KV cache is cleared before
every run. The figure is tokens/s: the mean over the repetitions of tokens
/ wall time, with the sample standard deviation. -p 0 or -n 0 skips that
test. --threads (-t) sets the worker threads (default: the number of
physical cores) of the compiled plan; --reference measures the reference
executor instead. The token ids come from a fixed seed, so runs are
repeatable.

As in llama-bench, -p, -n, -t and -ub take lists: comma-separated values,
ranges first-last, first-last+step or first-last*mult, and the flag given
again adds to its list; -pg may be given several times. Every combination
of -ub and -t (in that order) runs the -p tests, then the -n tests, then
the -pg tests, one table row each. The table has llama-bench's columns
(n_ubatch when -ub is not 512); --json prints one object: "model",
"repetitions" and "results", one record per row: "test", "n_prompt",
"n_gen", "threads", "ubatch", "tok_s", "stddev".
scripts/bench-vs-llamacpp.sh runs this and llama-bench side by side.`,
		Run: cmdBench,
	})
}

type benchJSON struct {
	Model       string         `json:"model"`
	Repetitions int            `json:"repetitions"`
	Results     []bench.Result `json:"results"`
}

// threadsFlag declares -t and --threads on fs, both setting one value.
func threadsFlag(fs *flag.FlagSet) *int {
	t := new(int)
	usage := "worker threads of the CPU executor (0 = the number of physical cores)"
	fs.IntVar(t, "threads", 0, usage)
	fs.IntVar(t, "t", 0, "shorthand for --threads")
	return t
}

// intList is a flag holding llama-bench's list of values (bench.ParseList):
// comma-separated values, each a number or a range first-last,
// first-last+step or first-last*mult; the flag given again adds to the
// list, whose default the first value given replaces.
type intList struct {
	vals []int
	set  bool
}

func (l *intList) String() string {
	if l == nil {
		return ""
	}
	parts := make([]string, len(l.vals))
	for i, v := range l.vals {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

func (l *intList) Set(s string) error {
	if !l.set {
		l.vals, l.set = nil, true
	}
	vals, err := bench.ParseList(s, bench.MaxListLen-len(l.vals))
	l.vals = append(l.vals, vals...)
	return err
}

// pgList is -pg: pairs PP,TG, one per occurrence of the flag.
type pgList struct{ pairs [][2]int }

func (l *pgList) String() string {
	if l == nil {
		return ""
	}
	parts := make([]string, len(l.pairs))
	for i, p := range l.pairs {
		parts[i] = fmt.Sprintf("%d,%d", p[0], p[1])
	}
	return strings.Join(parts, " ")
}

func (l *pgList) Set(s string) error {
	p, err := bench.ParsePair(s)
	if err == nil {
		l.pairs = append(l.pairs, p)
	}
	return err
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
		fmt.Fprintf(stderr, "irtool bench: %s: %v\n", modelName(modelPath), modelfile.ErrNoWeights)
		return 1
	}
	f := src.File
	m, code := benchModel(src, bf, stderr)
	if m == nil {
		return code
	}
	out := benchJSON{Model: modelName(bf.modelPath), Repetitions: bf.reps, Results: []bench.Result{}}
	for _, ub := range bf.ubatches {
		for _, threads := range bf.threads {
			res, err := benchInstance(reg, m, f, bf, ub, threads)
			if err != nil {
				fmt.Fprintf(stderr, "irtool bench: %v\n", err)
				return 1
			}
			out.Results = append(out.Results, res...)
		}
	}
	if bf.asJSON {
		if err := jsonout.Write(stdout, out); err != nil {
			fmt.Fprintf(stderr, "irtool bench: %v\n", err)
			return 1
		}
		return 0
	}
	writeBenchTable(stdout, f, bf, out)
	return 0
}

// benchInstance runs every test on a session of threads workers, prefill
// in steps of ub tokens.
func benchInstance(reg *irtool.Context, m *models.Model, f *gguf.File, bf *benchFlags, ub, threads int) ([]bench.Result, error) {
	sess, err := reg.NewSession(m, f, session.SessionOptions{Threads: threads, Reference: bf.reference,
		Exec: eval.ExecOptions{Kernels: kernels.Options{Threads: threads}}})
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	return bench.Run(sess, f, m.HParams.NVocab, bf.tests(), ub, threads)
}

// tests are the tests the flags ask for.
func (bf *benchFlags) tests() bench.Tests {
	return bench.Tests{Prompts: bf.prompts, Gens: bf.gens, PG: bf.pg, Reps: bf.reps}
}

// benchFlags are bench's parsed flags; threads are resolved (never 0).
type benchFlags struct {
	prompts, gens, threads, ubatches []int
	pg                               [][2]int
	reps                             int
	asJSON, reference                bool
	passList                         string
	modelPath                        string
}

// parseBenchFlags parses and checks bench's flags. On a usage error it
// returns nil and the exit code.
func parseBenchFlags(reg *irtool.Context, args []string, stderr io.Writer) (*benchFlags, int) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	list := func(names []string, def int, usage string) *intList {
		l := &intList{vals: []int{def}}
		fs.Var(l, names[0], usage)
		dash := "-"
		if len(names[0]) > 1 {
			dash = "--"
		}
		for _, n := range names[1:] {
			fs.Var(l, n, "the same as "+dash+names[0]+" (a `LIST`)")
		}
		return l
	}
	nPrompt := list([]string{"p", "n-prompt"}, 64, "prompt tokens of the prefill tests, a `LIST` (0 skips a test)")
	nGen := list([]string{"n", "n-gen"}, 32, "tokens of the decode tests, a `LIST` (0 skips a test)")
	threads := list([]string{"t", "threads"}, 0, "worker threads of the CPU executor, a `LIST` (0 = the number of physical cores)")
	ubatch := list([]string{"ubatch", "ub", "ubatch-size"}, defaultUBatch, "prefill in steps of at most N tokens, a `LIST` (llama.cpp's n_ubatch)")
	var pg pgList
	fs.Var(&pg, "pg", "a prefill of PP tokens then TG decoded in one test (`PP,TG`; the flag may be repeated)")
	reps := fs.Int("r", 5, "repetitions of each test")
	fs.Var(fs.Lookup("r").Value, "repetitions", "the same as -r")
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
	if e := flagRange("-r", int64(*reps), 1, maxReps, ""); e != nil {
		return nil, usageError(stderr, "bench", "%v", e)
	}
	bf := &benchFlags{reps: *reps, asJSON: *asJSON, reference: *reference, passList: *passList, pg: pg.pairs}
	for _, p := range nPrompt.vals {
		if e := flagRange("-p", int64(p), 0, maxCtx, ""); e != nil {
			return nil, usageError(stderr, "bench", "%v", e)
		}
		if p > 0 {
			bf.prompts = append(bf.prompts, p)
		}
	}
	for _, n := range nGen.vals {
		if e := flagRange("-n", int64(n), 0, maxCtx, ""); e != nil {
			return nil, usageError(stderr, "bench", "%v", e)
		}
		if n > 0 {
			bf.gens = append(bf.gens, n)
		}
	}
	if len(bf.prompts) == 0 && len(bf.gens) == 0 && len(bf.pg) == 0 {
		return nil, usageError(stderr, "bench", "nothing to measure: -p and -n are 0 and there is no -pg")
	}
	for _, ub := range ubatch.vals {
		if e := flagRange("--ubatch", int64(ub), 1, maxCtx, ""); e != nil {
			return nil, usageError(stderr, "bench", "%v", e)
		}
	}
	bf.ubatches = ubatch.vals
	for _, t := range threads.vals {
		if e := flagRange("-t", int64(t), 0, maxThreads, "the physical cores"); e != nil {
			return nil, usageError(stderr, "bench", "%v", e)
		}
		if t == 0 {
			t = eval.DefaultThreads()
		}
		bf.threads = append(bf.threads, t)
	}
	if _, err := passesPipeline(reg, *passList, false); err != nil {
		return nil, usageError(stderr, "bench", "%v", err)
	}
	if len(pos) == 1 {
		bf.modelPath = pos[0]
	}
	return bf, 0
}

// benchModel builds the model with a cache that fits the tests and runs
// the pass pipeline on it. On an error it returns nil and the exit code.
func benchModel(src *modelSource, bf *benchFlags, stderr io.Writer) (*models.Model, int) {
	modelPath := bf.modelPath
	need := bf.tests().Need()
	opts := models.Options{NCtx: max(256, (need+255)/256*256)}
	if src.IsIR() {
		// The IR fixes its cache (meta n_ctx): the tests must fit in it.
		var err error
		if opts, err = src.Options(models.Options{}, models.Options{}); err != nil {
			fmt.Fprintf(stderr, "irtool bench: %v\n", err)
			return nil, 1
		}
		if opts.NCtx > 0 && need > opts.NCtx {
			return nil, usageError(stderr, "bench", "the longest test needs %d KV cells, more than the IR's cache, n_ctx=%d (write the IR again with irtool ir --ctx)", need, opts.NCtx)
		}
	}
	m, err := src.Build(opts)
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

// writeBenchTable prints the results as llama-bench's markdown table
// (bench.WriteTable): an n_ubatch column when -ub is not llama-bench's
// default alone.
func writeBenchTable(stdout io.Writer, f *gguf.File, bf *benchFlags, out benchJSON) {
	bench.WriteTable(stdout, f, filepath.Base(modelName(bf.modelPath)), !slices.Equal(bf.ubatches, []int{defaultUBatch}), out.Results)
}
