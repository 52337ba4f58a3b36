package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/irtool/irtool/gguf"
	"io"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/runtime/session"
	"github.com/irtool/irtool/target"
	"github.com/irtool/irtool/tokenizer"
	"github.com/irtool/irtool/viz"
)

func init() {
	register(&command{
		Name:    "run",
		Summary: "generate tokens greedily with a model",
		Usage: `irtool run [MODEL.gguf] (-p TEXT | --tokens IDS) [-n N] [--backend cpu|sim|cann]
           [--device N] [--ctx N] [--kv-type f16|f32] [--kv-write set_rows|cpy] [--passes LIST|none]
           [--graph on|off] [--prefill-graph] [--graph-cache N] [--target T]
           [--threads N] [--llama-build COMMIT] [--json] [--logits]

Runs prefill on the prompt, then greedy decode (argmax, lowest id on ties) for
N tokens on the CPU (the compiled plan, on --threads worker threads: default
the number of physical cores). -p tokenises TEXT with the model's own
tokenizer (adding BOS as llama.cpp does) and streams the generated text to
stdout; --tokens takes comma-separated ids. --json prints one object with
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
	Model        string        `json:"model"`
	Backend      string        `json:"backend"`
	PromptTokens []int32       `json:"prompt_tokens"`
	Tokens       []int32       `json:"tokens"`
	Text         *string       `json:"text,omitempty"`
	Timing       runTiming     `json:"timing"`
	Logits       [][]jsonFloat `json:"logits,omitempty"` // NaN and infinities as null
	Error        string        `json:"error,omitempty"`
	Stats        any           `json:"stats,omitempty"` // --backend sim
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
		return 0, fmt.Errorf("the prompt (%d tokens) and -n %d need %d KV cells, more than %s=%d; shorten the prompt, lower -n or raise --ctx",
			nPrompt, n, need, what, limit)
	}
	if ctxFlag > 0 {
		return ctxFlag, nil
	}
	return min(limit, max(256, (need+255)/256*256)), nil
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	prompt := fs.String("p", "", "the prompt `TEXT`, tokenised with the model's tokenizer, BOS added (exactly one of -p and --tokens)")
	tokens := fs.String("tokens", "", "prompt token `IDS`, comma- or space-separated")
	n := fs.Int("n", 32, "tokens to generate")
	backend := fs.String("backend", "cpu", "execution `BACKEND`: cpu (the compiled CPU plan), sim (the whole pipeline on the simulated Ascend device, with ACL-graph capture and the LRU graph cache) or cann (an Ascend NPU; needs a build with -tags cann)")
	nctx := fs.Int64("ctx", 0, "context size in tokens (KV cache cells); 0: the model's context_length, of which prompt + n rounded up to 256 is allocated; a prompt and -n that do not fit are refused")
	ubatch := fs.Int("ubatch", defaultUBatch, "prefill the prompt in chunks of at most `N` tokens (llama.cpp's n_ubatch)")
	kvType := fs.String("kv-type", "f16", "KV cache element `TYPE`: f16 or f32")
	kvWrite := fs.String("kv-write", "set_rows", "KV cache write `MODE`: set_rows or cpy (see irtool ir)")
	asJSON := fs.Bool("json", false, "print one JSON object instead of text")
	withLogits := fs.Bool("logits", false, "with --json, include every generated token's logits")
	passList := fs.String("passes", "default", "the pass pipeline `LIST` applied before running, as for compile; none runs the graph as built")
	checkNumerics := fs.Bool("check-numerics", false, "check every op's output for NaN and infinities and name the first that has one (cpu backend; slower)")
	threads := threadsFlag(fs)
	llamaBuild := fs.String("llama-build", kernels.LlamaCurrent.String(), "reproduce the quantised-matmul summation order of llama.cpp `COMMIT` (3f545bec: Q4_K repacked to q4_K_8x8 as Q4_0 is; c392e50: older builds, Q4_K and Q6_K in their vec_dot orders)")
	var sim simFlags
	sim.declare(fs)
	var cannF cannFlags
	cannF.declare(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return 2
	}
	if len(pos) > 1 {
		fmt.Fprintf(stderr, "irtool run: want at most one model path, got %q\n", pos)
		return 2
	}
	if *backend != "cpu" && *backend != "sim" && *backend != "cann" {
		fmt.Fprintf(stderr, "irtool run: backend %q is not available (cpu, sim or cann)\n", *backend)
		return 2
	}
	if err := cannF.check(fs, *backend); err != nil {
		fmt.Fprintf(stderr, "irtool run: %v\n", err)
		return 2
	}
	if err := checkSimFlags(fs, *backend); err != nil {
		fmt.Fprintf(stderr, "irtool run: %v\n", err)
		return 2
	}
	if (*prompt == "") == (*tokens == "") {
		fmt.Fprintln(stderr, "irtool run: give exactly one of -p TEXT or --tokens IDS")
		return 2
	}
	if *n < 0 {
		fmt.Fprintln(stderr, "irtool run: -n must be >= 0")
		return 2
	}
	if *nctx < 0 || *nctx > maxCtx {
		return usageError(stderr, "run", "--ctx %d: want 0 (the model's context_length) or 1..%d", *nctx, maxCtx)
	}
	if *threads < 0 || *threads > maxThreads {
		return usageError(stderr, "run", "--threads %d: want 0 (the physical cores) or 1..%d", *threads, maxThreads)
	}
	if *backend != "cpu" {
		var set string
		fs.Visit(func(fl *flag.Flag) {
			if fl.Name == "threads" || fl.Name == "t" {
				set = fl.Name
			}
		})
		if set != "" {
			return usageError(stderr, "run", "--%s applies to --backend cpu only", set)
		}
	}
	if *ubatch < 1 {
		return usageError(stderr, "run", "--ubatch %d: want a positive number of tokens", *ubatch)
	}
	if *checkNumerics && *backend != "cpu" {
		return usageError(stderr, "run", "--check-numerics applies to --backend cpu (other backends' non-finite logits are traced on the CPU reference automatically)")
	}
	if *withLogits && !*asJSON {
		return usageError(stderr, "run", "--logits needs --json")
	}
	kvT, err := models.ParseKVCacheType(*kvType)
	if err != nil {
		return usageError(stderr, "run", "--kv-type: %v", err)
	}
	if sim.Kernels.LlamaBuild, err = kernels.ParseLlamaBuild(*llamaBuild); err != nil {
		return usageError(stderr, "run", "--llama-build: %v", err)
	}
	kvW, err := models.ParseKVWrite(*kvWrite)
	if err != nil {
		return usageError(stderr, "run", "--kv-write: %v", err)
	}
	pipeline, err := passes.Parse(*passList)
	if err != nil {
		return usageError(stderr, "run", "--passes: %v", err)
	}
	var tokenList []int32
	if *tokens != "" {
		if tokenList, err = parseTokenList(*tokens); err != nil {
			return usageError(stderr, "run", "%v", err)
		}
	}
	if *backend == "sim" || *backend == "cann" {
		if _, err := sim.policy(fs); err != nil {
			return usageError(stderr, "run", "%v", err)
		}
		if _, err := target.Get(sim.Target); err != nil {
			return usageError(stderr, "run", "--target: %v", err)
		}
	}
	if *backend == "cann" {
		if err := cannUnavailable(); err != nil {
			fmt.Fprintf(stderr, "irtool run: %v\n", err)
			return 1
		}
	}
	modelPath := ""
	if len(pos) == 1 {
		modelPath = pos[0]
	}
	t0 := time.Now()
	src, err := openSource(modelPath)
	if err != nil {
		fmt.Fprintf(stderr, "irtool run: %v\n", err)
		return 1
	}
	defer src.Close()
	// Errors past parsing name the model: the file is valid, its content
	// is at fault.
	name := modelName(modelPath)
	fail := func(err error) int {
		fmt.Fprintf(stderr, "irtool run: %s: %v\n", name, err)
		return 1
	}
	if src.File == nil {
		return fail(errNoWeights)
	}
	f := src.File
	hp, err := models.ReadHParams(f)
	if err != nil {
		return fail(err)
	}
	var tok *tokenizer.Tokenizer
	ids := tokenList
	if *prompt != "" {
		if tok, err = tokenizer.FromGGUF(f); err != nil {
			return fail(err)
		}
		if ids, err = tok.Encode(*prompt, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true}); err != nil {
			return fail(err)
		}
	} else if t, err := tokenizer.FromGGUF(f); err == nil {
		tok = t
	}
	if tok != nil {
		for _, w := range tok.Warnings() {
			fmt.Fprintf(stderr, "irtool run: %s: warning: %s\n", name, w)
		}
	}
	for _, id := range ids {
		if int64(id) >= hp.NVocab {
			return usageError(stderr, "run", "--tokens: id %d is outside the vocabulary of %s (%d tokens)", id, name, hp.NVocab)
		}
	}
	if len(ids) == 0 {
		return fail(fmt.Errorf("the prompt has no tokens"))
	}
	opts := models.Options{NCtx: *nctx, KVType: kvT, KVWrite: kvW}
	ctxName := "--ctx"
	if src.IsIR() {
		ctxName = "the IR's cache, n_ctx"
		// The IR fixes its cache size (meta n_ctx): that is the limit.
		if opts, err = src.options(opts, models.Options{KVType: models.KVF16, KVWrite: models.KVSetRows}); err != nil {
			fmt.Fprintf(stderr, "irtool run: %v\n", err)
			return 2
		}
	}
	if opts.NCtx, err = runContext(opts.NCtx, hp, len(ids), *n, ctxName); err != nil {
		fmt.Fprintf(stderr, "irtool run: %s: %v\n", name, err)
		return 2 // refused before any work, as a usage error
	}
	m, err := src.build(opts)
	if err != nil {
		return fail(err)
	}
	if len(pipeline) > 0 {
		// The passes work on the symbolic graph; the session specialises
		// the optimised graph for each step's shapes.
		g, _, err := passes.Run(m.Graph, pipeline, passes.Options{})
		if err != nil {
			return fail(err)
		}
		optimised := *m
		optimised.Graph = g
		m = &optimised
	}
	var sess session.Stepper
	var cpu *session.Session
	var simRun *simBackend
	var cannRun *cannBackend
	if *backend == "sim" {
		simRun, err = newSimBackend(m, f, &sim, fs)
		sess = simRun
	} else if *backend == "cann" {
		cannRun, err = newCannBackend(m, f, &sim, &cannF, fs)
		sess = cannRun
	} else {
		if cpu, err = newCPUSession(m, f, *checkNumerics, *threads, sim.Kernels); err == nil {
			defer cpu.Close()
		}
		sess = cpu
	}
	if err != nil {
		return fail(err)
	}
	if simRun != nil {
		defer simRun.Close()
	}
	if cannRun != nil {
		defer cannRun.Close()
	}
	loadMS := float64(time.Since(t0).Microseconds()) / 1000
	// Return the loader's garbage (token tables, graphs of the passes) to
	// the OS before the first step pages in the memory-mapped weights, so
	// that the process's peak RSS is the weights plus what stays live.
	debug.FreeOSMemory()

	var dec *tokenizer.StreamDecoder
	var text strings.Builder
	if tok != nil {
		dec = tok.NewStreamDecoder()
	}
	onToken := func(id int32) {
		if dec == nil {
			return
		}
		piece := dec.Push(id)
		text.Write(piece)
		if !*asJSON {
			stdout.Write(piece)
		}
	}
	// Progress on stderr before the long part (prefill of a large model
	// takes seconds on the CPU executor).
	fmt.Fprintf(stderr, "irtool run: %s: %s, %d layers, %d ops; prefill of %d tokens, then %d greedy steps on %s\n",
		modelName(modelPath), m.HParams.Arch, m.HParams.NLayer, m.Graph.NumOps(), len(ids), max(*n-1, 0), *backend)
	if !*asJSON && *prompt != "" {
		fmt.Fprint(stdout, *prompt)
	}
	res, err := session.GenerateWith(sess, ids, *n, session.GenerateOptions{
		UBatch: *ubatch, KeepLogits: *withLogits, OnToken: onToken, CheckFinite: true})
	if err != nil {
		var nf *session.NonFiniteError
		if errors.As(err, &nf) && !*checkNumerics {
			// Find the op: replay the same tokens on the CPU reference
			// executor, checking every op's output.
			err = fmt.Errorf("%w; %v", err, locateNonFinite(m, f, nf.Tokens, len(ids), *ubatch, sim.Kernels))
		}
		if !*asJSON {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stderr, "irtool run: %s: %v\n", name, err)
		if *asJSON {
			// Still one valid JSON document, saying what went wrong.
			_ = writeJSON(stdout, runJSON{Model: name, Backend: *backend, PromptTokens: ids, Tokens: []int32{}, Error: err.Error()})
		}
		return 1
	}
	if dec != nil {
		rest := dec.Flush()
		text.Write(rest)
		if !*asJSON {
			stdout.Write(rest)
		}
	}
	tps := 0.0
	if len(res.Tokens) > 1 && res.DecodeMS > 0 {
		tps = float64(len(res.Tokens)-1) / (res.DecodeMS / 1000)
	}
	if !*asJSON {
		if dec == nil {
			fmt.Fprintln(stdout, formatIDs(res.Tokens))
		} else {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stderr, "irtool run: %d prompt tokens, %d generated; load %.1f ms, prefill %.1f ms, decode %.1f tok/s\n",
			len(ids), len(res.Tokens), loadMS, res.PrefillMS, tps)
		if cpu != nil {
			fmt.Fprintf(stderr, "irtool run: cpu: %d threads; memory-mapped weights %s, KV cache %s, compute arenas %s",
				cpu.Threads(), viz.HumanBytes(weightBytes(f)), viz.HumanBytes(cpu.KVBytes()), viz.HumanBytes(cpu.ArenaBytes()))
			if pb := cpu.PackedBytes(); pb > 0 {
				// Their mapped originals' pages were released.
				fmt.Fprintf(stderr, ", repacked weights %s", viz.HumanBytes(pb))
			}
			fmt.Fprintln(stderr)
		}
		if simRun != nil {
			simRun.summary(stderr)
		}
		if cannRun != nil {
			cannRun.summary(stderr)
		}
		return 0
	}
	out := runJSON{Model: modelName(modelPath), Backend: *backend, PromptTokens: ids, Tokens: res.Tokens,
		Timing: runTiming{LoadMS: round3(loadMS), PrefillMS: round3(res.PrefillMS), DecodeTokensPerS: round3(tps)}}
	if out.Tokens == nil {
		out.Tokens = []int32{}
	}
	if dec != nil {
		s := text.String()
		out.Text = &s
	}
	if *withLogits {
		var nonFinite bool
		out.Logits, nonFinite = jsonFloats(res.Logits)
		if nonFinite {
			out.Error = "logits hold NaN or infinite values (written as null)"
		}
	}
	if simRun != nil {
		out.Stats = simRun.stats()
	}
	if cannRun != nil {
		out.Stats = cannRun.stats()
	}
	if err := writeJSON(stdout, out); err != nil {
		fmt.Fprintf(stderr, "irtool run: %v\n", err)
		return 1
	}
	return 0
}

// newCPUSession is the cpu backend's session: the reference executor, with
// every op's output checked for NaN and infinities when check is set.
// The check runs on the reference executor (the compiled plan does not
// check).
func newCPUSession(m *models.Model, w eval.WeightSource, check bool, threads int, ko kernels.Options) (*session.Session, error) {
	return session.NewSession(m, w, session.SessionOptions{Threads: threads, Reference: check,
		Exec: eval.ExecOptions{CheckFinite: check, Kernels: ko}})
}

// locateNonFinite replays tokens (the prompt, in ubatch-token steps, then
// one token per step) on a fresh CPU session that checks every op's output,
// and returns the error naming the first op whose output is not finite.
func locateNonFinite(m *models.Model, w eval.WeightSource, tokens []int32, nPrompt, ubatch int, ko kernels.Options) error {
	s, err := newCPUSession(m, w, true, 0, ko)
	if err != nil {
		return err
	}
	defer s.Close()
	steps := [][]int32{}
	for i := 0; i < nPrompt && i < len(tokens); i += ubatch {
		steps = append(steps, tokens[i:min(i+ubatch, nPrompt, len(tokens))])
	}
	for i := nPrompt; i < len(tokens); i++ {
		steps = append(steps, tokens[i:i+1])
	}
	for _, st := range steps {
		if _, err := s.Step(st); err != nil {
			return err
		}
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
	b, _ := modelSize(f)
	return b
}
