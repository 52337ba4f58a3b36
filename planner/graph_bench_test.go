package planner_test

import (
	"github.com/irtool/irtool/internal/testmodel"
	"strconv"
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/planner"
)

// qwen05B builds the graph of Qwen2.5-0.5B's shapes from hyper-parameters
// alone (24 layers, n_embd 896, 14 heads, 2 KV heads, n_ff 4864, vocab
// 151936, q/k/v biases, tied embeddings); the weights have no data, which
// planning does not need.
func qwen05B(tb testing.TB, nCtx int64) *models.Model {
	tb.Helper()
	hp := models.HParams{
		Arch: "qwen2", NVocab: 151936, NCtxTrain: 32768, NEmbd: 896, NLayer: 24, NHead: 14, NHeadKV: 2,
		NFF: 4864, HeadDimK: 64, HeadDimV: 64, NRot: 64, RMSEps: 1e-6, RopeFreqBase: 1e6, RopeFreqScale: 1,
		RopeMode: 2, NCtxOrig: 32768, RopeAttn: 1,
	}
	shapes := map[string][2]int64{
		"token_embd.weight": {896, 151936}, "output_norm.weight": {896, 1},
		"attn_norm.weight": {896, 1}, "ffn_norm.weight": {896, 1},
		"attn_q.weight": {896, 896}, "attn_q.bias": {896, 1},
		"attn_k.weight": {896, 128}, "attn_k.bias": {128, 1},
		"attn_v.weight": {896, 128}, "attn_v.bias": {128, 1},
		"attn_output.weight": {896, 896},
		"ffn_gate.weight":    {896, 4864}, "ffn_up.weight": {896, 4864}, "ffn_down.weight": {4864, 896},
	}
	lookup := func(name string) (models.Weight, bool) {
		if rest, ok := strings.CutPrefix(name, "blk."); ok {
			i := strings.IndexByte(rest, '.')
			if l, err := strconv.Atoi(rest[:i]); err != nil || l >= 24 {
				return models.Weight{}, false
			}
			name = rest[i+1:]
		}
		s, ok := shapes[name]
		if !ok {
			return models.Weight{}, false // rope_freqs, output.weight (tied)
		}
		dt := ir.F16
		if s[1] == 1 {
			dt = ir.F32
		}
		return models.Weight{Type: dt, Ne: [4]int64{s[0], s[1], 1, 1}}, true
	}
	m, err := models.BuildHParams(hp, lookup, models.Options{NCtx: nCtx})
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// BenchmarkPlanQwen25_05B plans Qwen2.5-0.5B's shapes at n_ctx = n_ubatch
// = 512: the worst case (512 tokens) and decode (1 token), with best, the
// CPU policy and reordering on, as irtool compile does. The goal is under
// 100 ms per plan.
//
//	go test ./planner/ -run '^$' -bench PlanQwen -benchtime 20x
func BenchmarkPlanQwen25_05B(b *testing.B) {
	m := qwen05B(b, 512)
	for _, c := range []struct {
		name    string
		nTokens int64
	}{{"worst", 512}, {"decode", 1}} {
		g, err := m.Graph.Specialize(ir.Bindings{models.SymTokens: c.nTokens, models.SymKV: 512, models.SymOutputs: c.nTokens})
		if err != nil {
			b.Fatal(err)
		}
		for _, v := range []struct {
			name string
			opts planner.MemoryOptions
		}{
			{"cpu", planner.MemoryOptions{Policy: planner.CPUPolicy(), Reorder: true, Align: 32}},
			{"npu", planner.MemoryOptions{Policy: planner.NPUPolicy(), Reorder: true, Align: 64}},
		} {
			b.Run(c.name+"/"+v.name, func(b *testing.B) {
				var p *planner.MemoryPlan
				for b.Loop() {
					if p, err = planner.PlanMemory(g, v.opts); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(p.ArenaBytes)/(1<<20), "arena_MiB")
				b.ReportMetric(p.Ratio(), "xLB")
				b.ReportMetric(float64(p.Strategies[planner.StrategyGallocr])/float64(p.ArenaBytes), "gallocr/arena")
				b.ReportMetric(float64(len(p.Problem.Buffers)), "buffers")
			})
		}
	}
}

// TestQwenShapesPlan keeps the benchmark's graph honest in normal test
// runs: it plans, reaches the lower bound, and has Qwen's node count.
func TestQwenShapesPlan(t *testing.T) {
	m := qwen05B(t, 512)
	if got := m.Graph.NumOps(); got < 24*30 {
		t.Fatalf("%d ops for 24 layers", got)
	}
	g, err := m.Graph.Specialize(ir.Bindings{models.SymTokens: 1, models.SymKV: 512, models.SymOutputs: 1})
	if err != nil {
		t.Fatal(err)
	}
	p := plan(t, g, planner.MemoryOptions{Policy: planner.CPUPolicy(), Reorder: true})
	if p.ArenaBytes != p.LowerBound {
		t.Errorf("decode arena %d, LB %d", p.ArenaBytes, p.LowerBound)
	}
}

// BenchmarkPlanReferenceModels plans every reference model at n_ctx =
// n_ubatch = 256 and reports the figures of docs/PERFORMANCE.md:
//
//   - ggml: llama.cpp's graph (cpy KV writes) and layout (inputs and
//     outputs in the arena, 32-byte alignment, CPU in-place rule):
//     llama.cpp's own compute buffer, the gallocr replay, best and the
//     lower bound;
//
//   - cpu / npu: this project's default graph (set_rows) and arena
//     (intermediates only), with the CPU policy at 32 bytes and the NPU
//     policy at 64 bytes (no workspaces), worst case and decode.
//
//     go test ./planner/ -run '^$' -bench PlanReferenceModels -benchtime 1x
func BenchmarkPlanReferenceModels(b *testing.B) {
	for _, path := range testref.Models(b) {
		type variant struct {
			name    string
			kv      models.KVWrite
			nTokens int64
			opts    planner.MemoryOptions
		}
		for _, v := range []variant{
			{"worst-ggml", models.KVCpy, 256, planner.MemoryOptions{Policy: planner.CPUPolicy(), ArenaIO: true, Align: 32}},
			{"decode-ggml", models.KVCpy, 1, planner.MemoryOptions{Policy: planner.CPUPolicy(), ArenaIO: true, Align: 32}},
			{"worst-cpu", models.KVSetRows, 256, planner.MemoryOptions{Policy: planner.CPUPolicy(), Align: 32, Reorder: true}},
			{"decode-cpu", models.KVSetRows, 1, planner.MemoryOptions{Policy: planner.CPUPolicy(), Align: 32, Reorder: true}},
			{"worst-npu", models.KVSetRows, 256, planner.MemoryOptions{Policy: planner.NPUPolicy(), Align: 64, Reorder: true}},
			{"decode-npu", models.KVSetRows, 1, planner.MemoryOptions{Policy: planner.NPUPolicy(), Align: 64, Reorder: true}},
		} {
			b.Run(modelBase(path)+"/"+v.name, func(b *testing.B) {
				_, m := testmodel.Build(b, path, models.Options{NCtx: 256, KVWrite: v.kv})
				g := specialise(b, m, v.nTokens, 256, v.nTokens)
				var p *planner.MemoryPlan
				var err error
				for b.Loop() {
					if p, err = planner.PlanMemory(g, v.opts); err != nil {
						b.Fatal(err)
					}
				}
				if want, ok := computeBuffer(b, path); ok && v.name == "worst-ggml" {
					b.ReportMetric(float64(want), "llamacpp_B")
				}
				b.ReportMetric(float64(p.Strategies[planner.StrategyGallocr]), "gallocr_B")
				b.ReportMetric(float64(p.ArenaBytes), "best_B")
				b.ReportMetric(float64(p.LowerBound), "LB_B")
				b.ReportMetric(float64(p.NaiveBytes), "naive_B")
			})
		}
	}
}
