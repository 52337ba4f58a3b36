package planner

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// maxDFSPairs bounds the exact search's overlap lists (time-overlapping
// buffer pairs, counted both ways) and maxDFSBuffers its recursion depth;
// larger instances skip it.
const (
	maxDFSPairs   = 4 << 20
	maxDFSBuffers = 50000
)

// solveSearch improves on the constructive strategies until it reaches the
// lower bound (or a proven bound) or the context's deadline:
//
//  1. the greedy orders (size, lifetime, breadth, area) give an incumbent;
//  2. the exact search (dfs.go) asks "does everything fit below C?": one
//     core on C = lower bound, the others descending from the incumbent
//     with short randomised restarts (see ladder and descend); a refuted
//     capacity raises the proven bound;
//  3. whatever time is left goes to a perturbation search over placement
//     orders (moving a buffer that touches the arena's top earlier and
//     re-decoding with best fit, keeping changes that do not grow the arena)
//  4. and, in repair mode, concurrently with 3, to a large-neighbourhood
//     search (repair.go) that re-packs the buffers of a time window around a
//     buffer at the arena's top.
//
// Instances too large for the exact search (more than maxDFSPairs
// overlapping pairs) go straight to 3 and 4. With mode exact only 1 and 2
// run. seeds are results of other strategies (an order is optional); the
// greedy orders missing from them are decoded first. With Options.MaxNodes
// the phases run one after the other on one core, so the result does not
// depend on scheduling.
func solveSearch(ctx context.Context, tl *timeline, seeds []seed, opts Options, inc *incumbent, mode searchMode) *Assignment {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(opts.budget())
	}
	s := &searcher{ctx: ctx, tl: tl, deadline: deadline, opts: opts, inc: inc}
	s.inc.raise(tl.lb)
	for _, sd := range seeds {
		if sd.order != nil && sd.a != nil {
			s.orders = append(s.orders, sd.order)
		}
		s.offer(sd.a, sd.order, sd.name)
		if sd.name == StrategyGreedySize {
			s.decodeDur = sd.dur
		}
	}
	if s.done() || s.expired() && s.inc.best != nil {
		return s.inc.best
	}
	s.seed(seeds)
	if s.done() {
		return s.inc.best
	}
	exactOK := s.exactApplies()
	runRepair := func() {
		r := &searcher{ctx: ctx, tl: tl, deadline: deadline, opts: opts, inc: inc}
		r.repair()
	}
	// concurrently runs f alongside the order search (a panic in f is
	// re-raised here, for Solve to turn into an error).
	concurrently := func(f func()) { alongside(f, s.perturb) }
	// The exact search gets every core while it runs; the order search and
	// (in repair mode) the neighbourhood repair share the time after it, or
	// all of it on instances too large for the exact search.
	if exactOK && s.bestArena() > tl.lb {
		workers := opts.Workers
		if workers <= 0 {
			workers = runtime.GOMAXPROCS(0)
		}
		s.ladder(workers)
	}
	switch {
	case mode == modeExact || s.done() || s.expired():
	case mode == modeSearch:
		s.perturb()
	case opts.MaxNodes > 0:
		s.perturb()
		runRepair()
	default:
		concurrently(runRepair)
	}
	return s.inc.best
}

// exactApplies reports whether the instance is small enough for the exact
// search (see maxDFSPairs).
func (s *searcher) exactApplies() bool {
	live := 0
	for _, l := range s.tl.live {
		if l {
			live++
		}
	}
	return live <= maxDFSBuffers && overlapPairs(s.tl) <= maxDFSPairs
}

// searchMode selects the phases of solveSearch.
type searchMode int

const (
	modeSearch searchMode = iota // exact ladder, then order search
	modeExact                    // exact ladder only
	modeRepair                   // ladder and order search, with repair alongside
)

// incumbent is the best solution found so far, shared by the concurrent
// phases of a search, with the proven lower bound and when each was found.
type incumbent struct {
	mu     sync.Mutex
	best   *Assignment
	order  []int32
	winner string
	at     time.Time // when best was found
	arena  atomic.Int64
	lo     atomic.Int64 // proven lower bound on the optimum
}

