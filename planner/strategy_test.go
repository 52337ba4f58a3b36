package planner

import (
	"context"
	"flag"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

var long = flag.Bool("planner.long", false, "run the full-budget benchmark measurements (MiniMalloc A-G at 10 s each)")

func solve(t testing.TB, p *Problem, strategy string, opts Options) (*Assignment, *Report) {
	t.Helper()
	a, rep, err := Solve(context.Background(), p, strategy, opts)
	if err != nil {
		t.Fatalf("%s: %v", strategy, err)
	}
	if err := Validate(p, a); err != nil {
		t.Fatalf("%s: %v", strategy, err)
	}
	return a, rep
}

// TestPisarchykLee checks the worked example of Pisarchyk & Lee (arXiv
// 2001.03288) : the bound is 124
// bytes at op 5, greedy-by-size reaches it, online best fit needs 160.
func TestPisarchykLee(t *testing.T) {
	p := pisarchykLee()
	tests := []struct {
		strategy string
		want     int64
	}{
		{StrategyGreedySize, 124},
		{StrategyOnlineBestFit, 160},
		{StrategyNaive, 234},
		{StrategySearch, 124},
		{StrategyBest, 124},
	}
	for _, tt := range tests {
		_, rep := solve(t, p, tt.strategy, Options{})
		if rep.LowerBound != 124 {
			t.Errorf("lower bound %d, want 124", rep.LowerBound)
		}
		if rep.Arena != tt.want {
			t.Errorf("%s: arena %d, want %d", tt.strategy, rep.Arena, tt.want)
		}
	}
}

// published holds the ratios arena/LB of docs/PLANNER.md's reference columns and
// §2.3 (greedy-by-size, longest-first, greedy-by-breadth, online best fit),
// rounded as printed there; 0 = not published.
var published = []struct {
	file                        string
	size, life, breadth, online float64
	digits                      int
}{
	{"idealloc/resnet50.csv", 1.0069, 1.0045, 0, 1.0030, 4},
	{"idealloc/G_1.csv", 1.0000, 1.0190, 0, 1.0032, 4},
	{"idealloc/pangu_2.6B.csv", 1.0076, 1.0612, 0, 1.1942, 4},
	{"minimalloc/A.1048576.csv", 1.311, 1.456, 1.537, 1.752, 3},
	{"minimalloc/B.1048576.csv", 1.347, 1.503, 1.604, 1.693, 3},
	{"minimalloc/C.1048576.csv", 1.364, 1.473, 1.686, 1.754, 3},
	{"minimalloc/D.1048576.csv", 1.334, 1.484, 1.533, 1.489, 3},
	{"minimalloc/E.1048576.csv", 1.401, 1.600, 1.678, 1.856, 3},
	{"minimalloc/F.1048576.csv", 1.375, 1.408, 1.370, 1.222, 3},
	{"minimalloc/G.1048576.csv", 1.332, 1.402, 1.231, 1.219, 3},
}

// TestGreedyMatchesPublished reproduces the published greedy scores on the
// benchmark instances to the printed precision.
func TestGreedyMatchesPublished(t *testing.T) {
	for _, tt := range published {
		p := readBench(t, tt.file)
		for _, c := range []struct {
			strategy string
			want     float64
		}{
			{StrategyGreedySize, tt.size}, {StrategyGreedyLifetime, tt.life},
			{StrategyGreedyBreadth, tt.breadth}, {StrategyOnlineBestFit, tt.online},
		} {
			if c.want == 0 {
				continue
			}
			_, rep := solve(t, p, c.strategy, Options{})
			// Within one unit of the last printed digit (E's online best
			// fit is 1.85547 here, printed as 1.856).
			if math.Abs(rep.Ratio-c.want) > 1.01*math.Pow(10, -float64(tt.digits)) {
				t.Errorf("%s %s: ratio %.*f, published %.*f", tt.file, c.strategy, tt.digits+2, rep.Ratio, tt.digits, c.want)
			}
		}
	}
}

// TestBestRealTraces checks that best plans the real traces within 0.1% of
// the lower bound (greedy-by-size alone is 0.69% above it on resnet50).
func TestBestRealTraces(t *testing.T) {
	for _, file := range []string{"idealloc/resnet50.csv", "idealloc/G_1.csv"} {
		p := readBench(t, file)
		_, rep := solve(t, p, StrategyBest, Options{Budget: 20 * time.Second})
		t.Logf("%s: best %d = %.5f x LB (%s, %.0f ms)", file, rep.Arena, rep.Ratio, rep.Winner, rep.MS)
		if rep.Ratio > 1.001 {
			t.Errorf("%s: best ratio %.5f > 1.001", file, rep.Ratio)
		}
		if rep.Arena > rep.Strategies[StrategyGreedySize] {
			t.Errorf("%s: best %d worse than greedy-size %d", file, rep.Arena, rep.Strategies[StrategyGreedySize])
		}
	}
}

// TestSearchReachesBoundOnC: MiniMalloc's instance C is packed at its lower
// bound (MiniMalloc reports 1.000 in min-capacity mode); the exact search finds
// it within a fixed node budget, so the test does not depend on speed.
func TestSearchReachesBoundOnC(t *testing.T) {
	p := readBench(t, "minimalloc/C.1048576.csv")
	_, rep := solve(t, p, StrategySearch, Options{Budget: time.Minute, MaxNodes: 2_000_000})
	if rep.Arena != rep.LowerBound {
		t.Errorf("search on C: arena %d, lower bound %d", rep.Arena, rep.LowerBound)
	}
}

// TestMiniMallocLong measures best on MiniMalloc's challenging instances
// A-G with a 10 s budget each (run with -planner.long; about 30-70 s).
func TestMiniMallocLong(t *testing.T) {
	if !*long {
		t.Skip("full-budget measurement; run with -planner.long")
	}
	files := []string{"A", "B", "C", "D", "E", "F", "G"}
	for _, name := range files {
		p := readBench(t, "minimalloc/"+name+".1048576.csv")
		_, rep := solve(t, p, StrategyBest, Options{Budget: 10 * time.Second})
		gs := Ratio(rep.Strategies[StrategyGreedySize], rep.LowerBound)
		t.Logf("%s: n=%d LB=%d best=%d ratio=%.4f proven=%v (%s) best after %.2f s of %.2f s; greedy-size %.3f",
			name, rep.Buffers, rep.LowerBound, rep.Arena, rep.Ratio, rep.Optimal, rep.Winner, rep.BestMS/1000, rep.MS/1000, gs)
		if gs < 1.31 || gs > 1.41 {
			t.Errorf("%s: greedy-size ratio %.3f outside the published 1.31-1.41", name, gs)
		}
		switch {
		case name == "D":
			// LB neither reached nor refuted as far as anyone knows
			// (MiniMalloc's 1 MiB packing is 1.063); with one core
			// descending from the incumbent, a 10 s run ends at
			// 1.04-1.06 depending on load.
			if rep.Ratio > 1.15 || rep.Optimal || rep.Bound < rep.LowerBound {
				t.Errorf("D: ratio %.4f, proven %v, bound %d", rep.Ratio, rep.Optimal, rep.Bound)
			}
		case !rep.Optimal || rep.Arena != rep.LowerBound:
			t.Errorf("%s: ratio %.4f, proven %v; want 1.000 proven (MiniMalloc proves it)", name, rep.Ratio, rep.Optimal)
		}
	}
}

// TestIdeallocLong runs best on the idealloc traces with the 10 s budget:
// each within 1.005 of the lower bound (run with -planner.long).
func TestIdeallocLong(t *testing.T) {
	if !*long {
		t.Skip("full-budget measurement; run with -planner.long")
	}
	for _, f := range realTraces {
		p := readBench(t, f)
		_, rep := solve(t, p, StrategyBest, Options{Budget: 10 * time.Second})
		t.Logf("%s: ratio %.5f proven %v (%s) after %.2f s", f, rep.Ratio, rep.Optimal, rep.Winner, rep.BestMS/1000)
		if rep.Ratio > 1.005 {
			t.Errorf("%s: ratio %.5f > 1.005", f, rep.Ratio)
		}
	}
}

// TestPanguReachesBound: greedy-by-size and greedy-by-breadth end 0.76%
// above the lower bound on pangu_2.6B (18,692 buffers); the order search
// moves the two buffers greedy-breadth stacks above the bound and proves
// the plan optimal. MaxNodes makes it independent of machine speed.
func TestPanguReachesBound(t *testing.T) {
	p := readBench(t, "idealloc/pangu_2.6B.csv")
	_, rep := solve(t, p, StrategyBest, Options{Budget: 5 * time.Minute, MaxNodes: 50})
	t.Logf("pangu_2.6B: ratio %.5f proven %v by %s after %.2f s", rep.Ratio, rep.Optimal, rep.Winner, rep.BestMS/1000)
	if rep.Arena != rep.LowerBound || !rep.Optimal || rep.Winner != "orders" {
		t.Errorf("pangu_2.6B: arena %d (LB %d), proven %v, winner %s", rep.Arena, rep.LowerBound, rep.Optimal, rep.Winner)
	}
	if rep.Strategies[StrategyGreedySize] <= rep.LowerBound {
		t.Errorf("greedy-size %d already at the bound: the test no longer tests the search", rep.Strategies[StrategyGreedySize])
	}
}

// bruteOptimum returns the optimal arena of a tiny problem: every packing
// can be pushed down until each buffer rests at 0 or on top of a buffer it
// overlaps in time; listed by (offset, index), each buffer then rests on an
// earlier one, so trying all such sequences finds an optimum.
func bruteOptimum(p *Problem) int64 {
	tl := newTimeline(p)
	var live []int
	for i := 0; i < tl.n; i++ {
		if tl.live[i] {
			live = append(live, i)
		}
	}
	off := make([]int64, tl.n)
	placed := make([]bool, tl.n)
	best := solveOrder(tl, orderBySize(tl), nil).Arena + 1 // prune with greedy
	overlap := func(a, b int) bool { return tl.s[a] < tl.e[b] && tl.s[b] < tl.e[a] }
	var rec func(k int, arena, lastOff int64, lastB int)
	rec = func(k int, arena, lastOff int64, lastB int) {
		if arena >= best {
			return
		}
		if k == len(live) {
			best = arena
			return
		}
		for _, b := range live {
			if placed[b] {
				continue
			}
			cands := []int64{0}
			for _, x := range live {
				if placed[x] && overlap(b, x) {
					cands = append(cands, off[x]+tl.size[x])
				}
			}
			for _, o := range cands {
				if o < lastOff || (o == lastOff && b < lastB) {
					continue
				}
				ok := true
				for _, x := range live {
					if placed[x] && overlap(b, x) && o < off[x]+tl.size[x] && off[x] < o+tl.size[b] {
						ok = false
						break
					}
				}
				if !ok {
					continue
				}
				placed[b], off[b] = true, o
				rec(k+1, max(arena, o+tl.size[b]), o, b)
				placed[b] = false
			}
		}
	}
	rec(0, 0, 0, -1)
	return best
}

// tightProblem returns a random instance whose load is exactly L at every
// step (buffers end at random and new ones top the load up), the kind where
// fragmentation can push the optimum above the lower bound.
func tightProblem(rng interface {
	IntN(int) int
	Int64N(int64) int64
}) *Problem {
	p := &Problem{}
	L := int64(3 + rng.IntN(3))
	steps := 3 + rng.IntN(4)
	var live []int
	for st := 0; st < steps; st++ {
		var keep []int
		var load int64
		for _, i := range live {
			if rng.IntN(2) == 0 {
				p.Buffers[i].End = st
			} else {
				keep = append(keep, i)
				load += p.Buffers[i].Size
			}
		}
		live = keep
		for load < L {
			sz := 1 + rng.Int64N(min(3, L-load))
			live = append(live, len(p.Buffers))
			p.Buffers = append(p.Buffers, Buffer{ID: len(p.Buffers), Start: st, End: steps, Size: sz})
			load += sz
		}
	}
	return p
}

// TestSearchIsExactOnTinyProblems: with enough nodes the search's capacity
// ladder ends at the optimum, which a brute force confirms, also on
// instances whose optimum exceeds the lower bound.
func TestSearchIsExactOnTinyProblems(t *testing.T) {
	// Instances found by the generator below where OPT = LB + 1.
	gap := []struct {
		buffers []Buffer
		lb, opt int64
	}{
		{[]Buffer{{0, 0, 3, 1}, {1, 0, 1, 2}, {2, 0, 1, 2}, {3, 1, 2, 3}, {4, 1, 4, 1}, {5, 2, 3, 1}, {6, 2, 5, 2}, {7, 3, 4, 2}, {8, 4, 5, 3}}, 5, 6},
		{[]Buffer{{0, 0, 1, 3}, {1, 0, 2, 2}, {2, 1, 3, 1}, {3, 1, 4, 2}, {4, 2, 4, 1}, {5, 2, 3, 1}, {6, 3, 5, 2}, {7, 4, 5, 3}}, 5, 6},
		{[]Buffer{{0, 0, 2, 2}, {1, 0, 3, 2}, {2, 2, 5, 1}, {3, 2, 4, 1}, {4, 3, 5, 1}, {5, 3, 4, 1}, {6, 4, 6, 2}, {7, 5, 6, 2}}, 4, 5},
	}
	opts := Options{Budget: time.Minute, MaxNodes: 1 << 40}
	for k, g := range gap {
		p := &Problem{Buffers: g.buffers}
		if lb, opt := LowerBound(p), bruteOptimum(p); lb != g.lb || opt != g.opt {
			t.Fatalf("gap instance %d: LB %d, brute force %d; want %d, %d", k, lb, opt, g.lb, g.opt)
		}
		if _, rep := solve(t, p, StrategySearch, opts); rep.Arena != g.opt {
			t.Errorf("gap instance %d: search arena %d, optimum %d", k, rep.Arena, g.opt)
		}
		// The exact strategy proves it: the refuted capacity LB raises the
		// bound to the optimum.
		if _, rep := solve(t, p, StrategyExact, opts); rep.Arena != g.opt || !rep.Optimal || rep.Bound != g.opt || rep.Gap != 0 {
			t.Errorf("gap instance %d: exact arena %d, bound %d, optimal %v; want %d proven", k, rep.Arena, rep.Bound, rep.Optimal, g.opt)
		}
	}
	rng := newRand(11)
	for iter := 0; iter < 300; iter++ {
		p := tightProblem(rng)
		if len(p.Buffers) > 9 {
			continue
		}
		want := bruteOptimum(p)
		if _, rep := solve(t, p, StrategySearch, opts); rep.Arena != want {
			t.Fatalf("iteration %d: search arena %d, optimum %d\n%+v", iter, rep.Arena, want, p)
		}
		if _, rep := solve(t, p, StrategyExact, opts); rep.Arena != want || !rep.Optimal {
			t.Fatalf("iteration %d: exact arena %d (proven %v), optimum %d\n%+v", iter, rep.Arena, rep.Optimal, want, p)
		}
	}
}

// TestStrategiesProperty runs every strategy on random instances: each
// assignment is valid, none beats the lower bound, and best is never worse
// than greedy-size or any other strategy.
func TestStrategiesProperty(t *testing.T) {
	rng := newRand(3)
	for iter := 0; iter < 150; iter++ {
		n := 1 + rng.IntN(60)
		p := randomProblem(rng, n, 1+rng.IntN(40), int64(1+rng.IntN(5000)))
		lb := LowerBound(p)
		opts := Options{Budget: time.Minute, MaxNodes: 20000, Seed: int64(iter)}
		arenas := map[string]int64{}
		for _, s := range Strategies() {
			a, rep := solve(t, p, s, opts)
			if a.Arena < lb {
				t.Fatalf("iteration %d: %s arena %d below the lower bound %d", iter, s, a.Arena, lb)
			}
			if a.Arena != ArenaOf(p, a.Offsets) {
				t.Fatalf("iteration %d: %s reports arena %d, offsets need %d", iter, s, a.Arena, ArenaOf(p, a.Offsets))
			}
			if rep.Ratio != Ratio(a.Arena, lb) || rep.LowerBound != lb || rep.Buffers != n {
				t.Fatalf("iteration %d: %s: inconsistent report %+v", iter, s, rep)
			}
			arenas[s] = a.Arena
		}
		if arenas[StrategyNaive] != NaiveSize(p) {
			t.Fatalf("iteration %d: naive %d, NaiveSize %d", iter, arenas[StrategyNaive], NaiveSize(p))
		}
		for s, v := range arenas {
			if arenas[StrategyBest] > v {
				t.Fatalf("iteration %d: best %d worse than %s %d", iter, arenas[StrategyBest], s, v)
			}
		}
		if arenas[StrategySearch] > arenas[StrategyGreedySize] {
			t.Fatalf("iteration %d: search %d worse than greedy-size %d", iter, arenas[StrategySearch], arenas[StrategyGreedySize])
		}
	}
}

// TestPerturbImproves exercises the order search on its own: on MiniMalloc's
// instance A it must improve on the best greedy order within a fixed number
// of iterations.
func TestPerturbImproves(t *testing.T) {
	p := readBench(t, "minimalloc/A.1048576.csv")
	tl := newTimeline(p)
	inc := newIncumbent()
	inc.raise(tl.lb)
	s := &searcher{ctx: context.Background(), tl: tl, deadline: time.Now().Add(time.Hour), opts: Options{MaxNodes: 3000, Seed: 1}, inc: inc}
	s.seed(nil)
	before := inc.best.Arena
	s.perturb()
	t.Logf("A: greedy %d (%.3f), order search %d (%.3f)", before, Ratio(before, tl.lb), inc.best.Arena, Ratio(inc.best.Arena, tl.lb))
	if inc.best.Arena >= before {
		t.Errorf("order search did not improve on %d", before)
	}
	if err := Validate(p, inc.best); err != nil {
		t.Fatal(err)
	}
}

func TestSolveErrors(t *testing.T) {
	ok := pisarchykLee()
	tests := []struct {
		name     string
		p        *Problem
		strategy string
		want     string
	}{
		{"unknown strategy", ok, "tetris", `unknown strategy "tetris"`},
		{"bad problem", &Problem{Buffers: []Buffer{{1, 3, 2, 5}}}, StrategyBest, "start 3 after end 2"},
		{"nil problem", nil, StrategyNaive, "nil problem"},
	}
	for _, tt := range tests {
		_, _, err := Solve(context.Background(), tt.p, tt.strategy, Options{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestSolveCancelled: a cancelled context stops every strategy at once;
// best still returns a valid plan (naive, which is O(n), at worst) and
// a best-fit strategy asked for by name reports that it did not finish.
func TestSolveCancelled(t *testing.T) {
	p := readBench(t, "minimalloc/D.1048576.csv")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	t0 := time.Now()
	a, rep, err := Solve(ctx, p, StrategyBest, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if el := time.Since(t0); el > 5*time.Second {
		t.Errorf("cancelled solve took %v", el)
	}
	if a.Arena > rep.Naive || len(rep.Unfinished) == 0 {
		t.Errorf("best on a cancelled context: arena %d (naive %d), unfinished %v", a.Arena, rep.Naive, rep.Unfinished)
	}
	if _, _, err := Solve(ctx, p, StrategyGreedySize, Options{}); err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Errorf("greedy-size on a cancelled context: %v", err)
	}
}

// TestDegenerateProblems: empty problems, zero sizes and empty lifetimes
// plan to an arena equal to the lower bound with every strategy, also when
// the context is already cancelled.
func TestDegenerateProblems(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	problems := []*Problem{
		{},
		{Buffers: []Buffer{{0, 0, 0, 10}, {1, 3, 7, 0}}},
		{Alignment: 64, Buffers: []Buffer{{0, 0, 1, 1}}},
		{Buffers: []Buffer{{0, -5, 5, 3}, {1, -5, 5, 4}}},
	}
	for k, p := range problems {
		for _, ctx := range []context.Context{context.Background(), cancelled} {
			for _, s := range Strategies() {
				a, rep, err := Solve(ctx, p, s, Options{})
				if err != nil {
					t.Fatalf("problem %d, %s: %v", k, s, err)
				}
				if s != StrategyNaive && a.Arena != rep.LowerBound {
					t.Errorf("problem %d, %s: arena %d, lower bound %d", k, s, a.Arena, rep.LowerBound)
				}
			}
		}
	}
}

func TestStrategies(t *testing.T) {
	got := fmt.Sprint(Strategies())
	want := "[naive greedy-size greedy-lifetime greedy-breadth greedy-area online-bestfit exact search best]"
	if got != want {
		t.Errorf("Strategies() = %s, want %s", got, want)
	}
}

// TestLubyAndGrain checks the restart schedule of descend (the Luby
// sequence, Luby, Sinclair & Zuckerman 1993) and the grain that rounds
// capacities: the gcd of the live aligned sizes.
func TestLubyAndGrain(t *testing.T) {
	want := []int64{1, 1, 2, 1, 1, 2, 4, 1, 1, 2, 1, 1, 2, 4, 8, 1}
	for i, w := range want {
		if got := luby(i + 1); got != w {
			t.Errorf("luby(%d) = %d, want %d", i+1, got, w)
		}
	}
	tests := []struct {
		name  string
		p     *Problem
		grain int64
	}{
		{"sizes 6 and 4", &Problem{Buffers: []Buffer{{ID: 0, Start: 0, End: 2, Size: 6}, {ID: 1, Start: 1, End: 3, Size: 4}}}, 2},
		{"dead buffer ignored", &Problem{Buffers: []Buffer{{ID: 0, Start: 0, End: 2, Size: 6}, {ID: 1, Start: 1, End: 1, Size: 3}}}, 6},
		{"alignment", &Problem{Alignment: 64, Buffers: []Buffer{{ID: 0, Start: 0, End: 2, Size: 6}, {ID: 1, Start: 1, End: 3, Size: 100}}}, 64},
		{"empty", &Problem{}, 1},
	}
	for _, tt := range tests {
		if got := newTimeline(tt.p).grain(); got != tt.grain {
			t.Errorf("%s: grain %d, want %d", tt.name, got, tt.grain)
		}
	}
	if got := roundUp(1025, 1024); got != 2048 {
		t.Errorf("roundUp(1025, 1024) = %d", got)
	}
}
