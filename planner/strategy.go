package planner

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultBudget is the search time budget used when Options.Budget is 0.
const DefaultBudget = 10 * time.Second

// Options tune Solve.
type Options struct {
	// Budget bounds the wall time of "search" and "best" (0 means
	// DefaultBudget). The greedy strategies always run to completion; search
	// stops early when it reaches the lower bound. The context can cancel
	// sooner.
	Budget time.Duration
	// Seed seeds the randomised parts of "search" (the same seed and the same
	// amount of work give the same result).
	Seed int64
	// MaxNodes, if positive, caps the exact search's node count and the order
	// search's iteration count, making "search" deterministic regardless of
	// machine speed (tests use it).
	MaxNodes int64
	// Workers bounds the concurrent searches of the exact search's
	// portfolio (0: GOMAXPROCS). The result does not depend on it where
	// the search reaches the lower bound, nor with MaxNodes or
	// Deterministic, which run the search's phases one after the other.
	Workers int
	// Deterministic bounds "search", "best" and "exact" by work instead of
	// wall time: MaxNodes, or WorkBudget(number of buffers) when MaxNodes
	// is 0. The phases then run one after the other and every decision
	// that would otherwise look at the clock (the exact search's share of
	// each capacity, whether to decode the largest-area order) is taken on
	// counts, so the result depends on neither the machine's speed or load
	// nor Workers. Budget stays a safety cap: when it stops anything,
	// Report.BudgetExhausted says so and the result is the one the time
	// allowed.
	Deterministic bool
}

// WorkBudget is the work cap of Options.Deterministic for a problem of n
// buffers, in units of one exact-search node or one buffer placed by the
// order search or the neighbourhood repair (each of which gets the cap):
// 10 per buffer, at least 5,000 and at most 50,000. On the 1,139-buffer
// plan of a 2,500-node random graph (the test instance of
// TestCompileJSONDeterministicHard in cmd/irtool) that is 11,390 units,
// about 2 s of wall time for the search with the machine's two cores at a
// load average of 30, a small fraction of that idle; the graphs of the
// model set reach their lower bound on the constructive strategies alone,
// before any search.
func WorkBudget(n int) int64 {
	return min(max(10*int64(n), 5_000), 50_000)
}

func (o Options) budget() time.Duration {
	if o.Budget <= 0 {
		return DefaultBudget
	}
	return o.Budget
}

// Strategy names accepted by Solve.
const (
	StrategyNaive          = "naive"
	StrategyGreedySize     = "greedy-size"
	StrategyGreedyLifetime = "greedy-lifetime"
	StrategyGreedyBreadth  = "greedy-breadth"
	StrategyGreedyArea     = "greedy-area"
	StrategyOnlineBestFit  = "online-bestfit"
	StrategyExact          = "exact"
	StrategySearch         = "search"
	StrategyBest           = "best"
)

// The phases of "search" (and "best") that are not strategies of their
// own: a plan whose arena one of them found reports its name as the
// winner. StrategyOf maps them back to "search", which runs them.
const (
	PhaseRepair = "repair" // the neighbourhood repair of the search
	PhaseOrders = "orders" // the perturbation search over placement orders
)

// StrategyOf returns the strategy that produces results reported under
// name (Report.Winner, MemoryPlan.Strategy): a strategy name is itself, a
// search phase (PhaseRepair, PhaseOrders) is "search". Every function that
// takes a strategy name accepts what a plan or report gives back.
func StrategyOf(name string) string {
	switch name {
	case PhaseRepair, PhaseOrders:
		return StrategySearch
	}
	return name
}

// cheapStrategies run quickly; "best" runs them first and hands their
// results to the search. linearStrategies among them are O(n log n) on any
// input and run first; all but naive (O(n)) stop at the deadline.
var (
	cheapStrategies = []string{
		StrategyNaive, StrategyOnlineBestFit, StrategyGreedySize,
		StrategyGreedyLifetime, StrategyGreedyBreadth,
	}
	linearStrategies = []string{StrategyNaive, StrategyOnlineBestFit}
)

// Strategies returns the strategy names Solve accepts, "best" last (Solve
// also takes the search phases' names, see StrategyOf).
func Strategies() []string {
	return []string{
		StrategyNaive, StrategyGreedySize, StrategyGreedyLifetime, StrategyGreedyBreadth,
		StrategyGreedyArea, StrategyOnlineBestFit, StrategyExact, StrategySearch, StrategyBest,
	}
}

