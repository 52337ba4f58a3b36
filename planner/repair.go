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
	off := slices.Clone(best.Offsets)
	arena := best.Arena
	rng := rand.New(rand.NewPCG(uint64(s.opts.Seed), 0x5851f42d4c957f2d))
	// Live buffers by start, for window queries.
	var live []int32
	for i := 0; i < tl.n; i++ {
		if tl.live[i] {
			live = append(live, int32(i))
		}
	}
	if len(live) == 0 {
		return
	}
	pl := newPlacer(tl, true)
	st := &stopper{ctx: s.ctx, deadline: s.deadline}
	var tops, inner, outer []int32
	type kb struct {
		k float64
		b int32
	}
	var keys []kb
	newOff := make([]int64, tl.n)
	mark := make([]bool, tl.n)
	var coverSteps [][2]int32
	fails := 0
	maxInner := 4000
	for !s.expired() {
		s.work++
		if s.inc.arena.Load() < arena {
			// Another phase found better: continue from there.
			b, _ := s.inc.snapshot()
			copy(off, b.Offsets)
			arena = b.Arena
		}
		tops = tops[:0]
		for _, i := range live {
			if off[i]+tl.size[i] == arena {
				tops = append(tops, i)
			}
		}
		if len(tops) == 0 { // cannot happen: arena is the highest top
			return
		}
		b := tops[rng.IntN(len(tops))]
		inner, outer = inner[:0], outer[:0]
		// A time window around b, its margin log-uniform in compressed
		// steps; R is the window's interior, or with kind 1 only the part
		// of it above a random threshold below b (the upper band).
		kind := rng.IntN(2)
		span := float64(tl.e[b] - tl.s[b])
		margin := int(span * math.Exp(rng.Float64()*math.Log(float64(2+min(fails, 2000)))))
		w0 := max(0, int(tl.s[b])-rng.IntN(margin+1))
		w1 := min(tl.steps, int(tl.e[b])+rng.IntN(margin+1))
		thr := int64(-1)
		if kind == 1 {
			thr = off[b] - int64(float64(arena)*0.001*math.Exp(rng.Float64()*5))
		}
		for _, i := range live {
			if int(tl.s[i]) >= w0 && int(tl.e[i]) <= w1 && off[i]+tl.size[i] > thr {
				inner = append(inner, i)
			}
		}
		if len(inner) > maxInner {
			fails /= 2 // too wide: start smaller again
			continue
		}
		// Obstacles: every other buffer overlapping R's lifetimes.
		for _, i := range inner {
			mark[i] = true
		}
		cover := coverSteps[:0]
		for _, i := range inner {
			cover = append(cover, [2]int32{tl.s[i], tl.e[i]})
		}
		coverSteps = mergeSpans(cover)
		for _, i := range live {
			if !mark[i] && overlapsAny(coverSteps, tl.s[i], tl.e[i]) {
				outer = append(outer, i)
			}
		}
		for _, i := range inner {
			mark[i] = false
		}
		if s.opts.Deterministic {
			// Under a work cap a move costs its placements, so the cap
			// bounds the time whatever the neighbourhood's size.
			s.work += int64(len(inner) + len(outer))
		}
		oldTop, oldAt := int64(0), 0
		for _, i := range inner {
			t := off[i] + tl.size[i]
			if t > oldTop {
				oldTop, oldAt = t, 0
			}
			if t == arena {
				oldAt++
			}
		}
		// Rebuild: obstacles at their offsets, then R largest first with
		// noise.
		pl.undoTo(0)
		for _, i := range outer {
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
			if st.stop() {
				return
			}
		}
		// Order: R by current offset (with first fit this only compacts:
		// no buffer rises), then a few buffers (b among them) moved to
		// random earlier places; or, now and then, largest first with
		// noisy sizes and best fit.
		keys = keys[:0]
		pl.firstFit = rng.IntN(4) != 0
		if pl.firstFit {
			for _, i := range inner {
				keys = append(keys, kb{float64(off[i]), i})
			}
		} else {
			noise := [...]float64{0, 0.05, 0.2, 0.5}[rng.IntN(4)]
			for _, i := range inner {
				keys = append(keys, kb{-float64(tl.size[i]) * math.Exp(noise*rng.NormFloat64()), i})
			}
		}
		slices.SortFunc(keys, func(x, y kb) int {
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
		newTop, newAt := int64(0), 0
		ok := true
		for _, e := range keys {
			if st.stop() {
				return
			}
			o := pl.place(e.b)
			newOff[e.b] = o
			t := o + tl.size[e.b]
			if t > oldTop {
				ok = false
				break
			}
			newTop = max(newTop, t)
			if t == arena {
				newAt++
			}
		}
		if !ok || newAt > oldAt || (newAt == oldAt && (newTop > oldTop || rng.IntN(4) != 0)) {
			fails++
			continue
		}
		if newAt < oldAt {
			fails = 0
		}
		for _, e := range keys {
			off[e.b] = newOff[e.b]
		}
		if newAt < oldAt && newAt == 0 && len(tops) == oldAt {
			// No buffer reaches the old arena any more.
			arena = arenaOf(tl, off)
			s.offer(&Assignment{Offsets: slices.Clone(off), Arena: arena}, nil, PhaseRepair)
		}
	}
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
