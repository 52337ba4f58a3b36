package passes_test

import (
	"encoding/binary"
	"maps"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/runtime/session"
	"github.com/irtool/irtool/tokenizer"
)

// referencePrompt is the prompt of the reference llama.cpp runs (testdata/README.md).
const referencePrompt = "Once upon a time"

// relDiff is max|a-b| / max|a|, the measure of docs/KERNELS.md.
func relDiff(a, b []float32) float64 {
	var d, m float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
		m = max(m, math.Abs(float64(a[i])))
	}
	if m == 0 {
		return d
	}
	return d / m
}

// generate runs prefill and greedy decode of n tokens on a model whose graph
// is g.
func generate(t *testing.T, m *models.Model, g *ir.Graph, f *gguf.File, prompt []int32, n int, q kernels.QuantMode) *session.GenerateResult {
	t.Helper()
	mm := *m
	mm.Graph = g
	s, err := session.NewSession(&mm, f, session.SessionOptions{Exec: eval.ExecOptions{Kernels: kernels.Options{Quant: q}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Generate(prompt, n, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestModelsEndToEnd is the acceptance test: on every reference model, the
// default pipeline's graph (and the one with merge-qkv) gives logits within
// 1e-5 relative of the unoptimised graph at every step of greedy
// generation from the reference prompt, and the same tokens.
func TestModelsEndToEnd(t *testing.T) {
	steps := 8
	if testing.Short() {
		steps = 3
	}
	for _, path := range testref.Models(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".gguf")
		t.Run(name, func(t *testing.T) {
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			tok, err := tokenizer.FromGGUF(f)
			if err != nil {
				t.Fatal(err)
			}
			prompt, err := tok.Encode(referencePrompt, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
			if err != nil {
				t.Fatal(err)
			}
			kv := []models.KVWrite{models.KVSetRows}
			if name == "stories260K" {
				kv = append(kv, models.KVCpy)
			}
			for _, mode := range kv {
				m, err := models.Build(f, models.Options{NCtx: 64, KVWrite: mode})
				if err != nil {
					t.Fatal(err)
				}
				base := generate(t, m, m.Graph, f, prompt, steps, kernels.QuantGGML)
				for _, pipe := range []string{"default", "default,merge-qkv"} {
					p, err := passes.Parse(pipe)
					if err != nil {
						t.Fatal(err)
					}
					g, res, err := passes.Run(m.Graph, p, passes.Options{})
					if err != nil {
						t.Fatal(err)
					}
					got := generate(t, m, g, f, prompt, steps, kernels.QuantGGML)
					worst := 0.0
					for i := range base.Logits {
						worst = max(worst, relDiff(base.Logits[i], got.Logits[i]))
						if base.Tokens[i] != got.Tokens[i] {
							t.Fatalf("%s/%s: step %d: token %d, unoptimised %d", mode, pipe, i, got.Tokens[i], base.Tokens[i])
						}
					}
					if worst > 1e-5 {
						t.Errorf("%s/%s: logits differ by %.3g relative (> 1e-5)", mode, pipe, worst)
					}
					t.Logf("%s/%s: %d -> %d ops, max rel diff %.3g, tokens %v", mode, pipe, m.Graph.NumOps(), g.NumOps(), worst, got.Tokens)
					_ = res
				}
			}
		})
	}
}

// TestSyntheticArchitectures covers what the reference models do not: a
// qwen2 graph (biased Q/K/V projections, NEOX RoPE) and a llama graph with
// RoPE frequency factors, with F32, F16 and Q8_0 weights, built from
// hyper-parameters with deterministic random weights.
func TestSyntheticArchitectures(t *testing.T) {
	base := models.HParams{NVocab: 64, NCtxTrain: 512, NEmbd: 32, NLayer: 2, NHead: 4, NHeadKV: 2, NFF: 64,
		HeadDimK: 8, HeadDimV: 8, NRot: 8, RMSEps: 1e-6, RopeFreqBase: 10000, RopeFreqScale: 1, RopeAttn: 1, NCtxOrig: 512}
	qwen := base
	qwen.Arch, qwen.RopeMode, qwen.RopeFreqBase = "qwen2", 2, 1e6
	llama := base
	llama.Arch = "llama"
	for _, c := range []struct {
		name   string
		hp     models.HParams
		biases bool
		freqs  bool
		dt     ir.DType
	}{
		{"qwen2-f32", qwen, true, false, ir.F32},
		{"qwen2-f16", qwen, true, false, ir.F16},
		{"qwen2-q8_0", qwen, true, false, ir.Q8_0},
		{"llama-rope-freqs", llama, false, true, ir.F32},
	} {
		t.Run(c.name, func(t *testing.T) {
			hp := c.hp
			nq, nkv := hp.HeadDimK*hp.NHead, hp.HeadDimK*hp.NHeadKV
			shapes := map[string][]int64{
				"token_embd.weight": {hp.NEmbd, hp.NVocab}, "output_norm.weight": {hp.NEmbd}, "output.weight": {hp.NEmbd, hp.NVocab},
			}
			if c.freqs {
				shapes["rope_freqs.weight"] = []int64{hp.NRot / 2}
			}
			for l := range hp.NLayer {
				p := "blk." + strconv.FormatInt(l, 10) + "."
				for k, v := range map[string][]int64{"attn_norm.weight": {hp.NEmbd}, "attn_q.weight": {hp.NEmbd, nq},
					"attn_k.weight": {hp.NEmbd, nkv}, "attn_v.weight": {hp.NEmbd, nkv}, "attn_output.weight": {nq, hp.NEmbd},
					"ffn_norm.weight": {hp.NEmbd}, "ffn_gate.weight": {hp.NEmbd, hp.NFF}, "ffn_up.weight": {hp.NEmbd, hp.NFF},
					"ffn_down.weight": {hp.NFF, hp.NEmbd}} {
					shapes[p+k] = v
				}
				if c.biases {
					shapes[p+"attn_q.bias"], shapes[p+"attn_k.bias"], shapes[p+"attn_v.bias"] = []int64{nq}, []int64{nkv}, []int64{nkv}
				}
			}
			weights := passes.WeightData{}
			lookup := func(name string) (models.Weight, bool) {
				s, ok := shapes[name]
				if !ok {
					return models.Weight{}, false
				}
				w := models.Weight{Type: ir.F32, Ne: [4]int64{1, 1, 1, 1}}
				copy(w.Ne[:], s)
				if len(s) == 2 && name != "token_embd.weight" {
					w.Type = c.dt
				}
				if _, ok := weights[name]; !ok {
					d, err := passes.LeafData(name, ir.Type{DType: w.Type, Shape: ir.Sh(w.Ne[0], w.Ne[1], w.Ne[2], w.Ne[3])}, 0)
					if err != nil {
						t.Fatal(err)
					}
					weights[name] = d
				}
				return w, true
			}
			m, err := models.BuildHParams(hp, lookup, models.Options{NCtx: 64})
			if err != nil {
				t.Fatal(err)
			}
			prompt := []int32{1, 5, 9, 20, 33}
			run := func(g *ir.Graph) *session.GenerateResult {
				mm := *m
				mm.Graph = g
				s, err := session.NewSession(&mm, weights, session.SessionOptions{Exec: eval.ExecOptions{Kernels: kernels.Options{Quant: kernels.QuantGGML}}})
				if err != nil {
					t.Fatal(err)
				}
				res, err := s.Generate(prompt, 6, true, nil)
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			want := run(m.Graph)
			for _, pipe := range []string{"default", "default,merge-qkv"} {
				g, res, err := passes.Run(m.Graph, mustParse(t, pipe), passes.Options{})
				if err != nil {
					t.Fatal(err)
				}
				hits := map[string]int{}
				for _, st := range res.Passes {
					maps.Copy(hits, st.RuleHits)
					for k, v := range st.Stats {
						hits[st.Name+"."+k] = v
					}
				}
				if c.biases && hits["mul-mat-add"] != 3*int(hp.NLayer) {
					t.Errorf("%s: mul-mat-add fired %d times, want %d", pipe, hits["mul-mat-add"], 3*hp.NLayer)
				}
				if pipe != "default" && hits["merge-qkv.groups"] == 0 {
					t.Errorf("%s: nothing merged", pipe)
				}
				if sinCos(g) != 1 {
					t.Errorf("%s: %d sin/cos computations per step", pipe, sinCos(g))
				}
				got := run(g)
				for i := range want.Logits {
					if d := relDiff(want.Logits[i], got.Logits[i]); d > 1e-5 || want.Tokens[i] != got.Tokens[i] {
						t.Fatalf("%s: step %d: token %d (want %d), logits differ by %.3g", pipe, i, got.Tokens[i], want.Tokens[i], d)
					}
				}
			}
		})
	}
}

// TestRopeTable measures ggml-cann's formulation of the RoPE cache (opt-in
// pass rope-table): the inverse frequencies become one constant, the
// angles are positions times that constant. It is not ggml's float32
// recurrence, so the logits move; the test bounds how far and checks the
// greedy tokens stay the same.
func TestRopeTable(t *testing.T) {
	f, err := gguf.Open(testref.Testdata("stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := models.Build(f, models.Options{NCtx: 64})
	if err != nil {
		t.Fatal(err)
	}
	p := mustParse(t, "noop,rope-cache,rope-table,fold,cse,fuse-norm,fuse-swiglu,fuse-softmax,fuse-attention,fuse-rope-set-rows,dce")
	g, _, err := passes.Run(m.Graph, p, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	consts := g.Leaves(ir.OpConst)
	if len(consts) != 1 || consts[0].Name != "rope_inv_freq" || len(g.Leaves(ir.OpRopeCacheTable)) != 1 || sinCos(g) != 0 {
		t.Fatalf("want one folded rope_inv_freq constant feeding one rope_cache_table:\n%s", g)
	}
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	prompt, _ := tok.Encode(referencePrompt, tokenizer.EncodeOptions{AddSpecial: true, ParseSpecial: true})
	want := generate(t, m, m.Graph, f, prompt, 16, kernels.QuantGGML)
	got := generate(t, m, g, f, prompt, 16, kernels.QuantGGML)
	worst := 0.0
	for i := range want.Logits {
		worst = max(worst, relDiff(want.Logits[i], got.Logits[i]))
		if want.Tokens[i] != got.Tokens[i] {
			t.Fatalf("step %d: token %d, ggml's rope gives %d", i, got.Tokens[i], want.Tokens[i])
		}
	}
	t.Logf("rope-table on stories260K: logits within %.3g relative of ggml's rope over %d steps", worst, len(want.Logits))
	if worst > 1e-4 {
		t.Errorf("rope-table moves the logits by %.3g relative (> 1e-4)", worst)
	}

	// The tables themselves, at the sizes of real models: positions up to
	// 4095, 64 and 128 rotated dims.
	for _, c := range []struct {
		nDims int64
		base  float64
	}{{8, 10000}, {64, 10000}, {128, 10000}, {128, 1e6}} {
		g := ir.New("tables")
		pos, _ := g.AddTyped(ir.OpInput, nil, nil, ir.T(ir.I32, 4096))
		pos.Name = "pos"
		attrs := ir.Attrs{"n_dims": c.nDims, "mode": int64(0), "freq_base": c.base, "freq_scale": 1.0, "ext_factor": 0.0, "attn_factor": 1.0}
		exact, err := g.Add(ir.OpRopeCache, []*ir.Node{pos}, attrs)
		if err != nil {
			t.Fatal(err)
		}
		theta, err := g.Add(ir.OpRopeTheta, nil, ir.Attrs{"n_dims": c.nDims, "freq_base": c.base})
		if err != nil {
			t.Fatal(err)
		}
		seed, err := g.Add(ir.OpRopeCacheTable, []*ir.Node{pos, theta}, ir.Attrs{"n_dims": c.nDims, "mode": int64(0), "freq_scale": 1.0, "attn_factor": 1.0})
		if err != nil {
			t.Fatal(err)
		}
		g.Outputs = []*ir.Node{exact, seed}
		ex, err := eval.NewExecutor(g, nil, eval.ExecOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := make([]byte, 4*4096)
		for i := range 4096 {
			binary.LittleEndian.PutUint32(p[4*i:], uint32(i))
		}
		if err := ex.SetInput("pos", p); err != nil {
			t.Fatal(err)
		}
		if err := ex.Run(); err != nil {
			t.Fatal(err)
		}
		a, _, _ := ex.Output(0)
		b, _, _ := ex.Output(1)
		var d float64
		for i := range a {
			d = max(d, math.Abs(float64(a[i])-float64(b[i])))
		}
		t.Logf("n_dims %d, base %g, positions 0..4095: max |cos/sin difference| %.3g", c.nDims, c.base, d)
		if d > 1e-3 {
			t.Errorf("n_dims %d: tables differ by %.3g", c.nDims, d)
		}
	}
}
