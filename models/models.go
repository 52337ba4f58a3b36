// Package models turns a GGUF model into an ir.Graph for one forward step.
//
// A builder reads every hyper-parameter from GGUF metadata (falling back to
// llama.cpp's defaults where a key is missing) and emits the same sequence
// of ops llama.cpp's graph builder does: for llama and qwen2 at commit
// c392e50, so the graph can be checked node for node against llama.cpp's
// recorded graphs and the memory planner's ggml-alloc mode reproduces
// llama.cpp's compute buffer; for qwen3, qwen3moe, gemma3 and phi3 as
// src/models/<arch>.cpp at 3f545bec builds them (docs/MODELS.md lists what
// each uses and what is not supported).
//
// The graph is symbolic in n_tokens (tokens in this step), n_kv (KV cells
// attended to) and n_outputs (rows that produce logits); ir.Graph.Specialize
// binds them for prefill, decode or the worst case.
//
// Inputs (ir "input" leaves, by name):
//
//	inp_tokens   i32[n_tokens]                 token ids
//	inp_pos      i32[n_tokens]                 positions
//	kv_idx       i64[n_tokens]                 KV cell each token is written to (set_rows mode)
//	KQ_mask      f32[n_kv, pad(n_tokens,64)]   0 or -inf, as llama.cpp builds it
//	inp_out_ids  i32[n_outputs]                rows whose logits are returned
//
// Each layer owns two "state" leaves, cache_k_l<i> and cache_v_l<i>. In the
// default set_rows mode they are [n_embd_kv, n_ctx] row tables written by a
// row scatter whose destination address never moves; in cpy mode (llama.cpp
// c392e50's own graph, kept to reproduce ggml-cann's graph-replay problem)
// the new rows are copied into a view whose byte offset moves with kv_head.
package models

import (
	"fmt"
	"math"
	"strings"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
)

// KVWrite selects how new K/V rows reach the cache.
type KVWrite int

const (
	// KVSetRows scatters rows by index into the whole cache (the default).
	KVSetRows KVWrite = iota
	// KVCpy copies into a view at kv_head, as llama.cpp c392e50 does.
	KVCpy
)

// String gives the CLI spelling: "set_rows" or "cpy".
func (k KVWrite) String() string {
	if k == KVCpy {
		return "cpy"
	}
	return "set_rows"
}

// ParseKVWrite parses "set_rows" or "cpy".
func ParseKVWrite(s string) (KVWrite, error) {
	switch s {
	case "set_rows", "":
		return KVSetRows, nil
	case "cpy":
		return KVCpy, nil
	}
	return 0, fmt.Errorf("models: unknown KV write mode %q (want set_rows or cpy)", s)
}

// KVCacheType is the KV cache element type.
type KVCacheType int

const (
	// KVF16 stores K and V as f16, as llama.cpp does by default.
	KVF16 KVCacheType = iota
	// KVF32 stores them as f32.
	KVF32
)

// DType returns the IR dtype of the cache.
func (k KVCacheType) DType() ir.DType {
	if k == KVF32 {
		return ir.F32
	}
	return ir.F16
}

// String is "f16" or "f32".
func (k KVCacheType) String() string { return k.DType().String() }

// ParseKVCacheType parses "f16" or "f32".
func ParseKVCacheType(s string) (KVCacheType, error) {
	switch s {
	case "f16", "":
		return KVF16, nil
	case "f32":
		return KVF32, nil
	}
	return 0, fmt.Errorf("models: KV cache type %q is not supported (f16 or f32)", s)
}

// Options control graph construction.
type Options struct {
	NCtx    int64       // KV cache cells (llama.cpp's n_ctx); 0 means 256
	KVType  KVCacheType // KV cache element type: f16 (the default, as llama.cpp) or f32
	KVWrite KVWrite
	// Ops becomes the built graph's OpSet (nil: the default set), so that
	// rewrites and parsers working on the graph resolve the ops registered
	// there (irtool.Context.Ops) as well as the built-in ones.
	Ops *ir.OpSet
}

// ParseOptions returns the Options of a KV cache of ctx cells whose
// element type and write mode are spelled kvType ("f16" or "f32") and
// kvWrite (ParseKVWrite), as irtool's --ctx, --kv-type and --kv-write
// give them.
func ParseOptions(ctx int64, kvType, kvWrite string) (Options, error) {
	opts := Options{NCtx: ctx}
	var err error
	if opts.KVType, err = ParseKVCacheType(kvType); err != nil {
		return opts, err
	}
	if opts.KVWrite, err = ParseKVWrite(kvWrite); err != nil {
		return opts, err
	}
	return opts, nil
}

