// Package testmodel holds what tests across packages need to build a
// reference model and read llama.cpp's recorded run of it. It is separate
// from internal/testref because it imports models, which testref's own users
// (the models package's tests among them) must not.
package testmodel

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/models"
)

// Build opens the GGUF file at path and builds its graph; the file is closed
// when the test ends.
func Build(t testing.TB, path string, opts models.Options) (*gguf.File, *models.Model) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := models.Build(f, opts)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f, m
}

// LlamaRun is the part of a llamacpp/*.llamacpp.json file (llama.cpp's
// recorded run of a reference model) that tests compare against.
type LlamaRun struct {
	// Format is "llama-ref" for the second batch of references, written by
	// the smaller llama-ref tool: no model_file or context (LoadRun fills
	// them in: the file named like the JSON, n_ctx 256, F16 cache) but
	// logits_per_step for every step.
	Format string `json:"format"`
	// Commit is the llama.cpp commit that made the run
	// ("llama_cpp_commit"; the llama-ref format has none: it was made by
	// llama.cpp 3f545bec, kernels.LlamaCurrent).
	Commit    string `json:"llama_cpp_commit"`
	ModelFile string `json:"model_file"`
	Context   struct {
		NCtx  int64  `json:"n_ctx"`
		TypeK string `json:"type_k"`
	} `json:"context"`
	Prompt struct {
		Tokens []int32 `json:"tokens"`
	} `json:"prompt"`
	Prefill struct {
		LogitsLast []float32 `json:"logits_last"`
	} `json:"prefill"`
	Decode struct {
		Token  int32     `json:"token"`
		Logits []float32 `json:"logits"`
	} `json:"decode"`
	Generation struct {
		Tokens []int32        `json:"tokens"`
		Text   string         `json:"text"`
		Top5   [][][2]float64 `json:"top5_per_step"`
		// LogitsPerStep[k] are the logits tokens[k] was chosen from
		// (llama-ref format only).
		LogitsPerStep [][]float32 `json:"logits_per_step"`
	} `json:"generation"`
}

// LoadRun reads a recorded llama.cpp run.
func LoadRun(t testing.TB, path string) *LlamaRun {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r LlamaRun
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if r.Format == "llama-ref" {
		if r.ModelFile == "" {
			r.ModelFile = strings.TrimSuffix(filepath.Base(path), ".llamacpp.json") + ".gguf"
		}
		if r.Context.NCtx == 0 {
			r.Context.NCtx = 256
		}
		if r.Context.TypeK == "" {
			r.Context.TypeK = "f16"
		}
	}
	return &r
}

// Options returns the model options of a recorded run: its n_ctx and KV
// cache type.
func (r *LlamaRun) Options(t testing.TB) models.Options {
	t.Helper()
	opts := models.Options{NCtx: r.Context.NCtx}
	var err error
	if opts.KVType, err = models.ParseKVCacheType(r.Context.TypeK); err != nil {
		t.Fatal(err)
	}
	return opts
}

