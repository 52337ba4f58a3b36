package planner

import (
	"cmp"
	"slices"
)

// solveNaive gives every buffer its own range, in input order.
func solveNaive(tl *timeline) *Assignment {
	a := &Assignment{Offsets: make([]int64, tl.n)}
	var top int64
	for i := 0; i < tl.n; i++ {
		if tl.live[i] {
			a.Offsets[i] = top
			top += tl.size[i]
		}
	}
	a.Arena = top
	return a
}

// identity returns 0..n-1.
func identity(n int) []int32 {
	o := make([]int32, n)
	for i := range o {
		o[i] = int32(i)
	}
	return o
}

// orderBySize is greedy-by-size's order: larger first, then earlier start,
// then input order. (This tie rule reproduces the published greedy-by-size
// scores on all ten benchmark instances.)
func orderBySize(tl *timeline) []int32 {
	o := identity(tl.n)
	slices.SortStableFunc(o, func(a, b int32) int {
		if c := cmp.Compare(tl.size[b], tl.size[a]); c != 0 {
			return c
		}
		return cmp.Compare(tl.start[a], tl.start[b])
	})
	return o
}

// orderByLifetime is XLA kTemporal's order: longer lifetime (in the
// problem's own steps) first, then larger, then input order.
func orderByLifetime(tl *timeline) []int32 {
	o := identity(tl.n)
	slices.SortStableFunc(o, func(a, b int32) int {
		if c := cmp.Compare(tl.length[b], tl.length[a]); c != 0 {
			return c
		}
		return cmp.Compare(tl.size[b], tl.size[a])
	})
	return o
}

// orderByArea orders by size × lifetime, larger first.
func orderByArea(tl *timeline) []int32 {
	o := identity(tl.n)
	area := func(i int32) float64 { return float64(tl.size[i]) * float64(tl.length[i]) }
	slices.SortStableFunc(o, func(a, b int32) int {
		if c := cmp.Compare(area(b), area(a)); c != 0 {
			return c
		}
		return cmp.Compare(tl.size[b], tl.size[a])
	})
	return o
}

// stepBreadths returns, for each compressed step t, the sum of aligned sizes
// live over [t, t+1).
func stepBreadths(tl *timeline) []int64 {
	d := make([]int64, tl.steps+1)
	for i := 0; i < tl.n; i++ {
		if tl.live[i] {
			d[tl.s[i]] += tl.size[i]
			d[tl.e[i]] -= tl.size[i]
		}
	}
	var cur int64
	for t := range d {
		cur += d[t]
		d[t] = cur
	}
	return d[:max(tl.steps, 1)]
}

// orderByBreadth is greedy-by-breadth's order (Pisarchyk & Lee): steps by
// decreasing breadth (live bytes, earlier step first on ties), and within a
// step its not yet ordered tensors largest first. A buffer is therefore
// taken at the widest step of its lifetime; a sparse table answers that
// range-maximum query in O(1).
func orderByBreadth(tl *timeline) []int32 {
	br := stepBreadths(tl)
	n := len(br)
	// sparse[k][t] = argmax of br over [t, t+2^k), earliest on ties.
	sparse := [][]int32{make([]int32, n)}
	for t := range sparse[0] {
		sparse[0][t] = int32(t)
	}
	better := func(a, b int32) int32 {
		if br[b] > br[a] || (br[b] == br[a] && b < a) {
			return b
		}
		return a
	}
	for k := 1; 1<<k <= n; k++ {
		prev := sparse[k-1]
		cur := make([]int32, n-(1<<k)+1)
		for t := range cur {
			cur[t] = better(prev[t], prev[t+1<<(k-1)])
		}
		sparse = append(sparse, cur)
	}
	argmax := func(l, r int) int32 { // over [l, r), r > l
		k := 0
		for 1<<(k+1) <= r-l {
			k++
		}
		return better(sparse[k][l], sparse[k][r-(1<<k)])
	}
	step := make([]int32, tl.n)
	for i := range step {
		if tl.live[i] {
			step[i] = argmax(int(tl.s[i]), int(tl.e[i]))
		}
	}
	o := identity(tl.n)
	slices.SortStableFunc(o, func(a, b int32) int {
		if tl.live[a] != tl.live[b] {
			if tl.live[a] {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(br[step[b]], br[step[a]]); c != 0 {
			return c
		}
		if c := cmp.Compare(step[a], step[b]); c != 0 {
			return c
		}
		return cmp.Compare(tl.size[b], tl.size[a])
	})
	return o
}

// solveOrder decodes order with best-fit placement.
func solveOrder(tl *timeline, order []int32) *Assignment {
	pl := newPlacer(tl, false)
	pl.decode(order, 0)
	return pl.assignment()
}

// solveOnline replays allocations and frees in time order through a
// best-fit free list with a growing tail (Gallocr without its free-block
// limit, and with classic best fit's tie rule: the lowest of equal blocks
// wins): at each step the buffers ending there are freed first (lifetimes
// are half-open), then the ones starting there are allocated in input order.
func solveOnline(tl *timeline) *Assignment {
	type event struct {
		t     int32
		alloc bool
		i     int32
	}
	ev := make([]event, 0, 2*tl.n)
	for i := 0; i < tl.n; i++ {
		if tl.live[i] {
			ev = append(ev, event{tl.s[i], true, int32(i)}, event{tl.e[i], false, int32(i)})
		}
	}
	slices.SortFunc(ev, func(a, b event) int {
		if c := cmp.Compare(a.t, b.t); c != 0 {
			return c
		}
		if a.alloc != b.alloc {
			if a.alloc {
				return 1
			}
			return -1
		}
		return cmp.Compare(a.i, b.i)
	})
	g := newGallocr(1, 0, false)
	a := &Assignment{Offsets: make([]int64, tl.n)}
	for _, e := range ev {
		if e.alloc {
			// Cannot fail: sizes are checked and the tail block is huge.
			off, _ := g.Alloc(tl.size[e.i])
			a.Offsets[e.i] = off
		} else {
			_ = g.Free(a.Offsets[e.i], tl.size[e.i])
		}
	}
	a.Arena = g.MaxSize()
	return a
}