// Symbols used by every builder.
const (
	SymTokens  = "n_tokens"
	SymKV      = "n_kv"
	SymOutputs = "n_outputs"
	SymKVHead  = "kv_head" // cpy mode only: the first cell written this step
	// MaskPad is GGML_KQ_MASK_PAD: mask rows are padded to a multiple of it.
	MaskPad = 64
	// KVPad is the granularity llama.cpp pads n_kv to.
	KVPad = 32
)

// HParams are the hyper-parameters a builder needs, after defaults.
type HParams struct {
	Arch          string
	NVocab        int64
	NCtxTrain     int64
	NEmbd         int64
	NLayer        int64
	NHead         int64
	NHeadKV       int64
	NFF           int64
	HeadDimK      int64
	HeadDimV      int64
	NRot          int64
	RMSEps        float64
	RopeFreqBase  float64
	RopeFreqScale float64
	RopeMode      int64 // 0 = NORM (llama), 2 = NEOX (qwen2)
	RopeExtFactor float64
	RopeAttn      float64
	NCtxOrig      int64
	AttnScale     float64 // 0: 1/sqrt(head_dim)
	RopeBetaFast  float64 // YaRN beta_fast (llama.cpp default 32)
	RopeBetaSlow  float64 // YaRN beta_slow (llama.cpp default 1)

	// QScale, when non-zero, scales Q by this factor before attention and
	// the softmax scale is 1 (phi3: 1/sqrt(head_dim); gemma3:
	// f_attention_scale).
	QScale float64
	// EmbdScale, when non-zero, multiplies the token embeddings (gemma3:
	// sqrt(n_embd) in float32).
	EmbdScale float64

	// Sliding-window attention (gemma3). SWAWindow is n_swa (0: none);
	// layer il uses the window when SWAPattern == 0 or
	// il % SWAPattern < SWAPattern-1 (llama.cpp's set_swa_pattern); those
	// layers rotate with RopeFreqBaseSWA / RopeFreqScaleSWA.
	SWAWindow        int64
	SWAPattern       int64
	RopeFreqBaseSWA  float64
	RopeFreqScaleSWA float64

	// Mixture of experts (qwen3moe): NExpert experts, NExpertUsed chosen
	// per token by a softmax router, expert FFN width NFFExp; the chosen
	// weights are renormalised to sum 1 when ExpertNormW, then scaled by
	// ExpertWeightsScale unless it is 0 or 1.
	NExpert            int64
	NExpertUsed        int64
	NFFExp             int64
	ExpertNormW        bool
	ExpertWeightsScale float64
}

// IsSWA reports whether layer il attends through the sliding window.
func (hp HParams) IsSWA(il int64) bool {
	if hp.SWAWindow <= 0 {
		return false
	}
	return hp.SWAPattern == 0 || il%hp.SWAPattern < hp.SWAPattern-1
}

// Weight describes one weight tensor: its GGUF type and ggml dims.
type Weight struct {
	Type ir.DType
	Ne   [4]int64
}

// WeightLookup resolves a GGUF tensor name.
type WeightLookup func(name string) (Weight, bool)

// Model is a built graph with the facts a runtime needs.
type Model struct {
	Graph   *ir.Graph
	HParams HParams
	Options Options
}

// fileWeights looks a weight's type and shape up in a GGUF file.
func fileWeights(f *gguf.File) func(name string) (Weight, bool) {
	return func(name string) (Weight, bool) {
		ti, ok := f.Tensor(name)
		if !ok {
			return Weight{}, false
		}
		return Weight{Type: ir.DType(ti.Type), Ne: ti.Ne}, true
	}
}

// Build reads the architecture from the file and builds its graph.
func Build(f *gguf.File, opts Options) (*Model, error) {
	hp, err := ReadHParams(f)
	if err != nil {
		return nil, err
	}
	return BuildHParams(hp, fileWeights(f), opts)
}

