package planner

import (
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// This file holds the exact search: a depth-first search over canonical
// solutions for the decision problem "do all buffers fit below capacity C?",
// after the algorithm of MiniMalloc (Moffitt, "MiniMalloc: A Lightweight
// Memory Allocator for Hardware-Accelerated Machine Learning", ASPLOS 2023;
// google/minimalloc). The code is our own; the ideas are:
//
//   - Canonical solutions: buffers are placed in non-decreasing offset order,
//     each at the lowest offset its placed time-neighbours allow (its minimum
//     offset), ties broken by a static preorder, so each packing is explored
//     once.
//   - Cross sections: the maximal sets of simultaneously live buffers. Each
//     keeps a floor (the top of its placed buffers), the total size of its
//     unplaced buffers and the smallest minimum offset among them; a
//     partial solution is pruned as soon as some section's max(floor, that
//     minimum, current offset) + unplaced total exceeds C. Only whether the
//     minimum exceeds C - total matters, so instead of the minimum each
//     section remembers a witness, an unplaced member whose minimum offset
//     is at most C - total; it is checked in O(1) and searched for again
//     only when it no longer qualifies (witnesses are hints and need no
//     undo).
//   - Dominance: a buffer is not placed at or above the height where some
//     other unplaced buffer would already fit completely below it.
//   - Dynamic decomposition: once no unplaced buffer spans the boundary
//     between two sections, the two sides are independent subproblems.
//   - Several static preorders are tried round-robin with a node limit that
//     doubles each round, so one unlucky order does not eat the budget.

type dfsStatus int

const (
	dfsFound      dfsStatus = iota
	dfsInfeasible           // the whole tree was searched
	dfsAborted              // node limit reached
	dfsTimeout              // deadline, context or total node cap reached
)

// dfsPart is a subproblem: the sections [lo, hi) and the buffers in them.
type dfsPart struct {
	lo, hi int32
	bufs   []int32
}

type offChange struct {
	b   int32
	old int64
}

type floorChange struct {
	s   int32
	old int64
}

// noMin is the minimum offset of a placed buffer (above every threshold).
const noMin = int64(1) << 62

type dfsCand struct {
	off int64
	pre int32
	b   int32
}

// dfs holds the static data of an instance (live buffers only) and the
// mutable state of one search.
type dfs struct {
	m      int
	idx    []int32 // live buffer -> timeline index
	size   []int64
	width  []int64 // lifetime length in the problem's steps
	secLo  []int32 // section range [secLo, secHi) of each buffer
	secHi  []int32
	adj    [][]int32 // time-overlapping buffers
	secs   [][]int32 // members of each section
	cuts0  []int32   // buffers spanning the boundary between sections i and i+1
	parts0 []dfsPart // connected components

	c      int64
	off    []int64 // -1 when unplaced
	minOff []int64
	floor  []int64
	total  []int64
	cuts   []int32
	pre    []int32
	sol    []int64
	// wit is the position in secs[s] of the last member found unplaced
	// with a minimum offset at most c - total (a hint, see check).
	wit      []int32
	offLog   []offChange
	floorLog []floorChange
	cands    []dfsCand

	heuristic string
	nodesLeft int64 // per attempt
	nodes     int64 // total
	maxNodes  int64 // total cap (0: none)
	deadline  time.Time
	ctx       context.Context
	stopped   bool
	halt      *atomic.Bool // set by another worker of a portfolio
	halt2     *atomic.Bool // set by a worker outside the portfolio
	heur      []string     // the preorders this worker tries (dfsHeuristics)
	rseed     uint64       // seed of the random preorder key 'R'
}

// splitmix is the SplitMix64 finaliser (a bijective 64-bit mix).
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// newDFS builds the sections, overlaps and partitions of tl's live buffers.
// It returns nil when the instance is too large for the exact search (more
// than maxDFSBuffers live buffers or maxPairs time-overlapping pairs).
func newDFS(tl *timeline, maxPairs int) *dfs {
	live := 0
	for _, l := range tl.live {
		if l {
			live++
		}
	}
	if live > maxDFSBuffers || overlapPairs(tl) > maxPairs {
		return nil
	}
	d := &dfs{}
	startsAt, endsAt := d.index(tl)
	if !d.sweep(tl, startsAt, endsAt, maxPairs) {
		return nil
	}
	d.partition()
	m, ns := d.m, len(d.secs)
	d.off = make([]int64, m)
	d.minOff = make([]int64, m)
	d.pre = make([]int32, m)
	d.sol = make([]int64, m)
	d.floor = make([]int64, ns)
	d.total = make([]int64, ns)
	d.cuts = make([]int32, len(d.cuts0))
	d.wit = make([]int32, ns)
	return d
}

// index numbers tl's live buffers (d.idx, d.size, d.width, d.m) and
// returns them by start and end step.
func (d *dfs) index(tl *timeline) (startsAt, endsAt [][]int32) {
	startsAt = make([][]int32, tl.steps+1) // ends may equal tl.steps
	endsAt = make([][]int32, tl.steps+1)
	for i := 0; i < tl.n; i++ {
		if !tl.live[i] {
			continue
		}
		b := int32(len(d.idx))
		d.idx = append(d.idx, int32(i))
		d.size = append(d.size, tl.size[i])
		d.width = append(d.width, int64(tl.length[i]))
		startsAt[tl.s[i]] = append(startsAt[tl.s[i]], b)
		endsAt[tl.e[i]] = append(endsAt[tl.e[i]], b)
	}
	d.m = len(d.idx)
	return startsAt, endsAt
}

// sweep walks the steps, cutting sections (d.secs, d.secLo, d.secHi) and
// building the overlap graph (d.adj). It reports false when the overlap
// pairs exceed maxPairs.
func (d *dfs) sweep(tl *timeline, startsAt, endsAt [][]int32, maxPairs int) bool {
	m := d.m
	d.secLo = make([]int32, m)
	d.secHi = make([]int32, m)
	d.adj = make([][]int32, m)
	pos := make([]int32, m)
	var active []int32
	started := false
	pairs := 0
	for t := 0; t <= tl.steps; t++ {
		if len(endsAt[t]) > 0 && started {
			d.secs = append(d.secs, slices.Clone(active))
			started = false
		}
		for _, b := range endsAt[t] {
			d.secHi[b] = int32(len(d.secs))
			p := pos[b]
			last := active[len(active)-1]
			active[p], pos[last] = last, p
			active = active[:len(active)-1]
		}
		for _, b := range startsAt[t] {
			pairs += 2 * len(active)
			if pairs > maxPairs {
				return false
			}
			for _, x := range active {
				d.adj[b] = append(d.adj[b], x)
				d.adj[x] = append(d.adj[x], b)
			}
			d.secLo[b] = int32(len(d.secs))
			pos[b] = int32(len(active))
			active = append(active, b)
			started = true
		}
	}
	return true
}

// partition counts the buffers crossing each section boundary (d.cuts0)
// and splits the sections into the initial partitions (d.parts0).
func (d *dfs) partition() {
	m, ns := d.m, len(d.secs)
	if ns > 0 {
		d.cuts0 = make([]int32, ns-1)
	}
	for b := 0; b < m; b++ {
		for i := d.secLo[b]; i+1 < d.secHi[b]; i++ {
			d.cuts0[i]++
		}
	}
	// Initial partitions: maximal section ranges joined by non-zero cuts.
	lo := 0
	for i := 0; i < ns; i++ {
		if i == ns-1 || d.cuts0[i] == 0 {
			d.parts0 = append(d.parts0, dfsPart{lo: int32(lo), hi: int32(i + 1)})
			lo = i + 1
		}
	}
	for b := 0; b < m; b++ {
		// Partitions are sorted and disjoint: find the one holding secLo.
		k, _ := slices.BinarySearchFunc(d.parts0, d.secLo[b], func(p dfsPart, s int32) int {
			switch {
			case p.hi <= s:
				return -1
			case p.lo > s:
				return 1
			}
			return 0
		})
		d.parts0[k].bufs = append(d.parts0[k].bufs, int32(b))
	}
}

// overlapPairs counts the time-overlapping pairs of live buffers (both
// ways) in O(n log n): buffer b overlaps those that start before it ends,
// less those that end before it starts.
func overlapPairs(tl *timeline) int {
	var starts, ends []int32
	for i := 0; i < tl.n; i++ {
		if tl.live[i] {
			starts = append(starts, tl.s[i])
			ends = append(ends, tl.e[i])
		}
	}
	slices.Sort(starts)
	slices.Sort(ends)
	pairs := 0
	for i := 0; i < tl.n; i++ {
		if !tl.live[i] {
			continue
		}
		a, _ := slices.BinarySearch(starts, tl.e[i]) // starts < e
		b, _ := slices.BinarySearch(ends, tl.s[i]+1) // ends <= s
		pairs += a - b - 1
	}
	return pairs
}

// solve decides whether everything fits below capacity c using one preorder
// heuristic and at most nodeLimit nodes.
func (d *dfs) solve(c int64, heuristic string, nodeLimit int64) dfsStatus {
	d.c = c
	d.heuristic = heuristic
	d.nodesLeft = nodeLimit
	for b := range d.off {
		d.off[b] = -1
		d.minOff[b] = 0
		if d.size[b] > c {
			return dfsInfeasible
		}
	}
	clear(d.floor)
	clear(d.total)
	for s, mem := range d.secs {
		for _, b := range mem {
			d.total[s] += d.size[b]
		}
		if d.total[s] > c {
			return dfsInfeasible
		}
	}
	copy(d.cuts, d.cuts0)
	d.offLog, d.floorLog = d.offLog[:0], d.floorLog[:0]
	for _, p := range d.parts0 {
		if st := d.subSolve(p); st != dfsFound {
			return st
		}
	}
	return dfsFound
}

// subSolve preorders a partition's buffers and searches it from scratch.
func (d *dfs) subSolve(p dfsPart) dfsStatus {
	// Preorder keys: W = lifetime width, A = area, T = the largest unplaced
	// total among the buffer's sections; all descending, then index.
	key := func(b int32, c byte) int64 {
		switch c {
		case 'W':
			return d.width[b]
		case 'A':
			if w := d.width[b]; w > 0 && d.size[b] > math.MaxInt64/w {
				return math.MaxInt64
			}
			return d.width[b] * d.size[b]
		case 'Z':
			return d.size[b]
		case 'R':
			return int64(splitmix(uint64(b)^d.rseed) >> 2)
		}
		var t int64
		for s := d.secLo[b]; s < d.secHi[b]; s++ {
			t = max(t, d.total[s])
		}
		return t
	}
	type kb struct {
		k [3]int64
		b int32
	}
	ks := make([]kb, len(p.bufs))
	for i, b := range p.bufs {
		ks[i].b = b
		for j := 0; j < len(d.heuristic) && j < 3; j++ {
			ks[i].k[j] = key(b, d.heuristic[j])
		}
	}
	slices.SortFunc(ks, func(x, y kb) int {
		for j := range 3 {
			if x.k[j] != y.k[j] {
				if x.k[j] > y.k[j] {
					return -1
				}
				return 1
			}
		}
		return int(x.b - y.b)
	})
	saved := make([]int32, len(ks))
	for i, e := range ks {
		saved[i] = d.pre[e.b]
		d.pre[e.b] = int32(i)
	}
	st := d.search(p, 0, -1)
	for i, e := range ks {
		d.pre[e.b] = saved[i]
	}
	return st
}

// search is one node of the depth-first search within partition p; lastOff
// and lastPre describe the previous placement (canonical order).
func (d *dfs) search(p dfsPart, lastOff int64, lastPre int32) dfsStatus {
	if d.nodesLeft <= 0 {
		return dfsAborted
	}
	d.nodesLeft--
	d.nodes++
	if d.maxNodes > 0 && d.nodes >= d.maxNodes {
		d.stopped = true
	}
	if d.nodes&1023 == 0 && (time.Now().After(d.deadline) || d.ctx.Err() != nil) {
		d.stopped = true
	}
	if d.nodes&63 == 0 && ((d.halt != nil && d.halt.Load()) || (d.halt2 != nil && d.halt2.Load())) {
		d.stopped = true
	}
	if d.stopped {
		return dfsTimeout
	}
	minH := int64(-1)
	for _, b := range p.bufs {
		if d.off[b] < 0 {
			if h := d.minOff[b] + d.size[b]; minH < 0 || h < minH {
				minH = h
			}
		}
	}
	if minH < 0 {
		return dfsFound
	}
	base := len(d.cands)
	for _, b := range p.bufs {
		if d.off[b] >= 0 {
			continue
		}
		o := d.minOff[b]
		if o >= minH || o < lastOff || (o == lastOff && d.pre[b] < lastPre) {
			continue
		}
		d.cands = append(d.cands, dfsCand{o, d.pre[b], b})
	}
	cands := d.cands[base:]
	slices.SortFunc(cands, func(x, y dfsCand) int {
		if x.off != y.off {
			if x.off < y.off {
				return -1
			}
			return 1
		}
		return int(x.pre - y.pre)
	})
	// A candidate at offset o fails the check when some section of p has
	// o + total > c: outside the candidate's sections o exceeds c - total,
	// inside them its top exceeds c - (total - size). Offsets only grow
	// along cands, so the first such candidate ends the loop.
	var most int64
	for s := p.lo; s < p.hi; s++ {
		most = max(most, d.total[s])
	}
	for k := range cands {
		c := d.cands[base+k] // d.cands may have grown; index afresh
		if c.off+most > d.c {
			break
		}
		st := d.try(p, c)
		if st != dfsInfeasible {
			d.cands = d.cands[:base]
			return st
		}
	}
	d.cands = d.cands[:base]
	return dfsInfeasible
}

// try places candidate c, propagates, checks and recurses, then undoes.
func (d *dfs) try(p dfsPart, c dfsCand) dfsStatus {
	b, o := c.b, c.off
	top := o + d.size[b]
	d.off[b] = o
	d.sol[b] = o
	d.minOff[b] = noMin // placed buffers are never witnesses
	mOff, mFloor := len(d.offLog), len(d.floorLog)
	lo, hi := d.secLo[b], d.secHi[b]
	for s := lo; s < hi; s++ {
		d.floorLog = append(d.floorLog, floorChange{s, d.floor[s]})
		d.floor[s] = top
		d.total[s] -= d.size[b]
	}
	// wlo, whi: the sections whose witness may have changed (b's, and
	// those of every raised neighbour).
	wlo, whi := lo, hi
	for _, x := range d.adj[b] {
		old := d.minOff[x]
		if old >= top { // placed (noMin) or already high enough
			continue
		}
		d.offLog = append(d.offLog, offChange{x, old})
		d.minOff[x] = top
		wlo, whi = min(wlo, d.secLo[x]), max(whi, d.secHi[x])
	}
	status := dfsInfeasible
	if d.check(max(wlo, p.lo), min(whi, p.hi)) {
		status = d.decompose(p, b, o)
	}
	for i := len(d.floorLog) - 1; i >= mFloor; i-- {
		d.floor[d.floorLog[i].s] = d.floorLog[i].old
	}
	d.floorLog = d.floorLog[:mFloor]
	for s := lo; s < hi; s++ {
		d.total[s] += d.size[b]
	}
	for i := len(d.offLog) - 1; i >= mOff; i-- {
		d.minOff[d.offLog[i].b] = d.offLog[i].old
	}
	d.offLog = d.offLog[:mOff]
	d.off[b] = -1
	d.minOff[b] = o
	return status
}

// check applies cross-section inference after a placement at offset o:
// every unplaced buffer of a section lies above the section's floor (the
// top of its placed buffers), above its own minimum offset, and above o
// (placements are monotone), so all of them must fit above the highest of
// the floor, o and the smallest minimum offset of the section; with
// thr = c - total, the section fails when the floor or o exceeds thr, or
// when no unplaced buffer has a minimum offset at most thr. The first two
// need no test here: search's cut-off already ensured o + total <= c in
// every section of the partition before the placement, which covers o, and
// the placed buffer's own sections (its top is o + its size, their total
// fell by its size), while elsewhere floor and total are as the parent node
// checked them. Likewise a witness can only have been lost in the sections
// of the placed buffer and of the neighbours it raised, [lo, hi).
func (d *dfs) check(lo, hi int32) bool {
	for s := lo; s < hi; s++ {
		if d.total[s] != 0 && !d.witness(s, d.c-d.total[s]) {
			return false
		}
	}
	return true
}

// witness reports whether some unplaced member of section s has a minimum
// offset at most thr, starting from the last witness found.
func (d *dfs) witness(s int32, thr int64) bool {
	mem := d.secs[s]
	w := d.wit[s]
	if d.minOff[mem[w]] <= thr { // noMin for placed buffers
		return true
	}
	for i := w + 1; i < int32(len(mem)); i++ {
		if d.minOff[mem[i]] <= thr {
			d.wit[s] = i
			return true
		}
	}
	for i := int32(0); i < w; i++ {
		if d.minOff[mem[i]] <= thr {
			d.wit[s] = i
			return true
		}
	}
	return false
}

// decompose continues the search after placing b at o, splitting p where no
// unplaced buffer spans a section boundary any more.
func (d *dfs) decompose(p dfsPart, b int32, o int64) dfsStatus {
	var cutsBuf [8]int32
	cutpoints := cutsBuf[:0]
	for i := d.secLo[b]; i+1 < d.secHi[b]; i++ {
		d.cuts[i]--
		if d.cuts[i] == 0 {
			cutpoints = append(cutpoints, i+1)
		}
	}
	var status dfsStatus
	if len(cutpoints) == 0 {
		status = d.search(p, o, d.pre[b])
	} else {
		status = dfsFound
		lo := p.lo
		for k := 0; k <= len(cutpoints) && status == dfsFound; k++ {
			hi := p.hi
			if k < len(cutpoints) {
				hi = cutpoints[k]
			}
			var bufs []int32
			for _, x := range p.bufs {
				if d.off[x] < 0 && d.secLo[x] < hi && d.secHi[x] > lo {
					bufs = append(bufs, x)
				}
			}
			if len(bufs) > 0 {
				status = d.subSolve(dfsPart{lo: lo, hi: hi, bufs: bufs})
			}
			lo = hi
		}
	}
	for i := d.secLo[b]; i+1 < d.secHi[b]; i++ {
		d.cuts[i]++
	}
	return status
}

// dfsHeuristics are the static preorders tried round-robin (MiniMalloc's
// defaults: width, area and section total in three priorities), in the
// order of their node counts on the challenging set: alone, TWA proves A,
// E, F and G at their lower bound in 1.8k-45k nodes and TAW proves B in
// 38k, while WAT needs 252k for A and does not finish E, F or G within
// 1M nodes.
var dfsHeuristics = []string{"TWA", "TAW", "WAT"}

// feasible runs the round-robin search at capacity c until it finds a
// packing, proves there is none, or hits the deadline. On success the
// offsets (indexed like the timeline) are written to out.
func (d *dfs) feasible(c int64, out []int64) dfsStatus {
	limit := int64(max(d.m, 1))
	heur := d.heur
	if heur == nil {
		heur = dfsHeuristics
	}
	for {
		limit *= 2
		for _, h := range heur {
			switch st := d.solve(c, h, limit); st {
			case dfsFound:
				for b, i := range d.idx {
					out[i] = d.sol[b]
				}
				return st
			case dfsInfeasible, dfsTimeout:
				return st
			}
		}
	}
}

// portfolio runs feasible(c) on several workers at once, each with its own
// search state and its own share of the preorders (on 2 cores: TWA alone,
// and TAW with WAT); the first to find a
// packing or prove there is none stops the others. A refutation by any
// worker is a proof: each searches its whole tree when not stopped.
type portfolio struct {
	ws []*dfs
}

// newPortfolio returns k workers for tl, or nil when the instance is too
// large for the exact search.
func newPortfolio(tl *timeline, k int) *portfolio {
	p := &portfolio{}
	for w := range k {
		d := newDFS(tl, maxDFSPairs)
		if d == nil {
			return nil
		}
		for j, h := range dfsHeuristics {
			if min(j, k-1) == w { // the first workers get one each, the last the rest
				d.heur = append(d.heur, h)
			}
		}
		if len(d.heur) == 0 {
			d.heur = dfsHeuristics
		}
		p.ws = append(p.ws, d)
	}
	return p
}

// feasible decides capacity c; on success out holds the offsets. nodes is
// the total node count of the workers.
func (p *portfolio) feasible(ctx context.Context, c int64, deadline time.Time, out []int64) (st dfsStatus, nodes int64) {
	if len(p.ws) == 1 {
		d := p.ws[0]
		d.ctx, d.deadline, d.nodes, d.stopped, d.maxNodes = ctx, deadline, 0, false, 0
		st = d.feasible(c, out)
		return st, d.nodes
	}
	var halt atomic.Bool
	var mu sync.Mutex
	st = dfsTimeout
	var wg sync.WaitGroup
	for _, d := range p.ws {
		d.ctx, d.deadline, d.nodes, d.stopped, d.maxNodes, d.halt = ctx, deadline, 0, false, 0, &halt
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([]int64, len(out))
			r := d.feasible(c, mine)
			if r != dfsFound && r != dfsInfeasible {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if st == dfsTimeout {
				st = r
				if r == dfsFound {
					copy(out, mine)
				}
				halt.Store(true)
			}
		}()
	}
	wg.Wait()
	for _, d := range p.ws {
		nodes += d.nodes
	}
	return st, nodes
}
