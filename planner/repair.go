package planner

import (
	"math"
	"math/rand/v2"
	"slices"
)

// repair is a large-neighbourhood search around the arena's top, our own
// design in the spirit of LNS (Shaw, "Using Constraint Programming and Local
// Search Methods to Solve Vehicle Routing Problems", CP 1998): destroy part
// of the solution, rebuild it, keep the result if it is no worse.
//
// Each move picks a buffer b whose top is the arena and a time window
// around b's lifetime (a log-uniform margin that widens while moves fail).
// R is the window's interior (the buffers living only inside it), or only
// the part of it above a random threshold below b. Every other buffer keeps
// its offset; those overlapping R's lifetimes are obstacles, registered
// only over those lifetimes. R is rebuilt in one of two ways: by current
// offset with first fit (which alone only compacts: no buffer rises) after
// moving b and up to two others to random earlier places, or largest first
// with noisy sizes and best fit. The move is kept when no buffer of R rises
// above R's old highest top and fewer reach the arena (or as many, now and
// then, to drift across plateaus). When none reaches the arena any more the
// arena has shrunk and the solution goes to the incumbent. A move costs
// O((|R| + obstacles) log T) plus O(n) scans, so it runs on any size.
func (s *searcher) repair() {
	tl := s.tl
	best, _ := s.inc.snapshot()
	if best == nil || tl.n == 0 {
		return
	}
	r := &repairer{
		s:     s,
		tl:    tl,
		off:   slices.Clone(best.Offsets),
		arena: best.Arena,
		rng:   rand.New(rand.NewPCG(uint64(s.opts.Seed), 0x5851f42d4c957f2d)),
	}
	// Live buffers by start, for window queries.
	for i := 0; i < tl.n; i++ {
		if tl.live[i] {
			r.live = append(r.live, int32(i))
		}
	}
	if len(r.live) == 0 {
		return
	}
	r.pl = newPlacer(tl, true)
	r.st = &stopper{ctx: s.ctx, deadline: s.deadline}
	r.newOff = make([]int64, tl.n)
	r.mark = make([]bool, tl.n)
	for !s.expired() {
		s.work++
		if !r.move() {
			return
		}
	}
}

// repairKey orders R's buffers for the rebuild.
type repairKey struct {
	k float64
	b int32
}

// repairer is the state of one repair run: the current solution and the
// scratch reused by every move, so a move allocates nothing.
type repairer struct {
	s     *searcher
	tl    *timeline
	rng   *rand.Rand
	pl    *placer
	st    *stopper
	live  []int32 // live buffers by start
	off   []int64 // the current solution
	arena int64
	fails int

	tops, inner, outer []int32
	keys               []repairKey
	newOff             []int64
	mark               []bool
	coverSteps         [][2]int32
}

// maxRepairInner bounds R: a wider window halves the margin instead.
const maxRepairInner = 4000

// move makes one destroy-and-rebuild move. It reports false when the
// search must stop (stopped, or no buffer at the arena's top).
func (r *repairer) move() bool {
	tl, off := r.tl, r.off
	if r.s.inc.arena.Load() < r.arena {
		// Another phase found better: continue from there.
		b, _ := r.s.inc.snapshot()
		copy(off, b.Offsets)
		r.arena = b.Arena
	}
	r.tops = r.tops[:0]
	for _, i := range r.live {
		if off[i]+tl.size[i] == r.arena {
			r.tops = append(r.tops, i)
		}
	}
	if len(r.tops) == 0 { // cannot happen: arena is the highest top
		return false
	}
	b := r.tops[r.rng.IntN(len(r.tops))]
	if !r.pickWindow(b) {
		r.fails /= 2 // too wide: start smaller again
		return true
	}
	r.collectObstacles()
	oldTop, oldAt := int64(0), 0
	for _, i := range r.inner {
		t := off[i] + tl.size[i]
		if t > oldTop {
			oldTop, oldAt = t, 0
		}
		if t == r.arena {
			oldAt++
		}
	}
	// Rebuild: obstacles at their offsets, then R largest first with
	// noise.
	if !r.placeObstacles() {
		return false
	}
	r.orderInner(b)
	newTop, newAt, ok, stopped := r.placeInner(oldTop)
	if stopped {
		return false
	}
	if !ok || newAt > oldAt || (newAt == oldAt && (newTop > oldTop || r.rng.IntN(4) != 0)) {
		r.fails++
		return true
	}
	if newAt < oldAt {
		r.fails = 0
	}
	for _, e := range r.keys {
		off[e.b] = r.newOff[e.b]
	}
	if newAt < oldAt && newAt == 0 && len(r.tops) == oldAt {
		// No buffer reaches the old arena any more.
		r.arena = arenaOf(tl, off)
		r.s.offer(&Assignment{Offsets: slices.Clone(off), Arena: r.arena}, nil, PhaseRepair)
	}
	return true
}

// pickWindow sets R (r.inner) for a move around b. It reports false when
// R would exceed maxRepairInner.
func (r *repairer) pickWindow(b int32) bool {
	tl, off, rng := r.tl, r.off, r.rng
	r.inner, r.outer = r.inner[:0], r.outer[:0]
	// A time window around b, its margin log-uniform in compressed
	// steps; R is the window's interior, or with kind 1 only the part
	// of it above a random threshold below b (the upper band).
	kind := rng.IntN(2)
	span := float64(tl.e[b] - tl.s[b])
	margin := int(span * math.Exp(rng.Float64()*math.Log(float64(2+min(r.fails, 2000)))))
	w0 := max(0, int(tl.s[b])-rng.IntN(margin+1))
	w1 := min(tl.steps, int(tl.e[b])+rng.IntN(margin+1))
	thr := int64(-1)
	if kind == 1 {
		thr = off[b] - int64(float64(r.arena)*0.001*math.Exp(rng.Float64()*5))
	}
	for _, i := range r.live {
		if int(tl.s[i]) >= w0 && int(tl.e[i]) <= w1 && off[i]+tl.size[i] > thr {
			r.inner = append(r.inner, i)
		}
	}
	return len(r.inner) <= maxRepairInner
}