func newIncumbent() *incumbent {
	inc := &incumbent{}
	inc.arena.Store(math.MaxInt64)
	return inc
}

// offer keeps a if it is smaller than the incumbent (or equal, when it
// brings an order the incumbent lacks) and reports whether it did.
func (inc *incumbent) offer(a *Assignment, order []int32, who string) bool {
	if a == nil {
		return false
	}
	inc.mu.Lock()
	defer inc.mu.Unlock()
	if inc.best == nil || a.Arena < inc.best.Arena || (inc.order == nil && order != nil && a.Arena == inc.best.Arena) {
		if inc.best == nil || a.Arena < inc.best.Arena {
			inc.winner, inc.at = who, time.Now()
		}
		inc.best = a
		if order != nil {
			inc.order = order
		}
		inc.arena.Store(a.Arena)
		return true
	}
	return false
}

// raise records a proven lower bound.
func (inc *incumbent) raise(lo int64) {
	for {
		cur := inc.lo.Load()
		if lo <= cur || inc.lo.CompareAndSwap(cur, lo) {
			return
		}
	}
}

// snapshot returns the incumbent's solution and order.
func (inc *incumbent) snapshot() (*Assignment, []int32) {
	inc.mu.Lock()
	defer inc.mu.Unlock()
	return inc.best, inc.order
}

// seed is one strategy's result handed to the search.
type seed struct {
	name  string
	order []int32 // nil for strategies that are not placement orders
	a     *Assignment
	dur   time.Duration
}

// runGreedy runs one of the cheap strategies or greedy-area (the
// largest-area first order, which "best" does not run on its own but the
// search uses as a seed). The best-fit strategies give up
// when st says so, returning a seed without an assignment.
func runGreedy(tl *timeline, name string, st *stopper) seed {
	t0 := time.Now()
	sd := seed{name: name}
	switch name {
	case StrategyNaive:
		sd.a = solveNaive(tl)
	case StrategyOnlineBestFit:
		sd.a = solveOnline(tl, st)
	default:
		switch name {
		case StrategyGreedySize:
			sd.order = orderBySize(tl)
		case StrategyGreedyLifetime:
			sd.order = orderByLifetime(tl)
		case StrategyGreedyBreadth:
			sd.order = orderByBreadth(tl)
		case StrategyGreedyArea:
			sd.order = orderByArea(tl)
		default:
			panic(fmt.Sprintf("planner: runGreedy: %q is not a constructive strategy", name))
		}
		sd.a = solveOrder(tl, sd.order, st)
	}
	sd.dur = time.Since(t0)
	return sd
}

type searcher struct {
	ctx       context.Context
	tl        *timeline
	deadline  time.Time
	opts      Options
	inc       *incumbent
	orders    [][]int32     // the greedy orders, for restarts of the order search
	decodeDur time.Duration // time of one full greedy decode
	work      int64         // nodes + iterations spent, for Options.MaxNodes
	g         int64         // grain (see grain), 0 until computed
}

func (s *searcher) expired() bool {
	return s.ctx.Err() != nil || time.Now().After(s.deadline) ||
		(s.opts.MaxNodes > 0 && s.work >= s.opts.MaxNodes) || s.done()
}

// done reports whether the incumbent meets the proven bound.
func (s *searcher) done() bool {
	return s.inc.arena.Load() <= s.inc.lo.Load()
}

func (s *searcher) bestArena() int64 { return s.inc.arena.Load() }

func (s *searcher) offer(a *Assignment, order []int32, who string) {
	s.inc.offer(a, order, who)
}

// seed decodes the greedy orders that are not among seeds, and the
// largest-area-first order when decoding is cheap.
func (s *searcher) seed(seeds []seed) {
	have := map[string]bool{}
	for _, sd := range seeds {
		have[sd.name] = true
	}
	for _, name := range []string{StrategyGreedySize, StrategyGreedyLifetime, StrategyGreedyBreadth, StrategyGreedyArea} {
		if have[name] || s.done() || (s.inc.best != nil && s.expired()) {
			continue
		}
		if name == StrategyGreedyArea && s.opts.MaxNodes <= 0 && s.decodeDur*50 > time.Until(s.deadline) {
			// (With a work cap the decode always runs: a choice made on
			// the clock would make the result depend on it.)
			continue
		}
		sd := runGreedy(s.tl, name, &stopper{ctx: s.ctx, deadline: s.deadline})
		if sd.a == nil {
			continue
		}
		if name == StrategyGreedySize {
			s.decodeDur = sd.dur
		}
		s.orders = append(s.orders, sd.order)
		s.offer(sd.a, sd.order, name)
	}
}

