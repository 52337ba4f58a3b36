package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The comparison harness: every strategy of a set, one after the other,
// on each instance, scored against the instance's lower bound. It is what
// `irtool plan --compare` prints and what docs/PLANNER.md's tables of
// strategies are made with (testdata/bench holds the public instances).

// CompareRow is one strategy's result on one instance.
type CompareRow struct {
	Strategy string  `json:"strategy"`
	Arena    int64   `json:"arena"`
	Ratio    float64 `json:"ratio"` // Arena / lower bound
	// Optimal: the strategy proved its arena optimal (exact, search and
	// best can) or reached the lower bound.
	Optimal bool    `json:"proven_optimal"`
	MS      float64 `json:"ms"` // wall time
	// BudgetExhausted: the budget cut the strategy short.
	BudgetExhausted bool `json:"budget_exhausted"`
	// Err says why the strategy gave no plan (it could not finish in the
	// budget, or its assignment was invalid); Arena is then 0.
	Err string `json:"error,omitempty"`
}

// Comparison is every strategy's result on one instance.
type Comparison struct {
	Instance   string       `json:"instance"`
	Buffers    int          `json:"buffers"`
	LowerBound int64        `json:"lower_bound"`
	Rows       []CompareRow `json:"strategies"`
}

// CompareOptions configure Compare.
type CompareOptions struct {
	// Strategies lists the strategies to run, in order (nil: every name
	// of the set, built-in and registered, "best" included).
	Strategies []string
	// Options are handed to each strategy (Budget is per strategy).
	Options Options
}

// Compare runs each strategy on p (named instance in the result) and
// scores it against p's lower bound. A strategy that fails gets a row
// with Err; an unknown name or an invalid problem is an error.
func (s *StrategySet) Compare(ctx context.Context, instance string, p *Problem, o CompareOptions) (*Comparison, error) {
	if err := p.Check(); err != nil {
		return nil, fmt.Errorf("planner: compare %s: %w", instance, err)
	}
	names := o.Strategies
	all := s.Names()
	if names == nil {
		names = all
	}
	for _, n := range names {
		if !slices.Contains(all, n) {
			return nil, fmt.Errorf("planner: compare: unknown strategy %q (have %s)", n, strings.Join(all, ", "))
		}
	}
	lb := LowerBound(p)
	c := &Comparison{Instance: instance, Buffers: len(p.Buffers), LowerBound: lb}
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		start := time.Now()
		_, rep, err := s.Solve(ctx, p, n, o.Options)
		row := CompareRow{Strategy: n, MS: msSince(start)}
		if err != nil {
			row.Err = err.Error()
		} else {
			row.Arena, row.Ratio, row.Optimal, row.BudgetExhausted = rep.Arena, rep.Ratio, rep.Optimal, rep.BudgetExhausted
		}
		c.Rows = append(c.Rows, row)
	}
	return c, nil
}

// Compare is StrategySet.Compare with DefaultStrategies.
func Compare(ctx context.Context, instance string, p *Problem, o CompareOptions) (*Comparison, error) {
	return defaultStrategies.Compare(ctx, instance, p, o)
}
