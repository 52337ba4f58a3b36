package planner_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/floatbits"
	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/runtime/session"
)

// modelBase is a model file's name without directory and extension.
func modelBase(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".gguf")
}

func specialise(t testing.TB, m *models.Model, nTokens, nKV, nOutputs int64) *ir.Graph {
	t.Helper()
	g, err := m.Graph.Specialize(ir.Bindings{models.SymTokens: nTokens, models.SymKV: nKV, models.SymOutputs: nOutputs, models.SymKVHead: 0})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// llamaCppGraph is the graph llama.cpp c392e50 reserves its compute buffer
// with: cpy KV writes, f16 cache, n_ctx = n_ubatch = 256, all 256 rows
// producing logits.
func llamaCppGraph(t testing.TB, path string) *ir.Graph {
	_, m := testmodel.Build(t, path, models.Options{NCtx: 256, KVWrite: models.KVCpy, KVType: models.KVF16})
	return specialise(t, m, 256, 256, 256)
}

// computeBuffer returns llama.cpp's compute buffer size for a reference
// model, from its recorded run (the external reference data, or the copy
// in testdata/reference); false when there is no recorded run.
func computeBuffer(t testing.TB, path string) (int64, bool) {
	base := modelBase(path)
	raw, err := os.ReadFile(filepath.Join(testref.Dir(), "llamacpp", base+".llamacpp.json"))
	if err != nil {
		return 0, false
	}
	var run struct {
		Context struct {
			ComputeBuffer int64 `json:"compute_buffer_bytes_cpu"`
		} `json:"context"`
	}
	if err := json.Unmarshal(raw, &run); err != nil {
		t.Fatal(err)
	}
	return run.Context.ComputeBuffer, run.Context.ComputeBuffer > 0
}

// TestGallocrReproducesLlamaCpp is the outside-number test: replaying
// ggml-alloc's rules over the llama.cpp-identical graph gives the compute
// buffer llama.cpp reported, to the byte, for every reference model.
func TestGallocrReproducesLlamaCpp(t *testing.T) {
	checked := 0
	for _, path := range testref.Models(t) {
		want, ok := computeBuffer(t, path)
		if !ok {
			continue
		}
		checked++
		t.Run(modelBase(path), func(t *testing.T) {
			g := llamaCppGraph(t, path)
			p := plan(t, g, planner.MemoryOptions{Strategy: planner.StrategyGallocr, Policy: planner.CPUPolicy(), ArenaIO: true, Align: 32})
			if p.ArenaBytes != want || p.Strategy != planner.StrategyGallocr {
				t.Errorf("gallocr arena %d (%s), llama.cpp %d", p.ArenaBytes, p.Strategy, want)
			}
			best := plan(t, g, planner.MemoryOptions{Policy: planner.CPUPolicy(), ArenaIO: true, Align: 32})
			if best.ArenaBytes != best.LowerBound || best.ArenaBytes >= want {
				t.Errorf("best arena %d, lower bound %d, llama.cpp %d", best.ArenaBytes, best.LowerBound, want)
			}
			t.Logf("llama.cpp %d, gallocr %d, best %d = LB (%.1f%% below llama.cpp)", want, p.ArenaBytes, best.ArenaBytes,
				100*(1-float64(best.ArenaBytes)/float64(want)))
		})
	}
	if checked == 0 {
		t.Skip("no model with a known compute buffer")
	}
}

// TestGraphPlanMatchesSimulation checks the liveness model against the
// figures of an independent scratch simulation of gallocr (ggml layout:
// inputs and outputs in the arena, 32-byte alignment, cpy KV writes, f16
// cache).
func TestGraphPlanMatchesSimulation(t *testing.T) {
	for _, c := range []struct {
		model                 string
		nTokens, nKV, nOut    int64
		inplace               bool
		gallocr, lb           int64
		buffers, naive, merge int // merge: in-place merges; 0 = unchecked
	}{
		{"stories260K.gguf", 256, 256, 256, true, 2624512, 2492416, 78, 16346112, 37},
		{"stories260K.gguf", 256, 256, 256, false, 4721664, 4524032, 115, 30034944, 0},
		{"stories260K.gguf", 1, 256, 1, true, 74848, 74304, 0, 0, 0},
		{"stories260K.gguf", 32, 256, 32, true, 360832, 344320, 0, 0, 0},
		{"stories260K.gguf", 5, 32, 1, true, 18528, 17728, 78, 125536, 0},
		{"synth-llama-F32.gguf", 256, 256, 256, true, 1575936, 1443840, 36, 4983808, 0},
		{"synth-llama-F32.gguf", 1, 256, 1, true, 70752, 70208, 0, 0, 0},
	} {
		_, m := testmodel.Build(t, testref.Testdata(c.model), models.Options{NCtx: 256, KVWrite: models.KVCpy})
		g := specialise(t, m, c.nTokens, c.nKV, c.nOut)
		opts := planner.MemoryOptions{ArenaIO: true, Align: 32}
		if c.inplace {
			opts.Policy = planner.CPUPolicy()
		}
		opts.Strategy = planner.StrategyGallocr
		ga := plan(t, g, opts)
		opts.Strategy = planner.StrategyGreedySize
		gs := plan(t, g, opts)
		if ga.ArenaBytes != c.gallocr || ga.LowerBound != c.lb || gs.ArenaBytes != c.lb {
			t.Errorf("%s T=%d kv=%d in-place %v: gallocr %d, LB %d, greedy-size %d; want %d, %d, %d",
				c.model, c.nTokens, c.nKV, c.inplace, ga.ArenaBytes, ga.LowerBound, gs.ArenaBytes, c.gallocr, c.lb, c.lb)
		}
		if c.buffers > 0 && (len(ga.Problem.Buffers) != c.buffers || ga.NaiveBytes != int64(c.naive)) {
			t.Errorf("%s T=%d: %d buffers, Σ %d; want %d, %d", c.model, c.nTokens, len(ga.Problem.Buffers), ga.NaiveBytes, c.buffers, c.naive)
		}
		if c.merge > 0 && ga.InPlace != c.merge {
			t.Errorf("%s: %d in-place merges, want %d", c.model, ga.InPlace, c.merge)
		}
	}
}

// TestBestReachesLowerBound: on every reference model, both KV write
// modes, worst case and decode, both targets' policies and both arena
// layouts, best finds an arena equal to the lower bound.
func TestBestReachesLowerBound(t *testing.T) {
	for _, path := range testref.Models(t) {
		for _, kv := range []models.KVWrite{models.KVSetRows, models.KVCpy} {
			_, m := testmodel.Build(t, path, models.Options{NCtx: 256, KVWrite: kv})
			for _, shape := range [][3]int64{{256, 256, 256}, {1, 256, 1}} {
				g := specialise(t, m, shape[0], shape[1], shape[2])
				for _, pol := range []planner.InPlacePolicy{planner.CPUPolicy(), planner.NPUPolicy()} {
					for _, io := range []bool{false, true} {
						p := plan(t, g, planner.MemoryOptions{Policy: pol, ArenaIO: io, Reorder: true, Align: 64})
						if p.ArenaBytes != p.LowerBound {
							t.Errorf("%s %s T=%d %s io=%v: arena %d > LB %d (%s)", modelBase(path), kv, shape[0], pol.Name, io, p.ArenaBytes, p.LowerBound, p.Strategy)
						}
						if p.ArenaBytes > p.Strategies[planner.StrategyGreedySize] || p.ArenaBytes > p.Strategies[planner.StrategyGallocr] {
							t.Errorf("%s: best %d worse than %v", modelBase(path), p.ArenaBytes, p.Strategies)
						}
					}
				}
			}
		}
	}
}

// runSteps runs a prefill of five tokens and one decode step through a
// session.Session over one persistent KV cache, and returns every row of
// logits. planOpts nil runs unplanned (every tensor its own buffer);
// otherwise each step's graph is planned and executed inside one arena, in
// the plan's order; mutate, if set, edits each plan first.
func runSteps(t *testing.T, f *gguf.File, m *models.Model, planOpts *planner.MemoryOptions, mutate func(*planner.MemoryPlan)) [][]float32 {
	t.Helper()
	opts := session.SessionOptions{AllLogits: true}
	if planOpts != nil {
		opts.Plan = func(g *ir.Graph) (eval.ExecOptions, error) {
			p, err := planner.PlanMemory(g, *planOpts)
			if err != nil {
				return eval.ExecOptions{}, err
			}
			if mutate != nil {
				mutate(p)
			}
			return eval.ExecOptions{Offsets: p.Offsets, ArenaSize: p.ArenaBytes, Order: p.OrderIDs()}, nil
		}
	}
	s, err := session.NewSession(m, f, opts)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]float32
	for _, tokens := range [][]int32{{1, 403, 407, 261, 378}, {432}} {
		r, err := s.Step(tokens)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r.Logits...)
	}
	return out
}

