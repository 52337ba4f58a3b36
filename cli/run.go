package cli

import (
	"errors"
	"flag"
	"fmt"
	"github.com/irtool/irtool"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/jsonout"
	"github.com/irtool/irtool/models/modelfile"
	"io"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/bench"
	"github.com/irtool/irtool/runtime/launch"
	"github.com/irtool/irtool/runtime/session"
	"github.com/irtool/irtool/target"
	"github.com/irtool/irtool/tokenizer"
	"github.com/irtool/irtool/viz"
)

func init() {
	register(&command{
		Name:    "run",
		Summary: "generate tokens with a model (greedy, or sampled with --temp)",
		Usage: `irtool run [MODEL.gguf|FILE.ir] [-p TEXT | -f FILE | --tokens IDS] [-n N] [--backend cpu|sim|cann]
           [--device N] [--ctx N] [--kv-type f16|f32] [--kv-write set_rows|cpy] [--passes LIST|none]
           [--graph on|off] [--prefill-graph] [--graph-cache N] [--target T]
           [--temp T] [--top-k N] [--top-p P] [--min-p P] [--repeat-penalty X] [--seed SEED]
           [--threads N] [--llama-build COMMIT] [--json] [--logits]

Runs prefill on the prompt, then greedy decode (argmax, lowest id on ties) for
N tokens, or with --temp above 0 draws each token through llama.cpp's sampler
chain (repeat penalty, top-k, top-p, min-p, temperature, a draw seeded by
--seed; llama.cpp's defaults but temp 0; docs/CLI.md, "Sampling"), on the CPU (the compiled plan, on --threads worker threads: default
the number of physical cores). -p tokenises TEXT with the model's own
tokenizer (adding BOS as llama.cpp does) and streams the generated text to
stdout; --tokens takes comma-separated ids; with neither, the prompt is BOS
alone. llama.cpp's spellings work: -m/--model, --prompt, --n-predict,
-c/--ctx-size, -t. --json prints one object with
"prompt_tokens", "tokens", "text", "timing" and, with --logits, "logits" (one
array of n_vocab floats per generated token: the distribution it was chosen
from). The graph is optimised by the default pass pipeline first (see irtool
passes); --passes none runs it as built, --passes LIST runs those passes.
--backend sim runs the whole pipeline (partition, memory plan, CANN lowering)
on the simulated Ascend device with ACL-graph capture and the LRU graph cache
(--graph, --prefill-graph, --graph-cache, --target; docs/RUNTIME.md); its
--json adds "stats" per phase: captures, replays, cache_hits, cache_misses,
evictions, kernel_launches, host_dispatch_ns_per_token.
--backend cann runs the same pipeline on an Ascend NPU (--device N) through
CANN; it needs a binary built with -tags cann (irtool doctor checks the setup;
docs/RUNTIME.md, "Real hardware").`,
		Run: cmdRun,
	})
}

// defaultUBatch is run's prefill chunk (llama.cpp's default n_ubatch).
const defaultUBatch = 512

// maxThreads is the largest --threads.
const maxThreads = 1024

// maxCtx is the largest --ctx (the graph builder's limit on n_ctx).
const maxCtx = 1 << 24

type runJSON struct {
	Model        string                  `json:"model"`
	Backend      string                  `json:"backend"`
	PromptTokens []int32                 `json:"prompt_tokens"`
	Tokens       []int32                 `json:"tokens"`
	Text         *string                 `json:"text,omitempty"`
	Timing       runTiming               `json:"timing"`
	Logits       [][]jsonout.Float       `json:"logits,omitempty"` // NaN and infinities as null
	Error        string                  `json:"error,omitempty"`
	Stats        any                     `json:"stats,omitempty"` // --backend sim
	Sampling     *session.SamplingRecord `json:"sampling,omitempty"`
}

type runTiming struct {
	LoadMS           float64 `json:"load_ms"`
	PrefillMS        float64 `json:"prefill_ms"`
	DecodeTokensPerS float64 `json:"decode_tokens_per_s"`
}