// BuildHParams builds a graph from hyper-parameters and a weight lookup, so a
// model's graph can be made without its file (planner benchmarks at the
// shapes of models we do not ship).
func BuildHParams(hp HParams, lookup WeightLookup, opts Options) (*Model, error) {
	if opts.NCtx == 0 {
		opts.NCtx = 256
	}
	if opts.KVType != KVF16 && opts.KVType != KVF32 {
		return nil, fmt.Errorf("models: KV cache type %d is not supported (f16 or f32)", opts.KVType)
	}
	if opts.NCtx < 1 || opts.NCtx > 1<<24 {
		return nil, fmt.Errorf("models: n_ctx %d out of range", opts.NCtx)
	}
	if err := hp.Validate(); err != nil {
		return nil, err
	}
	switch hp.Arch {
	case "llama", "qwen2", "mistral", "qwen3", "qwen3moe", "gemma3", "phi3":
		b := &builder{hp: hp, lookup: lookup, opts: opts}
		g, err := b.build()
		if err != nil {
			return nil, fmt.Errorf("models: %s: %w", hp.Arch, err)
		}
		if opts.Ops != nil {
			g.OpSet = opts.Ops
		}
		return &Model{Graph: g, HParams: hp, Options: opts}, nil
	}
	return nil, fmt.Errorf("models: architecture %q is not supported (%s)", hp.Arch, strings.Join(Architectures(), ", "))
}

// Architectures lists the values of general.architecture that Build
// supports.
func Architectures() []string {
	return []string{"gemma3", "llama", "mistral", "phi3", "qwen2", "qwen3", "qwen3moe"}
}

// MaxLayers bounds the layer count a graph is built for; the largest
// published decoders have under 200 layers.
const MaxLayers = 4096

// Validate checks what the builders rely on: positive sizes below 2^31, a
// layer count up to MaxLayers, whole heads (n_head a multiple of n_head_kv),
// rotary dims within the head, and a positive norm epsilon. ReadHParams
// output always passes; hyper-parameters made by hand (BuildHParams) are
// checked here so that hostile values give an error, not a panic or an
// unbounded build.
func (hp HParams) Validate() error {
	for _, d := range []struct {
		name string
		v    int64
	}{{"n_vocab", hp.NVocab}, {"n_embd", hp.NEmbd}, {"n_layer", hp.NLayer}, {"n_head", hp.NHead},
		{"n_head_kv", hp.NHeadKV}, {"n_ff", hp.NFF}, {"head_dim_k", hp.HeadDimK}, {"head_dim_v", hp.HeadDimV}} {
		if d.v <= 0 || d.v > 1<<31 {
			return fmt.Errorf("models: %s %d is out of range", d.name, d.v)
		}
	}
	if hp.NLayer > MaxLayers {
		return fmt.Errorf("models: n_layer %d exceeds %d", hp.NLayer, MaxLayers)
	}
	if hp.NHead%hp.NHeadKV != 0 {
		return fmt.Errorf("models: n_head %d is not a multiple of n_head_kv %d", hp.NHead, hp.NHeadKV)
	}
	if hp.NRot < 0 || hp.NRot > hp.HeadDimK || hp.NRot%2 != 0 {
		return fmt.Errorf("models: n_rot %d must be even and within the head (%d)", hp.NRot, hp.HeadDimK)
	}
	if !(hp.RMSEps > 0) {
		return fmt.Errorf("models: bad rms epsilon %v", hp.RMSEps)
	}
	if hp.NExpert != 0 || hp.NExpertUsed != 0 {
		if hp.NExpert < 1 || hp.NExpert > 1<<20 || hp.NExpertUsed < 1 || hp.NExpertUsed > hp.NExpert {
			return fmt.Errorf("models: %d experts with %d used per token", hp.NExpert, hp.NExpertUsed)
		}
		if hp.NFFExp <= 0 || hp.NFFExp > 1<<31 {
			return fmt.Errorf("models: expert n_ff %d is out of range", hp.NFFExp)
		}
	}
	if hp.SWAWindow < 0 || hp.SWAPattern < 0 || hp.SWAPattern > 1<<20 {
		return fmt.Errorf("models: sliding window %d with pattern %d", hp.SWAWindow, hp.SWAPattern)
	}
	return nil
}

// The hyper-parameter keys ReadHParams reads (after "ARCH."), by the kind
// of value each must hold.
var (
	hparamUintKeys = []string{"embedding_length", "block_count", "attention.head_count", "feed_forward_length",
		"attention.head_count_kv", "attention.key_length", "attention.value_length", "rope.dimension_count",
		"context_length", "rope.scaling.original_context_length", "vocab_size"}
	hparamFloatKeys  = []string{"attention.layer_norm_rms_epsilon", "rope.freq_base", "rope.scale_linear", "rope.scaling.factor", "attention.scale"}
	hparamStringKeys = []string{"rope.scaling.type"}
)