func sameBits(a, b [][]float32) (int, int, bool) {
	if len(a) != len(b) {
		return -1, -1, false
	}
	for r := range a {
		if len(a[r]) != len(b[r]) {
			return r, -1, false
		}
		for i := range a[r] {
			if !floatbits.Equal(a[r][i], b[r][i]) {
				return r, i, false
			}
		}
	}
	return 0, 0, true
}

// TestPlannedExecutionMatches is the proof that plans are safe: every
// reference model, run with each tensor at its planned offset inside one
// arena (in-place merges included, in the plan's order), gives exactly the
// logits of the unplanned run, for a prefill and a decode step over the
// same KV cache. The ggml layout (inputs in the arena, gallocr offsets) is
// llama.cpp's own placement.
func TestPlannedExecutionMatches(t *testing.T) {
	variants := []struct {
		name string
		opts planner.MemoryOptions
	}{
		{"cpu-best-reorder", planner.MemoryOptions{Policy: planner.CPUPolicy(), Reorder: true}},
		{"npu-best", planner.MemoryOptions{Policy: planner.NPUPolicy(), Align: 64}},
		{"ggml-gallocr", planner.MemoryOptions{Policy: planner.CPUPolicy(), ArenaIO: true, Strategy: planner.StrategyGallocr}},
		{"ggml-best", planner.MemoryOptions{Policy: planner.CPUPolicy(), ArenaIO: true}},
	}
	paths := testref.Models(t)
	if testing.Short() && len(paths) > 2 {
		paths = paths[:2]
	}
	for _, path := range paths {
		for _, kv := range []models.KVWrite{models.KVSetRows, models.KVCpy} {
			f, m := testmodel.Build(t, path, models.Options{NCtx: 64, KVWrite: kv})
			want := runSteps(t, f, m, nil, nil)
			for _, v := range variants {
				got := runSteps(t, f, m, &v.opts, nil)
				if r, i, ok := sameBits(want, got); !ok {
					t.Errorf("%s %s %s: logits differ at row %d, index %d", modelBase(path), kv, v.name, r, i)
				}
			}
		}
	}
}

// TestPlannedExecutionDetectsClobbers is the control for the test above:
// moving K of layer 0 onto Q of layer 0, which is still live then, must
// change the logits.
func TestPlannedExecutionDetectsClobbers(t *testing.T) {
	f, m := testmodel.Build(t, testref.Testdata("stories260K.gguf"), models.Options{NCtx: 64})
	want := runSteps(t, f, m, nil, nil)
	got := runSteps(t, f, m, &planner.MemoryOptions{Policy: planner.CPUPolicy()}, func(p *planner.MemoryPlan) {
		q := p.Offsets[p.Graph.Find("Qcur-0").ID]
		for _, n := range p.Graph.Nodes {
			if _, ok := p.Offsets[n.ID]; ok && n.Name == "Kcur-0" {
				p.Offsets[n.ID] = q
			}
		}
	})
	if _, _, ok := sameBits(want, got); ok {
		t.Error("a plan writing K over the live Q gave the unplanned logits")
	}
}