// parseTokenList parses --tokens: ids separated by commas (spaces around
// them are allowed, and spaces alone separate too). An empty id ("1,,2", a
// trailing comma) is an error, not skipped.
func parseTokenList(s string) ([]int32, error) {
	var out []int32
	for i, part := range strings.Split(s, ",") {
		ids := strings.Fields(part)
		if len(ids) == 0 {
			return nil, fmt.Errorf("--tokens %q: id %d is empty", s, i+1)
		}
		for _, f := range ids {
			v, err := strconv.ParseInt(f, 10, 32)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("--tokens: %q is not a token id", f)
			}
			out = append(out, int32(v))
		}
	}
	return out, nil
}

// runContext resolves run's context size and checks that the prompt and
// the tokens to generate fit, before anything runs (as llama.cpp refuses a
// prompt longer than n_ctx). ctxFlag is --ctx: 0 means the model's
// context_length (hp.NCtxTrain), of which only what the run needs (rounded
// up to 256) is allocated; what names a non-zero ctxFlag in the error. It
// returns the KV cache size.
func runContext(ctxFlag int64, hp models.HParams, nPrompt, n int, what string) (int64, error) {
	need := int64(nPrompt) + int64(max(n-1, 0)) // the last token is not fed back
	limit := ctxFlag
	if ctxFlag == 0 {
		limit, what = hp.NCtxTrain, "the model's context_length"
	}
	if need > limit {
		return 0, fmt.Errorf("the prompt (%d tokens) and -n %d need %d KV cells, more than %s=%d; shorten the prompt, lower -n or raise --ctx (-c; 0: the model's context_length)",
			nPrompt, n, need, what, limit)
	}
	if ctxFlag > 0 {
		return ctxFlag, nil
	}
	return min(limit, max(256, (need+255)/256*256)), nil
}

// runFlags are run's flags, parsed and checked.
type runFlags struct {
	fs                        *flag.FlagSet
	prompt, tokens            *string
	n, ubatch, threads        *int
	backend, kvType, kvWrite  *string
	passList, llamaBuild      *string
	nctx                      *int64
	asJSON, withLogits, check *bool
	sim                       simFlags
	cann                      cannFlags
	tp                        tpFlags
	sample                    sampleFlags
	// Set by checkRunFlags:
	kvT       models.KVCacheType
	kvW       models.KVWrite
	tokenList []int32
	modelPath string
}

// declareRunFlags declares run's flags on fs, with llama.cpp's spellings
// (-p/--prompt, -n/--n-predict; parseArgs adds -m/--model, -c/--ctx-size
// and -t).
func declareRunFlags(fs *flag.FlagSet) *runFlags {
	f := &runFlags{fs: fs}
	f.prompt = fs.String("p", "", "the prompt `TEXT`, tokenised with the model's tokenizer, BOS added (at most one of -p and --tokens; neither: BOS alone)")
	fs.Var(fs.Lookup("p").Value, "prompt", "the same as -p")
	f.tokens = fs.String("tokens", "", "prompt token `IDS`, comma- or space-separated")
	f.n = fs.Int("n", 32, "tokens to generate")
	fs.Var(fs.Lookup("n").Value, "n-predict", "the same as -n")
	f.backend = fs.String("backend", "cpu", "execution `BACKEND`: cpu (the compiled CPU plan), sim (the whole pipeline on the simulated Ascend device, with ACL-graph capture and the LRU graph cache) or cann (an Ascend NPU; needs a build with -tags cann)")
	f.nctx = fs.Int64("ctx", defaultCtx, "context size in tokens (KV cache cells), capped by the model's context_length unless given; 0: the model's context_length, of which prompt + n rounded up to 256 is allocated; a prompt and -n that do not fit are refused")
	f.ubatch = fs.Int("ubatch", defaultUBatch, "prefill the prompt in chunks of at most `N` tokens (llama.cpp's n_ubatch)")
	f.kvType = fs.String("kv-type", "f16", "KV cache element `TYPE`: f16 or f32")
	f.kvWrite = fs.String("kv-write", "set_rows", "KV cache write `MODE`: set_rows or cpy (see irtool ir)")
	f.asJSON = fs.Bool("json", false, "print one JSON object instead of text")
	f.withLogits = fs.Bool("logits", false, "with --json, include every generated token's logits")
	f.passList = fs.String("passes", "default", "the pass pipeline `LIST` applied before running, as for compile; none runs the graph as built")
	f.check = fs.Bool("check-numerics", false, "check every op's output for NaN and infinities and name the first that has one (cpu backend; slower)")
	f.threads = threadsFlag(fs)
	f.llamaBuild = fs.String("llama-build", kernels.LlamaCurrent.String(), "reproduce the quantised-matmul summation order of llama.cpp `COMMIT` (3f545bec: Q4_K repacked to q4_K_8x8 as Q4_0 is; c392e50: older builds, Q4_K and Q6_K in their vec_dot orders)")
	f.sim.declare(fs)
	f.cann.declare(fs)
	f.tp.declare(fs)
	f.tp.declarePP(fs)
	f.tp.declareProc(fs)
	f.sample.declare(fs)
	return f
}