// Kernels returns the kernel options that reproduce the llama.cpp build
// that made the run (kernels.Options.LlamaBuild from its commit).
func (r *LlamaRun) Kernels(t testing.TB) kernels.Options {
	t.Helper()
	var o kernels.Options
	if r.Commit != "" {
		var err error
		if o.LlamaBuild, err = kernels.ParseLlamaBuild(r.Commit); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

// Tolerance is the accepted bound on max|Δlogit| / max|logit|
// against llama.cpp for a model file: 1e-3 for F32 and F16 weights, 2e-2
// for quantised ones.
func Tolerance(name string) float64 {
	for _, q := range []string{"Q8_0", "Q4_0", "_K"} {
		if strings.Contains(name, q) {
			return 2e-2
		}
	}
	return 1e-3
}

// RelErr returns max|got-want| / max|want|.
func RelErr(got, want []float32) float64 {
	d, m := 0.0, 0.0
	for i := range want {
		d = max(d, math.Abs(float64(got[i])-float64(want[i])))
		m = max(m, math.Abs(float64(want[i])))
	}
	return d / m
}

// Qwen25 builds a Qwen2.5-0.5B-shaped model without weights from its
// published configuration (config.json of Qwen/Qwen2.5-0.5B: 24 layers,
// n_embd 896, 14 query heads and 2 KV heads of 64, n_ff 4864, a
// 151936-token vocabulary, q/k/v biases, tied embeddings, NEOX RoPE with
// base 1e6), with a context of nctx. Matrices are f16 and norms and biases
// f32, as in its F16 GGUF.
func Qwen25(t testing.TB, nctx int64) *models.Model {
	t.Helper()
	hp := models.HParams{Arch: "qwen2", NVocab: 151936, NCtxTrain: 32768, NEmbd: 896, NLayer: 24, NHead: 14, NHeadKV: 2,
		NFF: 4864, HeadDimK: 64, HeadDimV: 64, NRot: 64, RMSEps: 1e-6, RopeFreqBase: 1e6, RopeFreqScale: 1, RopeMode: 2,
		RopeAttn: 1, NCtxOrig: 32768}
	w := map[string]models.Weight{
		"token_embd.weight":  {Type: ir.F16, Ne: [4]int64{896, 151936, 1, 1}},
		"output_norm.weight": {Type: ir.F32, Ne: [4]int64{896, 1, 1, 1}},
	}
	for i := range 24 {
		b := fmt.Sprintf("blk.%d.", i)
		for name, ne := range map[string][2]int64{
			"attn_q.weight": {896, 896}, "attn_k.weight": {896, 128}, "attn_v.weight": {896, 128},
			"attn_output.weight": {896, 896}, "ffn_gate.weight": {896, 4864}, "ffn_up.weight": {896, 4864},
			"ffn_down.weight": {4864, 896},
		} {
			w[b+name] = models.Weight{Type: ir.F16, Ne: [4]int64{ne[0], ne[1], 1, 1}}
		}
		for name, n := range map[string]int64{"attn_norm.weight": 896, "ffn_norm.weight": 896, "attn_q.bias": 896, "attn_k.bias": 128, "attn_v.bias": 128} {
			w[b+name] = models.Weight{Type: ir.F32, Ne: [4]int64{n, 1, 1, 1}}
		}
	}
	m, err := models.BuildHParams(hp, func(name string) (models.Weight, bool) { x, ok := w[name]; return x, ok }, models.Options{NCtx: nctx})
	if err != nil {
		t.Fatalf("Qwen2.5-0.5B shape: %v", err)
	}
	return m
}

// Llama32 builds a Llama-3.2-1B-shaped model without weights from its
// published configuration (config.json of meta-llama/Llama-3.2-1B: 16
// layers, n_embd 2048, 32 query heads and 8 KV heads of 64, n_ff 8192, a
// 128256-token vocabulary, tied embeddings, rope_theta 500000 with Llama
// 3's rope_freqs factors, rms eps 1e-5), with a context of nctx. Matrices
// are f16 and norms and rope_freqs f32.
func Llama32(t testing.TB, nctx int64) *models.Model {
	t.Helper()
	hp := models.HParams{Arch: "llama", NVocab: 128256, NCtxTrain: 131072, NEmbd: 2048, NLayer: 16, NHead: 32, NHeadKV: 8,
		NFF: 8192, HeadDimK: 64, HeadDimV: 64, NRot: 64, RMSEps: 1e-5, RopeFreqBase: 500000, RopeFreqScale: 1, RopeMode: 0,
		RopeAttn: 1, NCtxOrig: 131072}
	w := map[string]models.Weight{
		"token_embd.weight":  {Type: ir.F16, Ne: [4]int64{2048, 128256, 1, 1}},
		"output_norm.weight": {Type: ir.F32, Ne: [4]int64{2048, 1, 1, 1}},
		"rope_freqs.weight":  {Type: ir.F32, Ne: [4]int64{32, 1, 1, 1}},
	}
	for i := range 16 {
		b := fmt.Sprintf("blk.%d.", i)
		for name, ne := range map[string][2]int64{
			"attn_q.weight": {2048, 2048}, "attn_k.weight": {2048, 512}, "attn_v.weight": {2048, 512},
			"attn_output.weight": {2048, 2048}, "ffn_gate.weight": {2048, 8192}, "ffn_up.weight": {2048, 8192},
			"ffn_down.weight": {8192, 2048},
		} {
			w[b+name] = models.Weight{Type: ir.F16, Ne: [4]int64{ne[0], ne[1], 1, 1}}
		}
		for _, name := range []string{"attn_norm.weight", "ffn_norm.weight"} {
			w[b+name] = models.Weight{Type: ir.F32, Ne: [4]int64{2048, 1, 1, 1}}
		}
	}
	m, err := models.BuildHParams(hp, func(name string) (models.Weight, bool) { x, ok := w[name]; return x, ok }, models.Options{NCtx: nctx})
	if err != nil {
		t.Fatalf("Llama-3.2-1B shape: %v", err)
	}
	return m
}

// Runner is the part of eval's Executor and Plan that RunOutput drives.
type Runner interface {
	SetInput(string, []byte) error
	HasInput(string) bool
	Run() error
	Output(int) ([]float32, [4]int64, error)
}

// RunOutput sets the inputs of in that r takes, runs r and returns its
// output 0.
func RunOutput(t testing.TB, r Runner, in map[string][]byte) []float32 {
	t.Helper()
	for name, data := range in {
		if r.HasInput(name) {
			if err := r.SetInput(name, data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := r.Run(); err != nil {
		t.Fatal(err)
	}
	out, _, err := r.Output(0)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