// Report summarises a Solve call; it marshals to the JSON that
// `irtool plan --json` prints. LowerBound, Bound, Ratio, Optimal, Winner
// and BestMS form the certificate of the result.
type Report struct {
	Buffers    int     `json:"buffers"`     // number of buffers in the problem
	LowerBound int64   `json:"lower_bound"` // LowerBound of the problem (LOAD)
	Arena      int64   `json:"arena"`       // arena of the returned assignment
	Ratio      float64 `json:"ratio"`       // Arena / LowerBound (1 when both are 0)
	// Bound is the best proven lower bound on the optimal arena: LowerBound,
	// or more when the exact search refuted capacities above it.
	Bound int64 `json:"bound"`
	// Optimal reports that Arena == Bound: the assignment is proven optimal.
	Optimal bool `json:"proven_optimal"`
	// Gap is (Arena - Bound) / Bound, what a better solution could still
	// save at most (0 when Optimal).
	Gap      float64 `json:"gap"`
	Naive    int64   `json:"naive"`    // Σ aligned sizes: the arena without reuse
	Strategy string  `json:"strategy"` // the strategy asked for
	Winner   string  `json:"winner"`   // the strategy or search phase that produced Arena
	// BestMS is when the returned assignment was found, in milliseconds
	// since Solve started.
	BestMS   float64 `json:"time_to_best_ms"`
	MS       float64 `json:"ms"`        // wall time of Solve in milliseconds
	BudgetMS float64 `json:"budget_ms"` // the time budget in milliseconds
	// Strategies holds each finished strategy's arena ("best" runs all of
	// them).
	Strategies map[string]int64 `json:"strategies"`
	// StrategyMS holds each strategy's wall time in milliseconds.
	StrategyMS map[string]float64 `json:"strategy_ms"`
	// Unfinished names the strategies stopped by the deadline before they
	// placed every buffer (only "best" and "search" tolerate that).
	Unfinished []string `json:"unfinished,omitempty"`
	// MaxNodes is the work cap used (Options.MaxNodes, or WorkBudget with
	// Options.Deterministic; 0: none, wall time alone).
	MaxNodes int64 `json:"max_nodes"`
	// BudgetExhausted reports that the time budget (or the context) cut
	// the work short: the result is what that much time found, and may
	// differ on a faster or less loaded machine. Without a work cap it is
	// set whenever the search ran out of time before proving its result.
	BudgetExhausted bool `json:"budget_exhausted"`
}

// Ratio returns arena/lb, or 1 when both are zero.
func Ratio(arena, lb int64) float64 {
	if lb == 0 {
		if arena == 0 {
			return 1
		}
		return math.Inf(1)
	}
	return float64(arena) / float64(lb)
}

// Solve assigns offsets to p's buffers with the named strategy (see
// Strategies; "best" runs them all and keeps the smallest arena; a name
// registered in DefaultStrategies runs that strategy) and reports the
// result. The assignment is always validated before it is returned.
//
// Every strategy respects the deadline (Options.Budget from now, or the
// context's, whichever is sooner); Solve keeps back an estimate of the final
// validation's cost from the strategies' share. "naive" (O(n)) always
// finishes and "online-bestfit" is O(n log n); a strategy asked for by name
// that cannot finish in time is an error naming the instance size, while
// "best" and "search" keep whatever finished ("naive" at worst).
//
// "best" also runs every strategy registered in DefaultStrategies
// (StrategySet.Solve).
func Solve(ctx context.Context, p *Problem, strategy string, opts Options) (a *Assignment, rep *Report, err error) {
	return defaultStrategies.Solve(ctx, p, strategy, opts)
}