// checkRunFlags checks the flags and positionals before anything is read;
// a non-zero result is the exit status.
func checkRunFlags(f *runFlags, pos []string, stderr io.Writer) int {
	fs, backend := f.fs, *f.backend
	bad := func(format string, args ...any) int { return usageError(stderr, "run", format, args...) }
	switch {
	case len(pos) > 1:
		return bad("want at most one model path, got %q", pos)
	case backend != "cpu" && backend != "sim" && backend != "cann":
		return bad("backend %q is not available (cpu, sim or cann)", backend)
	case *f.prompt != "" && *f.tokens != "":
		return bad("give at most one of -p TEXT and --tokens IDS")
	case flagRange("-n", int64(*f.n), 0, maxCtx, "") != nil:
		return bad("%v", flagRange("-n", int64(*f.n), 0, maxCtx, ""))
	case flagRange("--ctx", *f.nctx, 0, maxCtx, "the model's context_length") != nil:
		return bad("%v", flagRange("--ctx", *f.nctx, 0, maxCtx, "the model's context_length"))
	case flagRange("--threads", int64(*f.threads), 0, maxThreads, "the physical cores") != nil:
		return bad("%v", flagRange("--threads", int64(*f.threads), 0, maxThreads, "the physical cores"))
	case flagRange("--ubatch", int64(*f.ubatch), 1, maxCtx, "") != nil:
		return bad("%v", flagRange("--ubatch", int64(*f.ubatch), 1, maxCtx, ""))
	case *f.check && backend != "cpu":
		return bad("--check-numerics applies to --backend cpu (other backends' non-finite logits are traced on the CPU reference automatically)")
	case *f.withLogits && !*f.asJSON:
		return bad("--logits needs --json")
	}
	if err := f.cann.check(fs, backend); err != nil {
		return bad("%v", err)
	}
	if err := checkSimFlags(fs, backend); err != nil {
		return bad("%v", err)
	}
	if err := f.tp.check(backend); err != nil {
		return bad("%v", err)
	}
	if usage, err := f.sample.check(f.prompt, *f.tokens, f.tp.RootInfo); usage != nil {
		return bad("%v", usage)
	} else if err != nil {
		fmt.Fprintf(stderr, "irtool run: %v\n", err)
		return 1
	}
	if backend != "cpu" {
		set := ""
		fs.Visit(func(fl *flag.Flag) {
			if fl.Name == "threads" || fl.Name == "t" {
				set = fl.Name
			}
		})
		if set != "" {
			return bad("--%s applies to --backend cpu only", set)
		}
	}
	var err error
	if f.kvT, err = models.ParseKVCacheType(*f.kvType); err != nil {
		return bad("--kv-type: %v", err)
	}
	if f.sim.Kernels.LlamaBuild, err = kernels.ParseLlamaBuild(*f.llamaBuild); err != nil {
		return bad("--llama-build: %v", err)
	}
	if f.kvW, err = models.ParseKVWrite(*f.kvWrite); err != nil {
		return bad("--kv-write: %v", err)
	}
	if _, err = passesPipeline(f.sim.reg, *f.passList, false); err != nil {
		return bad("--passes: %v", err)
	}
	if *f.tokens != "" {
		if f.tokenList, err = parseTokenList(*f.tokens); err != nil {
			return bad("%v", err)
		}
	}
	if backend == "sim" || backend == "cann" {
		if _, err := f.sim.policy(fs); err != nil {
			return bad("%v", err)
		}
		if f.sim.TargetFile != "" {
			rules, name, err := readTargetFile(f.sim.TargetFile)
			if err != nil {
				return bad("%v", err)
			}
			f.sim.rules, f.sim.Target = rules, name
		} else if _, err := target.Get(f.sim.Target); err != nil {
			return bad("--target: %v", err)
		}
	}
	if len(pos) == 1 {
		f.modelPath = pos[0]
	}
	return 0
}