// checkHParamTypes reports a hyper-parameter key that is present with the
// wrong type as such, rather than letting it read as missing (or be
// silently replaced by a default).
func checkHParamTypes(f *gguf.File, arch string) error {
	for _, k := range hparamUintKeys {
		v, ok := f.Get(arch + "." + k)
		if !ok {
			continue
		}
		if _, ok := v.Uint(); !ok {
			if i, ok := v.Int(); ok {
				return fmt.Errorf("models: metadata key %q = %d is negative", arch+"."+k, i)
			}
			return fmt.Errorf("models: metadata key %q has type %s, want an integer", arch+"."+k, v.Type())
		}
	}
	for _, k := range hparamFloatKeys {
		if v, ok := f.Get(arch + "." + k); ok {
			if x, ok := v.Float(); !ok {
				return fmt.Errorf("models: metadata key %q has type %s, want f32 or f64", arch+"."+k, v.Type())
			} else if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("models: metadata key %q = %v is not finite", arch+"."+k, x)
			}
		}
	}
	for _, k := range hparamStringKeys {
		if v, ok := f.Get(arch + "." + k); ok && v.Type() != gguf.ValString {
			return fmt.Errorf("models: metadata key %q has type %s, want a string", arch+"."+k, v.Type())
		}
	}
	return nil
}

// ReadHParams reads hyper-parameters from GGUF metadata with llama.cpp's defaults.
func ReadHParams(f *gguf.File) (HParams, error) {
	arch := f.Arch()
	if arch == "" {
		if v, ok := f.Get("general.architecture"); ok {
			return HParams{}, fmt.Errorf("models: metadata key %q has type %s, want a non-empty string", "general.architecture", v.Type())
		}
		return HParams{}, fmt.Errorf("models: no general.architecture key")
	}
	hp := HParams{Arch: arch}
	if err := checkHParamTypes(f, arch); err != nil {
		return hp, err
	}
	if err := readShapeHParams(f, &hp); err != nil {
		return hp, err
	}
	if err := readRopeHParams(f, &hp); err != nil {
		return hp, err
	}
	if err := readArchHParams(f, &hp); err != nil {
		return hp, err
	}
	if err := readVocabSize(f, &hp); err != nil {
		return hp, err
	}
	if math.IsNaN(hp.RMSEps) || hp.RMSEps < 0 {
		return hp, fmt.Errorf("models: bad rms epsilon %v", hp.RMSEps)
	}
	return hp, nil
}

// readShapeHParams reads the sizes (embedding, layers, heads, feed-forward,
// head dimensions, rotated dimensions, training context) and the RMS
// epsilon of hp.Arch.
func readShapeHParams(f *gguf.File, hp *HParams) error {
	arch := hp.Arch
	key := func(s string) string { return arch + "." + s }
	req := func(s string) (int64, error) {
		v, ok := f.GetUint(key(s))
		if !ok {
			return 0, fmt.Errorf("models: missing metadata key %q", key(s))
		}
		if v == 0 || v > 1<<31 {
			return 0, fmt.Errorf("models: metadata key %q = %d is out of range", key(s), v)
		}
		return int64(v), nil
	}
	var err error
	if hp.NEmbd, err = req("embedding_length"); err != nil {
		return err
	}
	if hp.NLayer, err = req("block_count"); err != nil {
		return err
	}
	if hp.NHead, err = req("attention.head_count"); err != nil {
		return err
	}
	if hp.NFF, err = req("feed_forward_length"); err != nil {
		return err
	}
	hp.NHeadKV = hp.NHead
	if v, ok := f.GetUint(key("attention.head_count_kv")); ok {
		hp.NHeadKV = int64(v)
	}
	if hp.NHeadKV == 0 || hp.NHead%hp.NHeadKV != 0 {
		return fmt.Errorf("models: n_head %d is not a multiple of n_head_kv %d", hp.NHead, hp.NHeadKV)
	}
	if hp.NEmbd%hp.NHead != 0 {
		return fmt.Errorf("models: n_embd %d is not a multiple of n_head %d", hp.NEmbd, hp.NHead)
	}
	hp.HeadDimK = hp.NEmbd / hp.NHead
	hp.HeadDimV = hp.HeadDimK
	if v, ok := f.GetUint(key("attention.key_length")); ok && v > 0 {
		hp.HeadDimK = int64(v)
	}
	if v, ok := f.GetUint(key("attention.value_length")); ok && v > 0 {
		hp.HeadDimV = int64(v)
	}
	hp.NRot = hp.HeadDimK
	if v, ok := f.GetUint(key("rope.dimension_count")); ok && v > 0 {
		hp.NRot = int64(v)
	}
	hp.NCtxTrain = 2048
	if v, ok := f.GetUint(key("context_length")); ok && v > 0 {
		hp.NCtxTrain = int64(v)
	}
	hp.RMSEps = 1e-5
	if v, ok := f.GetFloat(key("attention.layer_norm_rms_epsilon")); ok {
		hp.RMSEps = v
	} else if arch != "llama" && arch != "qwen2" && arch != "mistral" {
		// llama.cpp's loaders of qwen3, qwen3moe, gemma3 and phi3 require the key.
		return fmt.Errorf("models: missing metadata key %q", key("attention.layer_norm_rms_epsilon"))
	}
	return nil
}

