package planner

import (
	"context"
	"math/rand/v2"
	"slices"
	"time"
)

// maxDFSPairs bounds the exact search's overlap lists (time-overlapping
// buffer pairs, counted both ways) and maxDFSBuffers its recursion depth;
// larger instances skip it.
const (
	maxDFSPairs   = 4 << 20
	maxDFSBuffers = 50000
)

// solveSearch improves on the greedy strategies until it reaches the lower
// bound or the context's deadline:
//
//  1. the greedy orders (size, lifetime, breadth, area) give an incumbent;
//  2. the exact search (dfs.go) asks "does everything fit below C?" on a
//     ladder of capacities: first C = lower bound with most of the time, then
//     bisection between the highest capacity that timed out or was refuted
//     and the incumbent;
//  3. whatever time is left goes to a perturbation search over placement
//     orders (moving a buffer that touches the arena's top earlier and
//     re-decoding with best fit, keeping changes that do not grow the arena),
//     when a decode is cheap enough for it to make a difference.
//
// seeds are results of other strategies (an order is optional); the greedy
// orders missing from them are decoded first.
func solveSearch(ctx context.Context, tl *timeline, seeds []seed, opts Options) *Assignment {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(opts.budget())
	}
	s := &searcher{ctx: ctx, tl: tl, deadline: deadline, opts: opts, lo: tl.lb}
	for _, sd := range seeds {
		s.offer(sd.a, sd.order)
		if sd.name == StrategyGreedySize {
			s.decodeDur = sd.dur
		}
	}
	if s.done() {
		return s.best
	}
	s.seed(seeds)
	if s.best.Arena > tl.lb {
		s.ladder()
	}
	if s.best.Arena > s.lo && !s.expired() {
		s.perturb()
	}
	return s.best
}

// seed is one strategy's result handed to the search.
type seed struct {
	name  string
	order []int32 // nil for strategies that are not placement orders
	a     *Assignment
	dur   time.Duration
}

// runGreedy runs one of the cheap strategies ("area" is the largest-area
// first order, used only as a search seed).
func runGreedy(tl *timeline, name string) seed {
	t0 := time.Now()
	sd := seed{name: name}
	switch name {
	case StrategyNaive:
		sd.a = solveNaive(tl)
	case StrategyOnlineBestFit:
		sd.a = solveOnline(tl)
	default:
		switch name {
		case StrategyGreedySize:
			sd.order = orderBySize(tl)
		case StrategyGreedyLifetime:
			sd.order = orderByLifetime(tl)
		case StrategyGreedyBreadth:
			sd.order = orderByBreadth(tl)
		default:
			sd.order = orderByArea(tl)
		}
		sd.a = solveOrder(tl, sd.order)
	}
	sd.dur = time.Since(t0)
	return sd
}

type searcher struct {
	ctx       context.Context
	tl        *timeline
	deadline  time.Time
	opts      Options
	best      *Assignment
	bestOrder []int32
	lo        int64         // proven lower bound on the optimum
	decodeDur time.Duration // time of one full greedy decode
	work      int64         // nodes + iterations spent, for Options.MaxNodes
}

func (s *searcher) expired() bool {
	return s.ctx.Err() != nil || time.Now().After(s.deadline) ||
		(s.opts.MaxNodes > 0 && s.work >= s.opts.MaxNodes)
}

func (s *searcher) done() bool {
	return s.best != nil && s.best.Arena <= s.tl.lb
}

func (s *searcher) offer(a *Assignment, order []int32) {
	if a == nil {
		return
	}
	if s.best == nil || a.Arena < s.best.Arena || (s.bestOrder == nil && order != nil && a.Arena == s.best.Arena) {
		s.best = a
		if order != nil {
			s.bestOrder = order
		}
	}
}

// seed decodes the greedy orders that are not among seeds, and the
// largest-area-first order when decoding is cheap.
func (s *searcher) seed(seeds []seed) {
	have := map[string]bool{}
	for _, sd := range seeds {
		have[sd.name] = true
	}
	for _, name := range []string{StrategyGreedySize, StrategyGreedyLifetime, StrategyGreedyBreadth, "area"} {
		if have[name] || s.done() || (s.best != nil && s.expired()) {
			continue
		}
		if name == "area" && s.decodeDur*50 > time.Until(s.deadline) {
			continue
		}
		sd := runGreedy(s.tl, name)
		if name == StrategyGreedySize {
			s.decodeDur = sd.dur
		}
		s.offer(sd.a, sd.order)
	}
}