// runJob is one run: the model, its prompt and the backend's session.
type runJob struct {
	f      *runFlags
	name   string // the model's name in messages
	src    *modelSource
	tok    *tokenizer.Tokenizer // nil without one
	ids    []int32              // the prompt's tokens
	m      *models.Model
	sess   session.Stepper
	cpu    *session.Session
	sim    *launch.Sim
	cann   *launch.Cann
	tp     *launch.Ranks
	loadMS float64
}

// Close releases the session and the model file.
func (j *runJob) Close() {
	if j.cpu != nil {
		j.cpu.Close()
	}
	if j.sim != nil {
		j.sim.Close()
	}
	if j.cann != nil {
		j.cann.Close()
	}
	if j.tp != nil {
		j.tp.Close()
	}
	if j.src != nil {
		j.src.Close()
	}
}

// prepareRun opens the model, tokenises the prompt, builds and optimises
// the graph and starts the backend. A non-zero status means it failed (the
// error is printed); j is to be closed either way.
func prepareRun(f *runFlags, stderr io.Writer) (j *runJob, code int) {
	t0 := time.Now()
	j = &runJob{f: f, name: modelName(f.modelPath)}
	src, err := openSource(f.sim.reg, f.modelPath)
	if err != nil {
		fmt.Fprintf(stderr, "irtool run: %v\n", err)
		return j, 1
	}
	j.src = src
	// Errors past parsing name the model: the file is valid, its content
	// is at fault.
	fail := func(err error) (*runJob, int) {
		fmt.Fprintf(stderr, "irtool run: %s: %v\n", j.name, err)
		return j, 1
	}
	if src.File == nil {
		return fail(modelfile.ErrNoWeights)
	}
	hp, err := models.ReadHParams(src.File)
	if err != nil {
		return fail(err)
	}
	if code := j.tokenise(hp, stderr); code != 0 {
		return j, code
	}
	opts, code := j.modelOptions(hp, stderr)
	if code != 0 {
		return j, code
	}
	if j.m, err = src.Build(opts); err != nil {
		return fail(err)
	}
	if f.tp.Stages > 1 || f.tp.Ranks > 1 {
		if err := j.startParallel(opts, stderr); err != nil {
			return fail(err)
		}
		j.loadMS = float64(time.Since(t0).Microseconds()) / 1000
		return j, 0
	}
	// The passes work on the symbolic graph; the session specialises the
	// optimised graph for each step's shapes.
	if j.m, err = optimiseModel(f.sim.reg, j.m, *f.passList); err != nil {
		return fail(err)
	}
	if err := j.startBackend(); err != nil {
		return fail(err)
	}
	j.loadMS = float64(time.Since(t0).Microseconds()) / 1000
	return j, 0
}

// modelOptions resolves the model's options from the flags: the context
// (--ctx, capped by the model's context_length unless given, or the IR's
// own cache), refused with status 2 when the prompt and -n do not fit.
func (j *runJob) modelOptions(hp models.HParams, stderr io.Writer) (models.Options, int) {
	f, src := j.f, j.src
	var err error
	opts := models.Options{NCtx: *f.nctx, KVType: f.kvT, KVWrite: f.kvW}
	ctxName, given := "--ctx", ctxGiven(f.fs)
	if !given {
		ctxName = "the default --ctx"
		if hp.NCtxTrain > 0 && hp.NCtxTrain < defaultCtx {
			ctxName = "the default --ctx (the model's context_length)"
		}
	}
	if *f.nctx != 0 && (!src.IsIR() || src.Graph.Meta[modelfile.MetaNCtx] == "") {
		opts.NCtx = resolveCtx(*f.nctx, given, hp.NCtxTrain)
	}
	if src.IsIR() {
		ctxName = "the IR's cache, n_ctx"
		// The IR fixes its cache size (meta n_ctx): that is the limit.
		def := models.Options{NCtx: defaultCtx, KVType: models.KVF16, KVWrite: models.KVSetRows}
		if opts, err = src.Options(opts, def); err != nil {
			return opts, usageError(stderr, "run", "%v", err)
		}
	}
	if opts.NCtx, err = runContext(opts.NCtx, hp, len(j.ids), *f.n, ctxName); err != nil {
		fmt.Fprintf(stderr, "irtool run: %s: %v\n", j.name, err)
		return opts, 2 // refused before any work, as a usage error
	}
	if w := ctxWarning(opts.NCtx, hp.NCtxTrain); w != "" && given {
		fmt.Fprintf(stderr, "irtool run: %s: %s\n", j.name, w)
	}
	return opts, 0
}

