package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/runtime/session"
	"github.com/irtool/irtool/tokenizer"
)

func init() {
	register(&command{
		Name:    "run",
		Summary: "generate tokens greedily with a model",
		Usage: `irtool run [MODEL.gguf] (-p TEXT | --tokens IDS) [-n N] [--backend cpu|sim|cann]
           [--device N] [--ctx N] [--kv-type f16|f32] [--kv-write set_rows|cpy] [--passes LIST|none]
           [--graph on|off] [--prefill-graph] [--graph-cache N] [--target T]
           [--threads N] [--json] [--logits]

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

type runJSON struct {
	Model        string      `json:"model"`
	Backend      string      `json:"backend"`
	PromptTokens []int32     `json:"prompt_tokens"`
	Tokens       []int32     `json:"tokens"`
	Text         *string     `json:"text,omitempty"`
	Timing       runTiming   `json:"timing"`
	Logits       [][]float32 `json:"logits,omitempty"`
	Stats        any         `json:"stats,omitempty"` // --backend sim
}

type runTiming struct {
	LoadMS           float64 `json:"load_ms"`
	PrefillMS        float64 `json:"prefill_ms"`
	DecodeTokensPerS float64 `json:"decode_tokens_per_s"`
}

func parseTokenList(s string) ([]int32, error) {
	var out []int32
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		v, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("--tokens: %q is not a token id", f)
		}
		out = append(out, int32(v))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--tokens: no token ids given")
	}
	return out, nil
}

func cmdRun(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	prompt := fs.String("p", "", "the prompt `TEXT`, tokenised with the model's tokenizer, BOS added (exactly one of -p and --tokens)")
	tokens := fs.String("tokens", "", "prompt token `IDS`, comma- or space-separated")
	n := fs.Int("n", 32, "tokens to generate")
	backend := fs.String("backend", "cpu", "execution `BACKEND`: cpu (the compiled CPU plan), sim (the whole pipeline on the simulated Ascend device, with ACL-graph capture and the LRU graph cache) or cann (an Ascend NPU; needs a build with -tags cann)")
	nctx := fs.Int64("ctx", 0, "KV cache size in tokens (default: prompt + n rounded up to 256)")
	kvType := fs.String("kv-type", "f16", "KV cache element `TYPE`: f16 or f32")
	kvWrite := fs.String("kv-write", "set_rows", "KV cache write `MODE`: set_rows or cpy (see irtool ir)")
	asJSON := fs.Bool("json", false, "print one JSON object instead of text")
	withLogits := fs.Bool("logits", false, "with --json, include every generated token's logits")
	passList := fs.String("passes", "default", "the pass pipeline `LIST` applied before running, as for compile; none runs the graph as built")
	threads := threadsFlag(fs)
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
	if src.File == nil {
		fmt.Fprintf(stderr, "irtool run: %s: %v\n", modelPath, errNoWeights)
		return 1
	}
	f := src.File
	var tok *tokenizer.Tokenizer
	var ids []int32
	if *prompt != "" {
		if tok, err = tokenizer.FromGGUF(f); err != nil {
			fmt.Fprintf(stderr, "irtool run: %v\n", err)
			return 1
		}
		if ids, err = tok.Encode(*prompt, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true}); err != nil {
			fmt.Fprintf(stderr, "irtool run: %v\n", err)
			return 1
		}
	} else if ids, err = parseTokenList(*tokens); err != nil {
		fmt.Fprintf(stderr, "irtool run: %v\n", err)
		return 2
	} else if t, err := tokenizer.FromGGUF(f); err == nil {
		tok = t
	}
	opts := models.Options{NCtx: *nctx}
	if opts.KVType, err = models.ParseKVCacheType(*kvType); err != nil {
		fmt.Fprintf(stderr, "irtool run: %v\n", err)
		return 2
	}
	if opts.KVWrite, err = models.ParseKVWrite(*kvWrite); err != nil {
		fmt.Fprintf(stderr, "irtool run: %v\n", err)
		return 2
	}
	if src.IsIR() {
		if opts, err = src.options(opts, models.Options{KVType: models.KVF16, KVWrite: models.KVSetRows}); err != nil {
			fmt.Fprintf(stderr, "irtool run: %v\n", err)
			return 2
		}
		if need := int64(len(ids) + *n); opts.NCtx > 0 && need > opts.NCtx {
			fmt.Fprintf(stderr, "irtool run: %s: prompt (%d tokens) + -n %d needs %d KV cells; the IR's cache has n_ctx=%d\n", modelPath, len(ids), *n, need, opts.NCtx)
			return 2
		}
	}
	if opts.NCtx == 0 {
		need := int64(len(ids) + *n)
		opts.NCtx = max(256, (need+255)/256*256)
	}
	pipeline, err := passes.Parse(*passList)
	if err != nil {
		fmt.Fprintf(stderr, "irtool run: %v\n", err)
		return 2
	}
	m, err := src.build(opts)
	if err != nil {
		fmt.Fprintf(stderr, "irtool run: %v\n", err)
		return 1
	}
	if len(pipeline) > 0 {
		// The passes work on the symbolic graph; the session specialises
		// the optimised graph for each step's shapes.
		g, _, err := passes.Run(m.Graph, pipeline, passes.Options{})
		if err != nil {
			fmt.Fprintf(stderr, "irtool run: %v\n", err)
			return 1
		}
		optimised := *m
		optimised.Graph = g
		m = &optimised
	}
	var sess generator
	var simRun *simBackend
	var cannRun *cannBackend
	if *backend == "sim" {
		simRun, err = newSimBackend(m, f, &sim, fs)
		sess = simRun
	} else if *backend == "cann" {
		cannRun, err = newCannBackend(m, f, &sim, &cannF, fs)
		sess = cannRun
	} else {
		var cpu *session.Session
		if cpu, err = session.NewSession(m, f, session.SessionOptions{Threads: *threads}); err == nil {
			defer cpu.Close()
		}
		sess = cpu
	}
	if err != nil {
		fmt.Fprintf(stderr, "irtool run: %v\n", err)
		return 1
	}
	if simRun != nil {
		defer simRun.Close()
	}
	if cannRun != nil {
		defer cannRun.Close()
	}
	loadMS := float64(time.Since(t0).Microseconds()) / 1000

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
	res, err := sess.Generate(ids, *n, *withLogits, onToken)
	if err != nil {
		fmt.Fprintf(stderr, "\nirtool run: %v\n", err)
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
		out.Logits = res.Logits
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
