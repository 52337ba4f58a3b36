package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/irtool/irtool/internal/registry"
)

// StrategyFunc is an offset strategy: it places every buffer of p in one
// arena. Solve validates what it returns (no overlap of live buffers,
// alignment), so a wrong strategy gives an error, never a bad plan.
type StrategyFunc func(ctx context.Context, p *Problem, opts Options) (*Assignment, error)

// StrategySet holds offset strategies beyond the built-in ones (Strategies).
// The package's default set (DefaultStrategies) is what the package-level
// Solve consults for a name it does not know; NewStrategySet makes one
// layered over it, whose registrations no other set sees. A StrategySet is
// safe for concurrent use.
type StrategySet struct {
	r *registry.Layered[string, StrategyFunc]
}

var defaultStrategies = &StrategySet{registry.New[string, StrategyFunc](nil)}

// DefaultStrategies returns the package's default strategy set.
func DefaultStrategies() *StrategySet { return defaultStrategies }

// NewStrategySet returns an empty set layered over DefaultStrategies.
func NewStrategySet() *StrategySet {
	return &StrategySet{registry.New(defaultStrategies.r)}
}

// Register adds a strategy under a new name (lower-case letters, digits and
// '-', not a built-in name).
func (s *StrategySet) Register(name string, fn StrategyFunc) error {
	if name == "" || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		return fmt.Errorf("planner: register: bad strategy name %q", name)
	}
	if fn == nil {
		return fmt.Errorf("planner: register %q: nil strategy", name)
	}
	if slices.Contains(Strategies(), name) || slices.Contains(GraphStrategies(), name) || StrategyOf(name) != name {
		return fmt.Errorf("planner: register: %q is a built-in strategy", name)
	}
	if !s.r.Add(name, fn) {
		return fmt.Errorf("planner: register: strategy %q already registered", name)
	}
	return nil
}

// Lookup returns a registered strategy of s or of the set it is layered
// over.
func (s *StrategySet) Lookup(name string) (StrategyFunc, bool) { return s.r.Lookup(name) }

// Names lists the strategies Solve accepts with s: the built-in ones, then
// the registered ones in registration order.
func (s *StrategySet) Names() []string {
	return append(Strategies(), s.r.Ordered()...)
}

// GraphNames lists the strategies PlanMemory accepts with s: the built-in
// graph strategies (GraphStrategies), then the registered ones.
func (s *StrategySet) GraphNames() []string {
	names := s.Names()
	return append(GraphStrategies(), names[len(Strategies()):]...)
}

// HasGraph reports whether PlanMemory with s accepts the strategy name:
// a built-in graph strategy, a registered one, or a search phase's name.
func (s *StrategySet) HasGraph(name string) bool {
	name = StrategyOf(name)
	if slices.Contains(GraphStrategies(), name) {
		return true
	}
	_, ok := s.Lookup(name)
	return ok
}

// Solve is the package-level Solve with the strategies of s: a built-in
// name runs the built-in strategy, a registered one runs its function
// under opts' time budget, and the result is validated and reported alike.
func (s *StrategySet) Solve(ctx context.Context, p *Problem, strategy string, opts Options) (a *Assignment, rep *Report, err error) {
	strategy = StrategyOf(strategy)
	if !slices.Contains(Strategies(), strategy) {
		return s.solveRegistered(ctx, p, strategy, opts)
	}
	a, rep, err = solveBuiltin(ctx, p, strategy, opts)
	if err != nil || strategy != StrategyBest {
		return a, rep, err
	}
	// best: every registered strategy too, each under the budget; the
	// smallest arena wins as among the built-in ones.
	start := time.Now()
	for _, name := range s.Names()[len(Strategies()):] {
		ra, rr, err := s.solveRegistered(ctx, p, name, opts)
		if err != nil {
			rep.Unfinished = append(rep.Unfinished, name)
			continue
		}
		rep.Strategies[name], rep.StrategyMS[name] = ra.Arena, rr.MS
		if ra.Arena < a.Arena {
			a = ra
			rep.Arena, rep.Ratio, rep.Winner = ra.Arena, Ratio(ra.Arena, rep.LowerBound), name
			rep.BestMS = rep.MS + msSince(start)
			rep.Optimal = rep.Arena <= rep.Bound
			if rep.Bound > 0 {
				rep.Gap = float64(rep.Arena-rep.Bound) / float64(rep.Bound)
			}
		}
	}
	rep.MS += msSince(start)
	return a, rep, nil
}

// solveRegistered runs a registered strategy under opts' budget and
// validates and reports its result as Solve does a built-in one.
func (s *StrategySet) solveRegistered(ctx context.Context, p *Problem, strategy string, opts Options) (a *Assignment, rep *Report, err error) {
	fn, ok := s.Lookup(strategy)
	if !ok {
		return nil, nil, fmt.Errorf("planner: unknown strategy %q (have %s)", strategy, strings.Join(s.Names(), ", "))
	}
	defer func() {
		if r := recover(); r != nil {
			a, rep, err = nil, nil, fmt.Errorf("planner: strategy %q panicked: %v", strategy, r)
		}
	}()
	if err := p.Check(); err != nil {
		return nil, nil, err
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, opts.budget())
	defer cancel()
	a, err = fn(ctx, p, opts)
	exhausted := ctx.Err() != nil
	if err != nil {
		return nil, nil, fmt.Errorf("planner: strategy %q: %w", strategy, err)
	}
	if a == nil {
		return nil, nil, fmt.Errorf("planner: strategy %q returned no assignment", strategy)
	}
	if err := Validate(p, a); err != nil {
		return nil, nil, fmt.Errorf("planner: strategy %q produced an invalid assignment: %w", strategy, err)
	}
	lb := LowerBound(p)
	ms := msSince(start)
	rep = &Report{Buffers: len(p.Buffers), LowerBound: lb, Arena: a.Arena, Ratio: Ratio(a.Arena, lb),
		Bound: min(lb, a.Arena), Optimal: a.Arena <= lb,
		Naive: NaiveSize(p), Strategy: strategy, Winner: strategy, BestMS: ms, MS: ms,
		BudgetMS:   float64(opts.budget().Microseconds()) / 1000,
		Strategies: map[string]int64{strategy: a.Arena}, StrategyMS: map[string]float64{strategy: ms},
		BudgetExhausted: exhausted}
	if lb > 0 {
		rep.Gap = float64(a.Arena-rep.Bound) / float64(lb)
	}
	return a, rep, nil
}