// startParallel starts the ranks of --tp and/or --pp: the model split
// over the ranks (the pass pipeline applied to each rank's graph), one
// session per rank in this process, or this process's rank of --root-info.
func (j *runJob) startParallel(opts models.Options, stderr io.Writer) (err error) {
	f, src := j.f, j.src
	defer func() {
		if err == nil {
			j.sess = j.tp
		}
	}()
	if f.tp.Stages > 1 && f.tp.Ranks > 1 {
		tp, err := shardTP(src, opts, &f.tp, "none")
		if err != nil {
			return err
		}
		stages := make([][]*models.Model, len(tp.Ranks))
		for t, r := range tp.Ranks {
			if stages[t], err = shardPP(f.sim.reg, r.Model, f.tp.Stages, *f.passList); err != nil {
				return fmt.Errorf("rank %d: %w", t, err)
			}
		}
		j.tp, err = launch.NewTPPP(tp, stages, src.File, f.launchOptions(stderr))
		return err
	}
	if f.tp.Stages > 1 {
		stages, err := shardPP(f.sim.reg, j.m, f.tp.Stages, *f.passList)
		if err != nil {
			return err
		}
		j.tp, err = launch.NewPP(stages, src.File, f.launchOptions(stderr))
		return err
	}
	if f.tp.Ranks > 1 {
		tp, err := shardTP(src, opts, &f.tp, *f.passList)
		if err != nil {
			return err
		}
		if f.tp.RootInfo != "" { // one rank in this process (launch.NewTPProc)
			j.tp, err = launch.NewTPProc(tp, src.File, f.launchOptions(stderr))
		} else {
			j.tp, err = launch.NewTP(tp, src.File, f.launchOptions(stderr))
		}
		return err
	}
	return nil
}

// tokenise sets the prompt's tokens: -p TEXT (or, with neither -p nor
// --tokens, the empty text: BOS alone) through the model's tokenizer, or
// --tokens, checked against the vocabulary.
func (j *runJob) tokenise(hp models.HParams, stderr io.Writer) int {
	f, file := j.f, j.src.File
	j.ids = f.tokenList
	tok, terr := tokenizer.FromGGUF(file)
	if terr == nil {
		j.tok = tok
		for _, w := range tok.Warnings() {
			fmt.Fprintf(stderr, "irtool run: %s: warning: %s\n", j.name, w)
		}
	}
	if *f.tokens == "" {
		if terr != nil {
			fmt.Fprintf(stderr, "irtool run: %s: %v\n", j.name, terr)
			return 1
		}
		var err error
		if j.ids, err = tok.Encode(*f.prompt, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true}); err != nil {
			fmt.Fprintf(stderr, "irtool run: %s: %v\n", j.name, err)
			return 1
		}
	}
	for _, id := range j.ids {
		if int64(id) >= hp.NVocab {
			return usageError(stderr, "run", "--tokens: id %d is outside the vocabulary of %s (%d tokens)", id, j.name, hp.NVocab)
		}
	}
	if len(j.ids) == 0 {
		fmt.Fprintf(stderr, "irtool run: %s: the prompt has no tokens (the model adds no BOS): give -p TEXT or --tokens IDS\n", j.name)
		return 1
	}
	return 0
}

// startBackend makes the session of --backend.
func (j *runJob) startBackend() error {
	f, file := j.f, j.src.File
	var err error
	switch *f.backend {
	case "sim":
		j.sim, err = launch.NewSim(j.m, file, f.launchOptions(nil))
		j.sess = j.sim
	case "cann":
		j.cann, err = launch.NewCann(j.m, file, f.launchOptions(nil))
		j.sess = j.cann
	default:
		j.cpu, err = newCPUSession(f.sim.reg, j.m, file, *f.check, *f.threads, f.sim.Kernels)
		j.sess = j.cpu
	}
	if err != nil {
		j.cpu, j.sim, j.cann = nil, nil, nil
	}
	return err
}