// readRopeHParams reads RoPE's frequency base and scaling (linear or
// YaRN), the attention scale and the rotation mode of hp.Arch.
func readRopeHParams(f *gguf.File, hp *HParams) error {
	arch := hp.Arch
	key := func(s string) string { return arch + "." + s }
	hp.RopeFreqBase = 10000
	if v, ok := f.GetFloat(key("rope.freq_base")); ok && v > 0 {
		hp.RopeFreqBase = v
	}
	// Rope scaling: llama.cpp reads rope.scaling.factor, or the older
	// rope.scale_linear; the frequency scale is its inverse.
	scale := 0.0
	if v, ok := f.GetFloat(key("rope.scale_linear")); ok {
		scale = v
	}
	if v, ok := f.GetFloat(key("rope.scaling.factor")); ok {
		scale = v
	}
	hp.RopeFreqScale = 1
	if scale != 0 {
		hp.RopeFreqScale = 1 / scale
	}
	// llama_rope_scaling_type_from_string: "none", "linear", "yarn",
	// "longrope" (the default is linear). With YaRN llama.cpp's context
	// sets ext_factor 1; otherwise 0.
	stype, _ := f.GetString(key("rope.scaling.type"))
	switch stype {
	case "", "none", "linear", "longrope":
	case "yarn":
		hp.RopeExtFactor = 1
	default:
		return fmt.Errorf("models: rope scaling type %q is not supported (none, linear, yarn, longrope)", stype)
	}
	if stype == "none" {
		hp.RopeFreqScale = 1 // llama.cpp never scales with type none
	}
	hp.RopeAttn = 1
	if v, ok := f.GetFloat(key("rope.scaling.yarn_attn_factor")); ok && v > 0 {
		hp.RopeAttn = v
	}
	hp.RopeBetaFast, hp.RopeBetaSlow = 32, 1
	if v, ok := f.GetFloat(key("rope.scaling.yarn_beta_fast")); ok && v > 0 {
		hp.RopeBetaFast = v
	}
	if v, ok := f.GetFloat(key("rope.scaling.yarn_beta_slow")); ok && v > 0 {
		hp.RopeBetaSlow = v
	}
	hp.NCtxOrig = hp.NCtxTrain
	if v, ok := f.GetUint(key("rope.scaling.original_context_length")); ok && v > 0 {
		hp.NCtxOrig = int64(v)
	}
	if v, ok := f.GetFloat(key("attention.scale")); ok {
		hp.AttnScale = v
	}
	// llama_model_rope_type: LLaMA rotates adjacent pairs (NORM), the
	// others rotate halves (NEOX).
	switch arch {
	case "qwen2", "qwen3", "qwen3moe", "phi3", "gemma3":
		hp.RopeMode = 2
	}
	// Sliding-window layers rotate like the others unless the arch says.
	hp.RopeFreqBaseSWA, hp.RopeFreqScaleSWA = hp.RopeFreqBase, hp.RopeFreqScale
	return nil
}

// readVocabSize sets hp.NVocab from the token list, the vocab_size key or
// the embedding's rows, the last present winning.
func readVocabSize(f *gguf.File, hp *HParams) error {
	key := func(s string) string { return hp.Arch + "." + s }
	hp.NVocab = 0
	if toks, ok := f.GetStrings("tokenizer.ggml.tokens"); ok {
		hp.NVocab = int64(len(toks))
	}
	if v, ok := f.GetUint(key("vocab_size")); ok && v > 0 {
		hp.NVocab = int64(v)
	}
	if ti, ok := f.Tensor("token_embd.weight"); ok {
		hp.NVocab = ti.Ne[1]
	}
	if hp.NVocab == 0 {
		return fmt.Errorf("models: cannot tell the vocabulary size")
	}
	return nil
}

