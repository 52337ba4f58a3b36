// Package fusedtest checks the memory planner on graphs rewritten by the
// default pass pipeline (package passes: RoPE cache, folding, CSE, the
// fusions). It is a package of its own so that planner's tests do not
// depend on the pass pipeline.
package fusedtest

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/runtime/session"
)

// fused builds a reference model and runs the default pipeline on its
// symbolic graph.
func fused(t testing.TB, path string, opts models.Options) (*gguf.File, *models.Model, *ir.Graph) {
	t.Helper()
	f, m := testmodel.Build(t, path, opts)
	g, _, err := passes.Run(m.Graph, passes.Default(), passes.Options{})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	fusedOps := 0
	for _, n := range g.Nodes {
		if info, ok := ir.Lookup(n.Op); ok && info.Fused {
			fusedOps++
		}
	}
	if fusedOps == 0 {
		t.Fatalf("%s: the default pipeline fused nothing", path)
	}
	return f, m, g
}

func name(path string) string { return strings.TrimSuffix(filepath.Base(path), ".gguf") }

// TestBestReachesLowerBoundFused: after the default pipeline, best still
// reaches the lower bound on every reference model, worst case and
// decode, for both targets' policies.
func TestBestReachesLowerBoundFused(t *testing.T) {
	for _, path := range testref.Models(t) {
		_, _, g := fused(t, path, models.Options{NCtx: 256})
		for _, nTokens := range []int64{256, 1} {
			sg, err := g.Specialize(ir.Bindings{models.SymTokens: nTokens, models.SymKV: 256, models.SymOutputs: nTokens})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				pol   planner.InPlacePolicy
				align int64
			}{{planner.CPUPolicy(), 32}, {planner.NPUPolicy(), 64}} {
				p, err := planner.PlanMemory(sg, planner.MemoryOptions{Policy: c.pol, Align: c.align, Reorder: true})
				if err != nil {
					t.Fatal(err)
				}
				if p.ArenaBytes != p.LowerBound {
					t.Errorf("%s T=%d %s: arena %d, lower bound %d (%v)", name(path), nTokens, c.pol.Name, p.ArenaBytes, p.LowerBound, p.Strategies)
				}
			}
		}
	}
}

// run executes a prefill of five tokens and a decode step of the fused
// graph over one KV cache, planned (one arena, the plan's order) or not.
func run(t *testing.T, f *gguf.File, m *models.Model, g *ir.Graph, opts *planner.MemoryOptions) [][]float32 {
	t.Helper()
	fused := *m
	fused.Graph = g
	so := session.SessionOptions{AllLogits: true}
	if opts != nil {
		so.Plan = func(sg *ir.Graph) (eval.ExecOptions, error) {
			p, err := planner.PlanMemory(sg, *opts)
			if err != nil {
				return eval.ExecOptions{}, err
			}
			return eval.ExecOptions{Offsets: p.Offsets, ArenaSize: p.ArenaBytes, Order: p.OrderIDs()}, nil
		}
	}
	s, err := session.NewSession(&fused, f, so)
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

// TestPlannedExecutionMatchesFused: the fused graphs, too, give exactly
// their unplanned logits when every tensor lives at its planned offset.
func TestPlannedExecutionMatchesFused(t *testing.T) {
	paths := testref.Models(t)
	if testing.Short() && len(paths) > 2 {
		paths = paths[:2]
	}
	for _, path := range paths {
		for _, kv := range []models.KVWrite{models.KVSetRows, models.KVCpy} {
			f, m, g := fused(t, path, models.Options{NCtx: 64, KVWrite: kv})
			want := run(t, f, m, g, nil)
			for _, opts := range []planner.MemoryOptions{
				{Policy: planner.CPUPolicy(), Reorder: true},
				{Policy: planner.NPUPolicy(), Align: 64, Reorder: true},
				{Policy: planner.CPUPolicy(), ArenaIO: true, Strategy: planner.StrategyGallocr},
			} {
				got := run(t, f, m, g, &opts)
				for r := range want {
					for i := range want[r] {
						if math.Float32bits(want[r][i]) != math.Float32bits(got[r][i]) {
							t.Fatalf("%s %s policy %s io %v: logits differ at row %d, index %d", name(path), kv, opts.Policy.Name, opts.ArenaIO, r, i)
						}
					}
				}
			}
		}
	}
}

// BenchmarkPlanFused reports the planner's figures on the fused graphs
// (default pipeline, set_rows KV writes, n_ctx = n_ubatch = 256):
//
//	go test ./planner/fusedtest -run '^$' -bench . -benchtime 1x
func BenchmarkPlanFused(b *testing.B) {
	for _, path := range testref.Models(b) {
		_, _, g := fused(b, path, models.Options{NCtx: 256})
		for _, c := range []struct {
			name    string
			nTokens int64
			opts    planner.MemoryOptions
		}{
			{"worst-cpu", 256, planner.MemoryOptions{Policy: planner.CPUPolicy(), Align: 32, Reorder: true}},
			{"decode-cpu", 1, planner.MemoryOptions{Policy: planner.CPUPolicy(), Align: 32, Reorder: true}},
			{"worst-npu", 256, planner.MemoryOptions{Policy: planner.NPUPolicy(), Align: 64, Reorder: true}},
			{"decode-npu", 1, planner.MemoryOptions{Policy: planner.NPUPolicy(), Align: 64, Reorder: true}},
		} {
			b.Run(name(path)+"/"+c.name, func(b *testing.B) {
				sg, err := g.Specialize(ir.Bindings{models.SymTokens: c.nTokens, models.SymKV: 256, models.SymOutputs: c.nTokens})
				if err != nil {
					b.Fatal(err)
				}
				var p *planner.MemoryPlan
				for b.Loop() {
					if p, err = planner.PlanMemory(sg, c.opts); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(p.Strategies[planner.StrategyGallocr]), "gallocr_B")
				b.ReportMetric(float64(p.ArenaBytes), "best_B")
				b.ReportMetric(float64(p.LowerBound), "LB_B")
			})
		}
	}
}