// ladder runs the exact search on decreasing capacities.
func (s *searcher) ladder() {
	d := newDFS(s.tl, maxDFSPairs)
	if d == nil {
		return
	}
	d.ctx = s.ctx
	soft := s.lo // capacities below soft were refuted or timed out
	out := make([]int64, s.tl.n)
	first := true
	for !s.expired() {
		hi := s.best.Arena // feasible
		if soft >= hi {
			break
		}
		// First the lower bound with most of the time, then bisection of
		// [soft, hi-1] with a third of what is left each.
		c, share := s.lo, 0.6
		if !first {
			c, share = soft+(hi-1-soft)/2, 1.0/3
		}
		first = false
		left := time.Until(s.deadline)
		d.deadline = time.Now().Add(time.Duration(float64(left) * share))
		d.maxNodes = 0
		if s.opts.MaxNodes > 0 {
			d.maxNodes = s.opts.MaxNodes - s.work
		}
		d.nodes, d.stopped = 0, false
		st := d.feasible(c, out)
		s.work += d.nodes
		switch st {
		case dfsFound:
			s.offer(&Assignment{Offsets: slices.Clone(out), Arena: arenaOf(s.tl, out)}, nil)
		case dfsInfeasible:
			s.lo = max(s.lo, c+1)
			soft = max(soft, c+1)
		default:
			soft = max(soft, c+1)
		}
	}
}

// arenaOf is ArenaOf for a timeline.
func arenaOf(tl *timeline, off []int64) int64 {
	var top int64
	for i, o := range off {
		if tl.live[i] {
			top = max(top, o+tl.size[i])
		}
	}
	return top
}

// perturb runs a hill climb over placement orders from the best greedy
// order: a random buffer at the top of the arena moves to a random earlier
// position, the changed suffix is re-decoded, and the move is kept unless
// the arena grew. Every 64 rejected moves in a row it restarts from the best
// order so far. It only runs when a full decode is cheap compared with the
// time left.
func (s *searcher) perturb() {
	left := time.Until(s.deadline)
	if s.bestOrder == nil || (s.opts.MaxNodes == 0 && s.decodeDur*200 > left) {
		return
	}
	tl := s.tl
	rng := rand.New(rand.NewPCG(uint64(s.opts.Seed), 0x9e3779b97f4a7c15))
	order := slices.Clone(s.bestOrder)
	pos := make([]int, tl.n)
	for i, b := range order {
		pos[b] = i
	}
	pl := newPlacer(tl, true)
	cur := pl.decode(order, 0)
	bestArena := s.best.Arena
	var peaks []int32
	rejects := 0
	move := func(from, to int) { // moves order[from] to position to (to < from)
		b := order[from]
		copy(order[to+1:from+1], order[to:from])
		order[to] = b
		for i := to; i <= from; i++ {
			pos[order[i]] = i
		}
	}
	for !s.expired() && bestArena > s.lo {
		s.work++
		peaks = peaks[:0]
		for i := 0; i < tl.n; i++ {
			if tl.live[i] && pl.off[i]+tl.size[i] == cur {
				peaks = append(peaks, int32(i))
			}
		}
		b := peaks[rng.IntN(len(peaks))]
		from := pos[b]
		if from == 0 {
			rejects++
			continue
		}
		to := rng.IntN(from)
		move(from, to)
		next := pl.decode(order, to)
		if next <= cur {
			cur = next
			if next < bestArena {
				bestArena = next
				s.offer(pl.assignment(), slices.Clone(order))
				rejects = 0
			}
			continue
		}
		// Undo: move b back and re-decode the suffix.
		b2 := order[to]
		copy(order[to:from], order[to+1:from+1])
		order[from] = b2
		for i := to; i <= from; i++ {
			pos[order[i]] = i
		}
		cur = pl.decode(order, to)
		rejects++
		if rejects%64 == 0 {
			copy(order, s.bestOrder)
			for i, x := range order {
				pos[x] = i
			}
			cur = pl.decode(order, 0)
		}
	}
}