// ladder runs the exact search on capacities below the incumbent, with a
// portfolio of `workers` concurrent searches when workers > 1 (not with
// MaxNodes, whose node counts must not depend on scheduling). With a
// portfolio the first worker (preorders TWA, TAW) stays on the lower bound
// (up to lbNodes nodes, then it descends as well), since most instances that
// reach it need only that, while the others descend from the incumbent with
// short restarts (see descend), which is what instances whose bound is out
// of reach need. On one core the bound gets 60% of the time and the descent
// the rest.
func (s *searcher) ladder(workers int) {
	if s.opts.MaxNodes > 0 {
		s.ladderSequential()
		return
	}
	pf := newPortfolio(s.tl, max(workers, 1))
	if pf == nil {
		return
	}
	lb := s.inc.lo.Load()
	out := make([]int64, s.tl.n)
	s.grain() // computed before the workers share s
	if len(pf.ws) == 1 {
		d := pf.ws[0]
		d.heur = lbHeuristics
		left := time.Until(s.deadline)
		st, nodes := pf.feasible(s.ctx, lb, time.Now().Add(time.Duration(float64(left)*0.6)), out)
		s.work += nodes
		s.settle(st, lb, lb, out)
		if !s.expired() {
			s.descend(d, lb+1, 1, nil, func() {})
		}
		return
	}
	var stop0, stopRest atomic.Bool
	work := make([]func(), len(pf.ws))
	work[0] = func() {
		d := pf.ws[0]
		d.heur = lbHeuristics
		d.ctx, d.deadline, d.nodes, d.stopped, d.maxNodes, d.halt = s.ctx, s.deadline, 0, false, lbNodes, &stop0
		st := d.feasible(lb, out)
		switch st {
		case dfsFound:
			s.offer(&Assignment{Offsets: out, Arena: arenaOf(s.tl, out)}, nil, StrategyExact)
			stopRest.Store(true)
		case dfsInfeasible:
			s.inc.raise(lb + s.grain())
		default:
			if d.nodes >= lbNodes && !stop0.Load() {
				// The bound looks out of reach: descend too, the bound
				// included among the capacities.
				s.descend(d, lb, 0, nil, func() {})
			}
		}
	}
	for w := 1; w < len(pf.ws); w++ {
		work[w] = func() {
			// The bound is the first worker's: descend above it.
			s.descend(pf.ws[w], lb+1, uint64(w), &stopRest, func() {
				if s.inc.lo.Load() > lb || s.done() {
					stop0.Store(true)
				}
			})
		}
	}
	var wg sync.WaitGroup
	var panicked atomic.Value
	for w := 1; w < len(work); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					panicked.Store(fmt.Sprint(r))
					stop0.Store(true)
				}
			}()
			work[w]()
		}()
	}
	// The first worker runs on this goroutine until the deadline, or until
	// a descending worker refutes the bound or meets it (see after).
	work[0]()
	wg.Wait()
	if r := panicked.Load(); r != nil {
		panic(r)
	}
}

// alongside runs bg on a goroutine of its own while fg runs on the caller's,
// waits for both, and re-raises a panic of bg here (for Solve to turn into
// an error).
func alongside(bg, fg func()) {
	var wg sync.WaitGroup
	var panicked atomic.Value
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() {
			if r := recover(); r != nil {
				panicked.Store(fmt.Sprint(r))
			}
		}()
		bg()
	}()
	fg()
	wg.Wait()
	if r := panicked.Load(); r != nil {
		panic(r)
	}
}

// lbHeuristics are the preorders of the worker that stays on the lower
// bound (round-robin): TWA proves A, E, F and G, TAW proves B.
var lbHeuristics = []string{"TWA", "TAW"}