// readArchHParams reads what one architecture's llama.cpp loader reads
// beyond the common keys (src/models/<arch>.cpp and llama-model.cpp at
// llama.cpp 3f545bec), with its defaults.
func readArchHParams(f *gguf.File, hp *HParams) error {
	key := func(s string) string { return hp.Arch + "." + s }
	switch hp.Arch {
	case "qwen3", "qwen3moe", "gemma3", "phi3":
		// Their graphs assert n_embd_head_v == n_embd_head_k (and qwen3's
		// that n_rot is the whole head).
		if hp.HeadDimV != hp.HeadDimK {
			return fmt.Errorf("models: %s: value head dim %d differs from key head dim %d", hp.Arch, hp.HeadDimV, hp.HeadDimK)
		}
		if (hp.Arch == "qwen3" || hp.Arch == "qwen3moe") && hp.NRot != hp.HeadDimK {
			return fmt.Errorf("models: %s: rope.dimension_count %d differs from the head dim %d", hp.Arch, hp.NRot, hp.HeadDimK)
		}
	}
	switch hp.Arch {
	case "llama", "qwen3moe":
		if hp.Arch == "llama" {
			// LLaMA with experts (Mixtral's layout): llama.cpp reads
			// expert_count and, when it is not 0, builds build_moe_ffn
			// with softmax gating and renormalised weights over experts
			// of n_ff rows.
			if v, ok := f.GetUint(key("expert_count")); !ok || v == 0 {
				return nil
			}
		}
		get := func(s string) (int64, error) {
			v, ok := f.GetUint(key(s))
			if !ok || v == 0 || v > 1<<20 {
				return 0, fmt.Errorf("models: %s: metadata key %q missing or out of range", hp.Arch, key(s))
			}
			return int64(v), nil
		}
		var err error
		if hp.NExpert, err = get("expert_count"); err != nil {
			return err
		}
		if hp.NExpertUsed, err = get("expert_used_count"); err != nil {
			return err
		}
		if hp.NExpertUsed > hp.NExpert {
			return fmt.Errorf("models: %s: expert_used_count %d exceeds expert_count %d", hp.Arch, hp.NExpertUsed, hp.NExpert)
		}
		hp.NFFExp = hp.NFF // llama: the experts are n_ff wide
		if hp.Arch == "qwen3moe" {
			// n_ff_exp defaults to n_ff / n_expert_used.
			hp.NFFExp = hp.NFF / hp.NExpertUsed
			if v, ok := f.GetUint(key("expert_feed_forward_length")); ok && v > 0 {
				hp.NFFExp = int64(v)
			}
		}
		hp.ExpertNormW = true // build_moe_ffn(..., norm_w = true, ...)
	case "phi3":
		// llama.cpp disables Phi-3's sliding window (n_swa = 0) and scales
		// Q by 1/sqrt(head_dim) before attention.
		hp.QScale = float64(1 / float32(math.Sqrt(float64(hp.HeadDimK))))
	case "gemma3":
		v, ok := f.GetUint(key("attention.sliding_window"))
		if !ok || v == 0 || v > 1<<31 {
			return fmt.Errorf("models: gemma3: metadata key %q missing or out of range", key("attention.sliding_window"))
		}
		hp.SWAWindow = int64(v)
		hp.SWAPattern = 6
		if p, ok := f.GetUint(key("attention.sliding_window_pattern")); ok {
			if p > 1<<20 {
				return fmt.Errorf("models: gemma3: sliding_window_pattern %d out of range", p)
			}
			hp.SWAPattern = int64(p)
		}
		hp.RopeFreqBaseSWA, hp.RopeFreqScaleSWA = 10000, 1
		if v, ok := f.GetFloat(key("rope.freq_base_swa")); ok && v > 0 {
			hp.RopeFreqBaseSWA = v
		}
		// llama.cpp builds gemma3 with sliding-window attention, whose graph
		// applies no final logit softcapping even when the key is present.
		// f_attention_scale: 1/sqrt(n_embd/n_head) for the 27B (62 layers),
		// else 1/sqrt(head_dim); embeddings are scaled by sqrtf(n_embd).
		d := float32(hp.HeadDimK)
		if hp.NLayer == 62 {
			d = float32(hp.NEmbd / hp.NHead)
		}
		hp.QScale = float64(1 / float32(math.Sqrt(float64(d))))
		hp.EmbdScale = float64(float32(math.Sqrt(float64(hp.NEmbd))))
	}
	return nil
}