// solveBuiltin runs a built-in strategy (Solve without the registered
// ones).
func solveBuiltin(ctx context.Context, p *Problem, strategy string, opts Options) (a *Assignment, rep *Report, err error) {
	defer func() {
		if r := recover(); r != nil {
			a, rep, err = nil, nil, fmt.Errorf("planner: internal error in strategy %q: %v", strategy, r)
		}
	}()
	start := time.Now()
	if err := p.Check(); err != nil {
		return nil, nil, err
	}
	strategy = StrategyOf(strategy)
	if !slices.Contains(Strategies(), strategy) {
		return nil, nil, fmt.Errorf("planner: unknown built-in strategy %q", strategy)
	}
	if opts.Deterministic && opts.MaxNodes <= 0 {
		opts.MaxNodes = WorkBudget(len(p.Buffers))
	}
	budget := opts.budget()
	deadline := start.Add(budget)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	tl := newTimeline(p)
	// The final validation costs about as much as building the timeline
	// twice; keep that back, but at most half of the budget.
	reserve := min(3*time.Since(start), time.Until(deadline)/2)
	workDeadline := deadline.Add(-reserve)
	wctx, cancel := context.WithDeadline(ctx, workDeadline)
	defer cancel()
	rep = &Report{
		Buffers:    len(p.Buffers),
		LowerBound: tl.lb,
		Naive:      NaiveSize(p),
		Strategy:   strategy,
		BudgetMS:   float64(budget.Microseconds()) / 1000,
		Strategies: map[string]int64{},
		StrategyMS: map[string]float64{},
		MaxNodes:   max(opts.MaxNodes, 0),
	}
	inc := newIncumbent()
	inc.raise(tl.lb)
	record := func(sd seed) {
		if sd.a == nil {
			rep.Unfinished = append(rep.Unfinished, sd.name)
			return
		}
		rep.Strategies[sd.name] = sd.a.Arena
		rep.StrategyMS[sd.name] = float64(sd.dur.Microseconds()) / 1000
		inc.offer(sd.a, sd.order, sd.name)
	}
	st := func() *stopper { return &stopper{ctx: wctx, deadline: workDeadline} }
	switch strategy {
	case StrategySearch, StrategyBest, StrategyExact:
		var seeds []seed
		if strategy == StrategyBest {
			seeds = runCheap(tl, st, workDeadline, opts.MaxNodes > 0)
			for _, sd := range seeds {
				if sd.name != "" {
					record(sd)
				}
			}
		}
		t0 := time.Now()
		mode := map[string]searchMode{StrategySearch: modeRepair, StrategyBest: modeRepair, StrategyExact: modeExact}[strategy]
		res := solveSearch(wctx, tl, seeds, opts, inc, mode)
		if res == nil { // nothing finished: fall back to naive
			record(runGreedy(tl, StrategyNaive, nil))
		} else {
			key := strategy // best's search phase reports as "search"
			if key == StrategyBest {
				key = StrategySearch
			}
			rep.Strategies[key] = res.Arena
			rep.StrategyMS[key] = msSince(t0)
		}
	default:
		sd := runGreedy(tl, strategy, st())
		if sd.a == nil {
			return nil, nil, fmt.Errorf("planner: strategy %q did not finish within the budget on %d buffers (stopped after %v; use strategy best, which keeps what finishes, or a larger budget)", strategy, len(p.Buffers), time.Since(start).Round(time.Millisecond))
		}
		record(sd)
	}
	// Every stop on time compares the clock with workDeadline (or asks the
	// context), so when the work ended before it nothing was cut short.
	rep.BudgetExhausted = !time.Now().Before(workDeadline) || ctx.Err() != nil
	a, _ = inc.snapshot()
	if err := Validate(p, a); err != nil {
		return nil, nil, fmt.Errorf("planner: strategy %q produced an invalid assignment: %w", inc.winner, err)
	}
	rep.finish(a, inc, tl.lb, start)
	return a, rep, nil
}

// finish fills in the report of the winning assignment a: its arena and
// strategy, when it was found, its ratio to the lower bound lb and its gap
// to the proven bound.
func (rep *Report) finish(a *Assignment, inc *incumbent, lb int64, start time.Time) {
	rep.Arena = a.Arena
	rep.Winner = inc.winner
	rep.BestMS = float64(inc.at.Sub(start).Microseconds()) / 1000
	rep.Ratio = Ratio(a.Arena, lb)
	rep.Bound = min(inc.lo.Load(), a.Arena)
	rep.Optimal = a.Arena <= rep.Bound
	if rep.Bound > 0 {
		rep.Gap = float64(a.Arena-rep.Bound) / float64(rep.Bound)
	}
	rep.MS = msSince(start)
}

// bigInstance is the number of buffers above which "best" runs only
// greedy-size among the best-fit strategies, and only with about 2 µs per
// buffer left: each needs a segment tree of a few hundred bytes per buffer,
// and their decodes, whose cost grows with the fragmentation they meet,
// rarely finish within seconds there.
const bigInstance = 1 << 18

// runCheap runs the constructive strategies for "best": the O(n log n) ones
// first, then the best-fit ones, each stopping at the deadline.
// With counted (a work cap), which placers run on big instances depends on
// the size alone, not on the time left.
func runCheap(tl *timeline, st func() *stopper, deadline time.Time, counted bool) []seed {
	seeds := make([]seed, len(cheapStrategies))
	var wg sync.WaitGroup
	var panicked atomic.Value
	run := func(k int, name string) {
		defer wg.Done()
		defer func() {
			if r := recover(); r != nil {
				panicked.Store(fmt.Sprint(r))
			}
		}()
		seeds[k] = runGreedy(tl, name, st())
	}
	// Pass 0: the O(n log n) strategies; pass 1: greedy-size and
	// greedy-breadth (the two best-fit orders that usually win) side by
	// side; pass 2: greedy-lifetime. Under a short budget on a busy machine
	// the first best-fit results thus arrive as early as they can.
	passOf := func(name string) int {
		switch name {
		case StrategyNaive, StrategyOnlineBestFit:
			return 0
		case StrategyGreedyLifetime:
			return 2
		}
		return 1
	}
	for pass := range 3 {
		for k, name := range cheapStrategies {
			if passOf(name) != pass {
				continue
			}
			if pass > 0 && tl.n > bigInstance && (name != StrategyGreedySize || !counted && time.Until(deadline) < time.Duration(tl.n)*2*time.Microsecond) {
				// One best-fit placer at a time on big instances, and only
				// with about 2 µs per buffer left (its set-up alone, the
				// order and the tree, takes a good part of that).
				continue
			}
			wg.Add(1)
			go run(k, name)
		}
		wg.Wait()
	}
	if r := panicked.Load(); r != nil {
		panic(r)
	}
	return seeds
}

func msSince(t time.Time) float64 {
	return float64(time.Since(t).Microseconds()) / 1000
}