// lbNodes is the node count after which the worker on the lower bound
// joins the descent: alone, the TWA, TAW round-robin proves A, B, C, E, F
// and G at their bound in 14k, 81k, 0.6k, 72k, 25k and 2.4k nodes; under
// load the deadline comes first, so a proof keeps the whole budget there.
const lbNodes = 600_000

// descendHeuristics are the preorders descend cycles through; 'R' breaks
// the remaining ties at random, with a new seed on every attempt. On
// MiniMalloc's D (bound 986,112 neither reached nor refuted) the
// deterministic preorders find packings only at scattered capacities
// (1,031,168 with TWA in 900 nodes, but none at 1,037,312 within 359k),
// which the random capacities of descend hit now and then; TWR alone was
// no better: `best` on D in 10 s with Options.Seed 0-4 (load 6-8) ended at
// 1006-1015 KiB, mean 1011.6, with TWR alone and mean 1011.2 with this
// cycle (1007 KiB with seed 0, the default).
var descendHeuristics = []string{"TWA", "TWR", "WAT", "TWR", "TAW", "TWR"}

// descendBase is the node limit of descend's shortest attempt (at least
// twice the number of buffers, a search's depth), and
// 1<<(descendSpan-1) the most grains a random capacity lies below the
// incumbent.
var (
	descendBase int64 = 1000
	descendSpan       = 8
)

// descend runs short exact searches on capacities below the incumbent
// until the deadline, stop, or the incumbent meets the proven bound: the
// capacity is the largest multiple of the grain below the incumbent, or on
// a coin flip one a random number of grains lower (log-uniform up to
// 1<<(descendSpan-1)): the search trees of nearby capacities differ
// wildly, and a lower capacity's tree can be the easier one; the node limits follow the Luby sequence (1, 1, 2, 1, 1,
// 2, 4, ...) times descendBase, so that restarts stay short while long runs
// still happen; the preorders cycle through descendHeuristics. A capacity
// whose tree is exhausted raises the proven bound. Capacities below floor
// are not tried; after runs after every attempt.
func (s *searcher) descend(d *dfs, floor int64, seed uint64, stop *atomic.Bool, after func()) {
	g := s.grain()
	out := make([]int64, s.tl.n)
	rng := rand.New(rand.NewPCG(uint64(s.opts.Seed)^seed, 0xd1b54a32d192ed03))
	d.ctx, d.deadline, d.nodes, d.stopped, d.maxNodes, d.halt = s.ctx, s.deadline, 0, false, 0, stop
	for i := 1; !s.expired() && (stop == nil || !stop.Load()); i++ {
		lo := roundUp(max(floor, s.inc.lo.Load()), g)
		top := (s.bestArena() - 1) / g * g
		if top < lo {
			return
		}
		c := top
		if rng.IntN(2) == 0 && top > lo {
			span := min((top-lo)/g+1, int64(1)<<rng.IntN(descendSpan))
			c = top - rng.Int64N(span)*g
		}
		d.rseed = rng.Uint64()
		h := descendHeuristics[(i-1)%len(descendHeuristics)]
		st := d.solve(c, h, luby(i)*max(descendBase, 2*int64(d.m)))
		d.nodes = 0 // (descend never runs with MaxNodes, which counts s.work)
		switch st {
		case dfsFound:
			for b, x := range d.idx {
				out[x] = d.sol[b]
			}
			s.offer(&Assignment{Offsets: slices.Clone(out), Arena: arenaOf(s.tl, out)}, nil, StrategyExact)
		case dfsInfeasible:
			s.inc.raise(c + g)
		case dfsTimeout:
			return
		}
		after()
	}
}

// luby returns the i-th term (from 1) of the Luby sequence 1, 1, 2, 1, 1,
// 2, 4, 1, 1, 2, 1, 1, 2, 4, 8, ...
func luby(i int) int64 {
	for k := 1; ; k++ {
		if i == 1<<k-1 {
			return 1 << (k - 1)
		}
		if i < 1<<k-1 {
			return luby(i - (1<<(k-1) - 1))
		}
	}
}

// roundUp returns the smallest multiple of g at least v (g > 0, v >= 0).
func roundUp(v, g int64) int64 {
	return (v + g - 1) / g * g
}