func cmdRun(reg *irtool.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := declareRunFlags(fs)
	f.sim.reg = reg
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagError(err)
	}
	if code := checkRunFlags(f, pos, stderr); code != 0 {
		return code
	}
	if *f.backend == "cann" {
		if err := cannUnavailable(); err != nil {
			fmt.Fprintf(stderr, "irtool run: %v\n", err)
			return 1
		}
	}
	j, code := prepareRun(f, stderr)
	defer j.Close()
	if code != 0 {
		return code
	}
	// Return the loader's garbage (token tables, graphs of the passes) to
	// the OS before the first step pages in the memory-mapped weights, so
	// that the process's peak RSS is the weights plus what stays live.
	debug.FreeOSMemory()
	return j.generate(stdout, stderr)
}

// generate runs prefill and greedy decode, streaming the text (unless
// --json), and reports.
func (j *runJob) generate(stdout, stderr io.Writer) int {
	f := j.f
	var dec *tokenizer.StreamDecoder
	var text strings.Builder
	if j.tok != nil {
		dec = j.tok.NewStreamDecoder()
	}
	emit := func(piece []byte) {
		text.Write(piece)
		if !*f.asJSON {
			stdout.Write(piece)
		}
	}
	onToken := func(id int32) {
		if dec != nil {
			emit(dec.Push(id))
		}
	}
	// Progress on stderr before the long part (prefill of a large model
	// takes seconds on the CPU executor).
	smp, err := f.sample.sampler()
	if err != nil {
		fmt.Fprintf(stderr, "irtool run: %v\n", err)
		return 1
	}
	steps := "greedy step"
	if desc := f.sample.describe(); desc != "" {
		steps = "sampled step"
		fmt.Fprintf(stderr, "irtool run: sampling: %s\n", desc)
	}
	fmt.Fprintf(stderr, "irtool run: %s: %s, %d layers, %s; prefill of %s, then %s on %s\n",
		j.name, j.m.HParams.Arch, j.m.HParams.NLayer, j.opsText(), plural(len(j.ids), "token"), plural(max(*f.n-1, 0), steps), *f.backend)
	if !*f.asJSON && *f.prompt != "" {
		fmt.Fprint(stdout, *f.prompt)
	}
	res, err := session.GenerateWith(j.sess, j.ids, *f.n, session.GenerateOptions{
		UBatch: *f.ubatch, KeepLogits: *f.withLogits, OnToken: onToken, CheckFinite: true, Sampler: smp})
	if err != nil {
		return j.generateFailed(err, stdout, stderr)
	}
	if dec != nil {
		emit(dec.Flush())
	}
	tps := 0.0
	if len(res.Tokens) > 1 && res.DecodeMS > 0 {
		tps = float64(len(res.Tokens)-1) / (res.DecodeMS / 1000)
	}
	if *f.asJSON {
		var s *string
		if dec != nil {
			t := text.String()
			s = &t
		}
		return j.reportJSON(res, s, tps, stdout, stderr)
	}
	if dec == nil {
		fmt.Fprintln(stdout, formatIDs(res.Tokens))
	} else {
		fmt.Fprintln(stdout)
	}
	j.reportText(res, tps, stderr)
	return 0
}

// generateFailed reports a failed generation; a non-finite result is
// traced to its op on the CPU reference executor.
func (j *runJob) generateFailed(err error, stdout, stderr io.Writer) int {
	f := j.f
	var nf *session.NonFiniteError
	if errors.As(err, &nf) && !*f.check {
		// Find the op: replay the same tokens on the CPU reference
		// executor, checking every op's output.
		err = fmt.Errorf("%w; %v", err, locateNonFinite(f.sim.reg, j.m, j.src.File, nf.Tokens, len(j.ids), *f.ubatch, f.sim.Kernels))
	}
	if !*f.asJSON {
		fmt.Fprintln(stdout)
	}
	fmt.Fprintf(stderr, "irtool run: %s: %v\n", j.name, err)
	if *f.asJSON {
		// Still one valid JSON document, saying what went wrong.
		_ = jsonout.Write(stdout, runJSON{Model: j.name, Backend: *f.backend, PromptTokens: j.ids, Tokens: []int32{}, Error: err.Error()})
	}
	return 1
}

