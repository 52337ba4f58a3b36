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
	StrategyOnlineBestFit  = "online-bestfit"
	StrategySearch         = "search"
	StrategyBest           = "best"
)

// cheapStrategies run to completion quickly; "best" runs them first and
// hands their results to "search".
var cheapStrategies = []string{
	StrategyNaive, StrategyGreedySize, StrategyGreedyLifetime,
	StrategyGreedyBreadth, StrategyOnlineBestFit,
}

// Strategies returns the strategy names Solve accepts, "best" last.
func Strategies() []string {
	return append(slices.Clone(cheapStrategies), StrategySearch, StrategyBest)
}

// Report summarises a Solve call; it marshals to the JSON that
// `irtool plan --json` prints.
type Report struct {
	Buffers    int     `json:"buffers"`     // number of buffers in the problem
	LowerBound int64   `json:"lower_bound"` // LowerBound of the problem
	Arena      int64   `json:"arena"`       // arena of the returned assignment
	Ratio      float64 `json:"ratio"`       // Arena / LowerBound (1 when both are 0)
	Naive      int64   `json:"naive"`       // Σ aligned sizes: the arena without reuse
	Strategy   string  `json:"strategy"`    // the strategy asked for
	Winner     string  `json:"winner"`      // the strategy that produced Arena
	MS         float64 `json:"ms"`          // wall time of Solve in milliseconds
	// Strategies holds each strategy's arena ("best" runs all of them).
	Strategies map[string]int64 `json:"strategies"`
	// StrategyMS holds each strategy's wall time in milliseconds.
	StrategyMS map[string]float64 `json:"strategy_ms"`
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
func Solve(ctx context.Context, p *Problem, strategy string, opts Options) (a *Assignment, rep *Report, err error) {
	defer func() {
		if r := recover(); r != nil {
			a, rep, err = nil, nil, fmt.Errorf("planner: internal error in strategy %q: %v", strategy, r)
		}
	}()
	if err := p.Check(); err != nil {
		return nil, nil, err
	}
	if !slices.Contains(Strategies(), strategy) {
		return defaultStrategies.Solve(ctx, p, strategy, opts) // a registered strategy, or an error listing them
	}
	start := time.Now()
	budget := opts.budget()
	if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > budget {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, start.Add(budget))
		defer cancel()
	}
	tl := newTimeline(p)
	rep = &Report{
		Buffers:    len(p.Buffers),
		LowerBound: tl.lb,
		Naive:      NaiveSize(p),
		Strategy:   strategy,
		Strategies: map[string]int64{},
		StrategyMS: map[string]float64{},
	}
	record := func(sd seed) {
		rep.Strategies[sd.name] = sd.a.Arena
		rep.StrategyMS[sd.name] = float64(sd.dur.Microseconds()) / 1000
		if a == nil || sd.a.Arena < a.Arena {
			a, rep.Winner = sd.a, sd.name
		}
	}
	switch strategy {
	case StrategySearch, StrategyBest:
		var seeds []seed
		if strategy == StrategyBest {
			// The cheap strategies are independent: run them concurrently.
			seeds = make([]seed, len(cheapStrategies))
			var wg sync.WaitGroup
			var panicked atomic.Value
			for k, name := range cheapStrategies {
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() {
						if r := recover(); r != nil {
							panicked.Store(fmt.Sprint(r))
						}
					}()
					seeds[k] = runGreedy(tl, name)
				}()
			}
			wg.Wait()
			if r := panicked.Load(); r != nil {
				return nil, nil, fmt.Errorf("planner: internal error in strategy %q: %v", strategy, r)
			}
			for _, sd := range seeds {
				record(sd)
			}
		}
		t0 := time.Now()
		res := solveSearch(ctx, tl, seeds, opts)
		record(seed{name: StrategySearch, a: res, dur: time.Since(t0)})
	default:
		record(runGreedy(tl, strategy))
	}
	if err := Validate(p, a); err != nil {
		return nil, nil, fmt.Errorf("planner: strategy %q produced an invalid assignment: %w", rep.Winner, err)
	}
	rep.Arena = a.Arena
	rep.Ratio = Ratio(a.Arena, tl.lb)
	rep.MS = msSince(start)
	return a, rep, nil
}

func msSince(t time.Time) float64 {
	return float64(time.Since(t).Microseconds()) / 1000
}