// grain returns the greatest common divisor of the live buffers' sizes:
// every offset of a canonical solution is a sum of sizes, and every
// packing can be made canonical without growing, so the optimum is a
// multiple of it and a refuted capacity c proves the next multiple above.
func (s *searcher) grain() int64 {
	if s.g == 0 {
		s.g = s.tl.grain()
	}
	return s.g
}

// rung returns the next capacity to try and the share of the work left it
// gets: first the lower bound with most of it, then bisection of
// [soft, hi-1] in multiples of the grain with a third of what is left each.
func (s *searcher) rung(first bool, soft, hi int64) (int64, float64) {
	if first {
		return s.inc.lo.Load(), 0.6
	}
	g := s.grain()
	lo := roundUp(soft, g)
	return lo + ((hi-1-lo)/g/2)*g, 1.0 / 3
}

// settle records the outcome of capacity c and returns the new soft floor.
func (s *searcher) settle(st dfsStatus, c, soft int64, out []int64) int64 {
	switch st {
	case dfsFound:
		s.offer(&Assignment{Offsets: slices.Clone(out), Arena: arenaOf(s.tl, out)}, nil, StrategyExact)
	case dfsInfeasible:
		s.inc.raise(c/s.grain()*s.grain() + s.grain())
		soft = max(soft, c+1)
	default:
		soft = max(soft, c+1)
	}
	return soft
}

// ladderSequential is ladder on one search whose node count is capped by
// Options.MaxNodes.
func (s *searcher) ladderSequential() {
	d := newDFS(s.tl, maxDFSPairs)
	if d == nil {
		return
	}
	d.ctx = s.ctx
	soft := s.inc.lo.Load()
	out := make([]int64, s.tl.n)
	first := true
	for !s.expired() {
		hi := s.bestArena()
		if roundUp(soft, s.grain()) >= hi {
			break
		}
		c, share := s.rung(first, soft, hi)
		first = false
		// The share is of the nodes left, not of the time left, so the
		// rungs do not depend on the clock; the deadline is the cap.
		d.deadline = s.deadline
		d.maxNodes = max(1, int64(float64(s.opts.MaxNodes-s.work)*share))
		d.nodes, d.stopped = 0, false
		st := d.feasible(c, out)
		s.work += d.nodes
		soft = s.settle(st, c, soft, out)
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
// the arena grew. Every 64 rejected moves it restarts, alternately from the
// best order so far and from one of the greedy orders. A move re-decodes only the suffix after its new position
// (on pangu_2.6B two moves of greedy-breadth's order reach the lower
// bound); a decode the deadline interrupts ends the search.
func (s *searcher) perturb() {
	left := time.Until(s.deadline)
	best0, bestOrder := s.inc.snapshot()
	if bestOrder == nil || left <= 0 {
		return
	}
	tl := s.tl
	rng := rand.New(rand.NewPCG(uint64(s.opts.Seed), 0x9e3779b97f4a7c15))
	order := slices.Clone(bestOrder)
	pos := make([]int, tl.n)
	for i, b := range order {
		pos[b] = i
	}
	pl := newPlacer(tl, true)
	pl.stop = &stopper{ctx: s.ctx, deadline: s.deadline}
	cur := pl.decode(order, 0)
	if pl.aborted {
		return
	}
	bestArena := best0.Arena
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
	for !s.expired() {
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
		if s.opts.Deterministic {
			// Under a work cap a move costs the buffers it re-decodes
			// (twice when undone).
			s.work += 2 * int64(tl.n-to)
		}
		move(from, to)
		next := pl.decode(order, to)
		if pl.aborted {
			return
		}
		if next <= cur {
			cur = next
			if next < bestArena {
				bestArena = next
				bestOrder = slices.Clone(order)
				s.offer(pl.assignment(), bestOrder, PhaseOrders)
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
		if pl.aborted {
			return
		}
		rejects++
		if rejects%64 == 0 {
			// Restart from the best order, or every other time from
			// another greedy order (its top may be easier to move).
			from := bestOrder
			if k := rejects / 64; k%2 == 1 && len(s.orders) > 0 {
				from = s.orders[(k/2)%len(s.orders)]
			}
			copy(order, from)
			for i, x := range order {
				pos[x] = i
			}
			cur = pl.decode(order, 0)
			if pl.aborted {
				return
			}
		}
	}
}
