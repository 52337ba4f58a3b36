package planner_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/planner"
)

// TestCompareBench: the harness reproduces docs/PLANNER.md's greedy table
// on the public instances in testdata/bench (published greedy-by-size and
// online best-fit ratios, to the table's digits), a registered strategy
// gets its row, and every row is scored against the lower bound.
func TestCompareBench(t *testing.T) {
	set := planner.NewStrategySet()
	stack := func(_ context.Context, p *planner.Problem, _ planner.Options) (*planner.Assignment, error) {
		a := &planner.Assignment{}
		for i := range p.Buffers {
			a.Offsets = append(a.Offsets, a.Arena)
			a.Arena += p.AlignedSize(i)
		}
		return a, nil
	}
	if err := set.Register("stack", stack); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		file                  string
		lb                    int64
		greedySize, onlineFit float64 // docs/PLANNER.md
		digits                int
	}{
		{"minimalloc/A.1048576.csv", 1048576, 1.311, 1.752, 3},
		{"minimalloc/F.1048576.csv", 1048576, 1.375, 1.222, 3},
		{"idealloc/resnet50.csv", 1515472556, 1.0069, 1.0030, 4},
	} {
		p, err := planner.ReadCSVFile(filepath.Join("testdata", "bench", c.file))
		if err != nil {
			t.Fatal(err)
		}
		cmp, err := set.Compare(context.Background(), c.file, p, planner.CompareOptions{
			Strategies: []string{"naive", "greedy-size", "online-bestfit", "stack"}})
		if err != nil {
			t.Fatal(err)
		}
		if cmp.LowerBound != c.lb || len(cmp.Rows) != 4 {
			t.Fatalf("%s: lower bound %d, %d rows", c.file, cmp.LowerBound, len(cmp.Rows))
		}
		round := func(x float64) float64 { s := math.Pow(10, float64(c.digits)); return math.Round(x*s) / s }
		got := map[string]planner.CompareRow{}
		for _, r := range cmp.Rows {
			if r.Err != "" {
				t.Fatalf("%s: %s: %s", c.file, r.Strategy, r.Err)
			}
			if r.Ratio != planner.Ratio(r.Arena, cmp.LowerBound) {
				t.Errorf("%s: %s: ratio %v for arena %d", c.file, r.Strategy, r.Ratio, r.Arena)
			}
			got[r.Strategy] = r
		}
		if round(got["greedy-size"].Ratio) != c.greedySize || round(got["online-bestfit"].Ratio) != c.onlineFit {
			t.Errorf("%s: greedy-size %.5f, online-bestfit %.5f; docs/PLANNER.md: %v, %v", c.file,
				got["greedy-size"].Ratio, got["online-bestfit"].Ratio, c.greedySize, c.onlineFit)
		}
		if got["stack"].Arena != got["naive"].Arena {
			t.Errorf("%s: stack %d, naive %d", c.file, got["stack"].Arena, got["naive"].Arena)
		}
	}
	p := &planner.Problem{Buffers: []planner.Buffer{{ID: 0, Start: 0, End: 1, Size: 8}}}
	if _, err := set.Compare(context.Background(), "x", p, planner.CompareOptions{Strategies: []string{"nope"}}); err == nil {
		t.Error("an unknown strategy was accepted")
	}
}

// TestBestRunsRegistered: best runs the registered strategies too, and
// one that finds a smaller arena than the built-in ones (crippled here by
// a tiny work cap) wins; one that fails is reported unfinished.
func TestBestRunsRegistered(t *testing.T) {
	p, err := planner.ReadCSVFile(filepath.Join("testdata", "bench", "minimalloc", "A.1048576.csv"))
	if err != nil {
		t.Fatal(err)
	}
	crippled := planner.Options{MaxNodes: 1, Deterministic: true}
	_, base, err := planner.NewStrategySet().Solve(context.Background(), p, "best", crippled)
	if err != nil {
		t.Fatal(err)
	}
	if base.Optimal {
		t.Skipf("best with a work cap of 1 still reached the bound (%d)", base.Arena)
	}
	set := planner.NewStrategySet()
	// The oracle runs the exact search with its full work budget.
	oracle := func(ctx context.Context, p *planner.Problem, _ planner.Options) (*planner.Assignment, error) {
		a, _, err := planner.Solve(ctx, p, "exact", planner.Options{Deterministic: true})
		return a, err
	}
	broken := func(context.Context, *planner.Problem, planner.Options) (*planner.Assignment, error) {
		return nil, fmt.Errorf("no plan")
	}
	if err := set.Register("oracle", oracle); err != nil {
		t.Fatal(err)
	}
	if err := set.Register("broken", broken); err != nil {
		t.Fatal(err)
	}
	a, rep, err := set.Solve(context.Background(), p, "best", crippled)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Strategies["oracle"] == 0 || len(rep.Unfinished) != 1 || rep.Unfinished[0] != "broken" {
		t.Fatalf("strategies %v, unfinished %v", rep.Strategies, rep.Unfinished)
	}
	if rep.Strategies["oracle"] >= base.Arena || rep.Winner != "oracle" || a.Arena != rep.Strategies["oracle"] || rep.Arena != a.Arena {
		t.Errorf("oracle %d < built-in %d, but winner %s arena %d", rep.Strategies["oracle"], base.Arena, rep.Winner, rep.Arena)
	}
	t.Logf("built-in best (work cap 1): %d; oracle %d; winner %s", base.Arena, rep.Strategies["oracle"], rep.Winner)
}

// TestComparisonWriteText prints a comparison's table: a header, one row
// per strategy with its note, and the error of a strategy that failed.
func TestComparisonWriteText(t *testing.T) {
	c := &planner.Comparison{Instance: "x.csv", Buffers: 3, LowerBound: 64, Rows: []planner.CompareRow{
		{Strategy: "exact", Arena: 64, Ratio: 1, MS: 1.25, Optimal: true},
		{Strategy: "naive", Arena: 128, Ratio: 2, MS: 0.04},
		{Strategy: "slow", Err: "budget 1ms exceeded", MS: 1},
	}}
	var buf strings.Builder
	if err := c.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	want := "x.csv: 3 buffers, lower bound 64 B\n" +
		"  strategy  arena (B)  x LB    ms\n" +
		"  exact     64         1.0000  1.2  optimal\n" +
		"  naive     128        2.0000  0.0\n" +
		"  slow      -          -       1.0  budget 1ms exceeded\n\n"
	if buf.String() != want {
		t.Errorf("got\n%q\nwant\n%q", buf.String(), want)
	}
}
