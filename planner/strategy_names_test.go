package planner_test

import (
	"context"
	"strings"
	"testing"

	"github.com/irtool/irtool/planner"
)

// TestReportedStrategyPlansAgain: every name a plan can report as its
// Strategy (a seed strategy, exact, greedy-area, the search phases
// repair and orders, the gallocr replay) is a name PlanMemory takes back.
// Before, a worst-case plan won by the exact search reported "exact", and
// planning another layout by that name failed with unknown strategy.
func TestReportedStrategyPlansAgain(t *testing.T) {
	g := parse(t, viewIR)
	reported := append(planner.GraphStrategies(), planner.PhaseRepair, planner.PhaseOrders)
	for _, name := range reported {
		t.Run(name, func(t *testing.T) {
			p := plan(t, g, planner.MemoryOptions{Policy: planner.CPUPolicy(), Strategy: name})
			if p.Requested != name {
				t.Errorf("requested %q, want %q", p.Requested, name)
			}
			// What the plan reports plans again, to a plan no larger
			// than the reported strategy's own on the same problem.
			again := plan(t, g, planner.MemoryOptions{Policy: planner.CPUPolicy(), Strategy: p.Strategy})
			if again.ArenaBytes < again.LowerBound {
				t.Errorf("%s -> %s: arena %d below the bound %d", name, p.Strategy, again.ArenaBytes, again.LowerBound)
			}
		})
	}
	for _, name := range []string{"area", "exact-ish"} {
		if _, err := planner.PlanMemory(g, planner.MemoryOptions{Strategy: name}); err == nil || !strings.Contains(err.Error(), "unknown strategy") {
			t.Errorf("strategy %q: err = %v, want unknown strategy", name, err)
		}
	}
}

// TestStrategyOf: the search phases map to search, everything else to
// itself.
func TestStrategyOf(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{planner.PhaseRepair, planner.StrategySearch},
		{planner.PhaseOrders, planner.StrategySearch},
		{planner.StrategyExact, planner.StrategyExact},
		{planner.StrategyGreedyArea, planner.StrategyGreedyArea},
		{"my-strategy", "my-strategy"},
	} {
		if got := planner.StrategyOf(c.in); got != c.want {
			t.Errorf("StrategyOf(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	for _, name := range []string{planner.PhaseRepair, planner.PhaseOrders, planner.StrategyGreedyArea} {
		if err := planner.NewStrategySet().Register(name, firstFit); err == nil {
			t.Errorf("Register(%q): no error for a built-in name", name)
		}
	}
}

// TestPlanGraphRegisteredStrategy: a strategy registered in a set of its
// own plans a graph through MemoryOptions.Strategies, and only there.
func TestPlanGraphRegisteredStrategy(t *testing.T) {
	g := parse(t, viewIR)
	set := planner.NewStrategySet()
	if err := set.Register("first-fit-graph", firstFit); err != nil {
		t.Fatal(err)
	}
	p := plan(t, g, planner.MemoryOptions{Policy: planner.CPUPolicy(), Strategy: "first-fit-graph", Strategies: set})
	if p.Strategy != "first-fit-graph" || p.Strategies["first-fit-graph"] != p.ArenaBytes {
		t.Errorf("strategy %q, strategies %v, arena %d", p.Strategy, p.Strategies, p.ArenaBytes)
	}
	if !set.HasGraph("first-fit-graph") || !strings.Contains(strings.Join(set.GraphNames(), ","), "gallocr,search,best,first-fit-graph") {
		t.Errorf("GraphNames = %v", set.GraphNames())
	}
	if _, err := planner.PlanMemory(g, planner.MemoryOptions{Strategy: "first-fit-graph"}); err == nil {
		t.Error("the default set planned with a strategy registered elsewhere")
	}
	// A strategy that fails is an error naming it, not a bad plan.
	bad := planner.NewStrategySet()
	if err := bad.Register("overlap", func(_ context.Context, p *planner.Problem, _ planner.Options) (*planner.Assignment, error) {
		return &planner.Assignment{Offsets: make([]int64, len(p.Buffers))}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := planner.PlanMemory(g, planner.MemoryOptions{Strategy: "overlap", Strategies: bad}); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Errorf("overlapping strategy: err = %v", err)
	}
}