// reportText writes the timing and memory lines of a text run to stderr.
func (j *runJob) reportText(res *session.GenerateResult, tps float64, stderr io.Writer) {
	fmt.Fprintf(stderr, "irtool run: %d prompt tokens, %d generated; load %.1f ms, prefill %.1f ms, decode %.1f tok/s\n",
		len(j.ids), len(res.Tokens), j.loadMS, res.PrefillMS, tps)
	if cpu := j.cpu; cpu != nil {
		fmt.Fprintf(stderr, "irtool run: cpu: %d threads; %s %s, KV cache %s, compute arenas %s",
			cpu.Threads(), j.src.WeightsHeld(), viz.HumanBytes(weightBytes(j.src.File)), viz.HumanBytes(cpu.KVBytes()), viz.HumanBytes(cpu.ArenaBytes()))
		if pb := cpu.PackedBytes(); pb > 0 {
			// Their mapped originals' pages were released.
			fmt.Fprintf(stderr, ", repacked weights %s", viz.HumanBytes(pb))
		}
		fmt.Fprintln(stderr)
	}
	if j.sim != nil {
		j.sim.WriteSummary(stderr)
	}
	if j.cann != nil {
		j.cann.WriteSummary(stderr)
	}
	if j.tp != nil {
		j.tp.WriteSummary(stderr)
	}
}

// reportJSON writes run's --json document.
func (j *runJob) reportJSON(res *session.GenerateResult, text *string, tps float64, stdout, stderr io.Writer) int {
	f := j.f
	out := runJSON{Model: j.name, Backend: *f.backend, PromptTokens: j.ids, Tokens: res.Tokens, Text: text,
		Timing:   runTiming{LoadMS: round3(j.loadMS), PrefillMS: round3(res.PrefillMS), DecodeTokensPerS: round3(tps)},
		Sampling: f.sample.json()}
	if out.Tokens == nil {
		out.Tokens = []int32{}
	}
	if *f.withLogits {
		var nonFinite bool
		out.Logits, nonFinite = jsonout.Floats(res.Logits)
		if nonFinite {
			out.Error = "logits hold NaN or infinite values (written as null)"
		}
	}
	if j.sim != nil {
		out.Stats = j.sim.Stats()
	}
	if j.cann != nil {
		out.Stats = j.cann.Stats()
	}
	if j.tp != nil {
		out.Stats = j.tp.Stats()
	}
	if err := jsonout.Write(stdout, out); err != nil {
		fmt.Fprintf(stderr, "irtool run: %v\n", err)
		return 1
	}
	return 0
}

// newCPUSession is the cpu backend's session: the reference executor, with
// every op's output checked for NaN and infinities when check is set.
// The check runs on the reference executor (the compiled plan does not
// check).
func newCPUSession(reg *irtool.Context, m *models.Model, w eval.WeightSource, check bool, threads int, ko kernels.Options) (*session.Session, error) {
	return reg.NewSession(m, w, session.SessionOptions{Threads: threads, Reference: check,
		Exec: eval.ExecOptions{CheckFinite: check, Kernels: ko}})
}

// locateNonFinite replays tokens on a fresh CPU session that checks
// every op's output (session.Replay), and returns the error naming the
// first op whose output is not finite.
func locateNonFinite(reg *irtool.Context, m *models.Model, w eval.WeightSource, tokens []int32, nPrompt, ubatch int, ko kernels.Options) error {
	s, err := newCPUSession(reg, m, w, true, 0, ko)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := session.Replay(s, tokens, nPrompt, ubatch); err != nil {
		return err
	}
	return errors.New("the CPU reference executor found no op whose output is not finite (the backend's results differ from it)")
}

func formatIDs(ids []int32) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.Itoa(int(id))
	}
	return strings.Join(parts, " ")
}

func modelName(path string) string {
	if path == "" {
		return "embedded:stories260K.gguf"
	}
	return path
}

func round3(x float64) float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return 0
	}
	return math.Round(x*1000) / 1000
}

// weightBytes is the size of the tensor data of a file.
func weightBytes(f *gguf.File) int64 {
	b, _ := bench.ModelSize(f)
	return b
}