// collectObstacles sets r.outer to every other buffer overlapping R's
// lifetimes, and r.coverSteps to those lifetimes merged.
func (r *repairer) collectObstacles() {
	tl, mark := r.tl, r.mark
	for _, i := range r.inner {
		mark[i] = true
	}
	cover := r.coverSteps[:0]
	for _, i := range r.inner {
		cover = append(cover, [2]int32{tl.s[i], tl.e[i]})
	}
	r.coverSteps = mergeSpans(cover)
	for _, i := range r.live {
		if !mark[i] && overlapsAny(r.coverSteps, tl.s[i], tl.e[i]) {
			r.outer = append(r.outer, i)
		}
	}
	for _, i := range r.inner {
		mark[i] = false
	}
	if r.s.opts.Deterministic {
		// Under a work cap a move costs its placements, so the cap bounds
		// the time whatever the neighbourhood's size.
		r.s.work += int64(len(r.inner) + len(r.outer))
	}
}

// placeObstacles registers the obstacles at their offsets over R's time
// cover. It reports false when the search must stop.
func (r *repairer) placeObstacles() bool {
	tl, off, pl, coverSteps := r.tl, r.off, r.pl, r.coverSteps
	pl.undoTo(0)
	for _, i := range r.outer {
		// Only the part inside R's time cover matters.
		k, _ := slices.BinarySearchFunc(coverSteps, tl.s[i], func(r [2]int32, t int32) int {
			if r[1] <= t {
				return -1
			}
			return 1
		})
		lo := max(tl.s[i], coverSteps[k][0])
		hi := tl.e[i]
		if last := coverSteps[len(coverSteps)-1][1]; hi > last {
			hi = last
		}
		pl.putRange(i, off[i], lo, hi)
		if r.st.stop() {
			return false
		}
	}
	return true
}

// orderInner sets r.keys, the order R is rebuilt in, and the placer's fit.
func (r *repairer) orderInner(b int32) {
	tl, off, rng, pl := r.tl, r.off, r.rng, r.pl
	// Order: R by current offset (with first fit this only compacts:
	// no buffer rises), then a few buffers (b among them) moved to
	// random earlier places; or, now and then, largest first with
	// noisy sizes and best fit.
	keys := r.keys[:0]
	pl.firstFit = rng.IntN(4) != 0
	if pl.firstFit {
		for _, i := range r.inner {
			keys = append(keys, repairKey{float64(off[i]), i})
		}
	} else {
		noise := [...]float64{0, 0.05, 0.2, 0.5}[rng.IntN(4)]
		for _, i := range r.inner {
			keys = append(keys, repairKey{-float64(tl.size[i]) * math.Exp(noise*rng.NormFloat64()), i})
		}
	}
	slices.SortFunc(keys, func(x, y repairKey) int {
		if x.k != y.k {
			if x.k < y.k {
				return -1
			}
			return 1
		}
		return int(x.b - y.b)
	})
	if pl.firstFit {
		for range 1 + rng.IntN(3) {
			from := rng.IntN(len(keys))
			if rng.IntN(2) == 0 {
				for k := range keys {
					if keys[k].b == b {
						from = k
					}
				}
			}
			to := rng.IntN(from + 1)
			e := keys[from]
			copy(keys[to+1:from+1], keys[to:from])
			keys[to] = e
		}
	}
	r.keys = keys
}

// placeInner places R in r.keys order into r.newOff. ok is false when a
// buffer rises above oldTop; stopped when the search must stop.
func (r *repairer) placeInner(oldTop int64) (newTop int64, newAt int, ok, stopped bool) {
	tl, pl := r.tl, r.pl
	ok = true
	for _, e := range r.keys {
		if r.st.stop() {
			return newTop, newAt, ok, true
		}
		o := pl.place(e.b)
		r.newOff[e.b] = o
		t := o + tl.size[e.b]
		if t > oldTop {
			ok = false
			break
		}
		newTop = max(newTop, t)
		if t == r.arena {
			newAt++
		}
	}
	return newTop, newAt, ok, false
}

// mergeSpans sorts and merges half-open step ranges.
func mergeSpans(v [][2]int32) [][2]int32 {
	slices.SortFunc(v, func(a, b [2]int32) int { return int(a[0] - b[0]) })
	out := v[:0]
	for _, r := range v {
		if k := len(out); k > 0 && r[0] <= out[k-1][1] {
			out[k-1][1] = max(out[k-1][1], r[1])
			continue
		}
		out = append(out, r)
	}
	return out
}

// overlapsAny reports whether [s, e) overlaps one of the merged ranges.
func overlapsAny(v [][2]int32, s, e int32) bool {
	// First range ending after s.
	k, _ := slices.BinarySearchFunc(v, s, func(r [2]int32, t int32) int {
		if r[1] <= t {
			return -1
		}
		return 1
	})
	return k < len(v) && v[k][0] < e
}
