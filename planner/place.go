package planner

import (
	"cmp"
	"slices"
)

// timeline is a problem with compressed times and aligned sizes, the form
// every strategy works on. Buffers that occupy no memory (empty lifetime or
// size 0) have live[i] == false and are always placed at offset 0.
type timeline struct {
	n      int
	s, e   []int32 // compressed half-open lifetimes
	start  []int   // original start steps
	length []int   // original lifetime lengths
	size   []int64 // aligned sizes
	live   []bool
	steps  int // number of distinct compressed times
	lb     int64
	align  int64
}

func newTimeline(p *Problem) *timeline {
	n := len(p.Buffers)
	tl := &timeline{
		n: n, start: make([]int, n), length: make([]int, n),
		size: make([]int64, n), live: make([]bool, n), align: p.align(),
	}
	for i, b := range p.Buffers {
		tl.size[i] = p.AlignedSize(i)
		tl.live[i] = p.live(i)
		tl.start[i], tl.length[i] = b.Start, b.End-b.Start
	}
	tl.s, tl.e, tl.steps = compressLifetimes(p)
	for _, b := range breadthOf(p, tl.s, tl.e, tl.steps) {
		tl.lb = max(tl.lb, b)
	}
	return tl
}

// grain returns the greatest common divisor of the live buffers' aligned
// sizes (1 when there are none).
func (tl *timeline) grain() int64 {
	var g int64
	for i, sz := range tl.size {
		if tl.live[i] && sz > 0 {
			a, b := g, sz
			for b != 0 {
				a, b = b, a%b
			}
			g = a
		}
	}
	return max(g, 1)
}

// span is an occupied address range [off, top).
type span struct{ off, top int64 }

// undoRec records one change to an interval list: at position pos a single
// merged span replaced the n spans saved at saved[at:at+n].
type undoRec struct {
	node, pos, n, at int32
	w                bool // W list (else U)
}

// placer places buffers one at a time, each into the smallest gap that fits
// among the already placed buffers whose lifetimes overlap its own (else on
// top of them): the inner step of TFLite's greedy-by-size and of XLA's
// GlobalDecreasingSizeBestFit.
//
// Only the union of the occupied address ranges over the new buffer's
// lifetime matters, so placed buffers are kept as merged unions in a segment
// tree over compressed time: U[v] is the union of the buffers whose canonical
// decomposition contains node v (they cover v's whole time range), W[v] the
// union of U over v's subtree. The buffers live somewhere in [s, e) are
// exactly those registered at a node inside the subtree of a canonical node
// of [s, e), or at an ancestor of one, so a query merges W of the O(log T)
// canonical nodes and U of their O(log T) ancestors. Unions collapse, so
// the lists stay short even on 18k-buffer traces. Every list change is
// logged, so placements can be undone in LIFO order, which lets the order
// search re-decode only the changed suffix of an order.
type placer struct {
	tl       *timeline
	p2       int
	u, w     [][]span
	need     []bool // W is kept only where need is set
	stamp    []int32
	cur      int32
	off      []int64
	placed   []bool
	stack    []int32
	marks    []int // undo-log length before each stacked placement
	arenaAt  []int64
	arena    int64
	log      []undoRec
	saved    []span
	scratch  []span
	nodes    []int32
	undo     bool // log list changes so that placements can be undone
	stop     *stopper
	firstFit bool // place at the lowest gap that fits instead of the smallest
	aborted  bool // decode stopped early: the placement is incomplete
}

// newPlacer returns an empty placer; with undo, placements can be undone
// one by one (undoTo), else only all at once (reset).
func newPlacer(tl *timeline, undo bool) *placer {
	p2 := 1
	for p2 < tl.steps {
		p2 <<= 1
	}
	pl := &placer{
		tl: tl, p2: p2,
		u: make([][]span, 2*p2), w: make([][]span, 2*p2),
		need:  make([]bool, 2*p2),
		stamp: make([]int32, 2*p2), undo: undo,
		off:    make([]int64, tl.n),
		placed: make([]bool, tl.n),
	}
	// Queries read W only at the canonical nodes of a buffer's lifetime:
	// keep W just there (on traces of short lifetimes the W lists of the
	// high nodes would be long and never read).
	for i := 0; i < tl.n; i++ {
		if tl.live[i] {
			for _, c := range pl.canonical(tl.s[i], tl.e[i]) {
				pl.need[c] = true
			}
		}
	}
	return pl
}

// canonical returns the canonical segment-tree nodes of [s, e).
func (pl *placer) canonical(s, e int32) []int32 {
	nodes := pl.nodes[:0]
	l, r := int(s)+pl.p2, int(e)+pl.p2
	for l < r {
		if l&1 == 1 {
			nodes = append(nodes, int32(l))
			l++
		}
		if r&1 == 1 {
			r--
			nodes = append(nodes, int32(r))
		}
		l >>= 1
		r >>= 1
	}
	pl.nodes = nodes
	return nodes
}

func (pl *placer) nextStamp() int32 {
	pl.cur++
	if pl.cur == 1<<30 {
		clear(pl.stamp)
		pl.cur = 1
	}
	return pl.cur
}

// bestFit returns the offset best-fit placement gives buffer b now.
func (pl *placer) bestFit(b int32) int64 {
	tl := pl.tl
	sc := pl.scratch[:0]
	st := pl.nextStamp()
	for _, c := range pl.canonical(tl.s[b], tl.e[b]) {
		sc = append(sc, pl.w[c]...)
		for a := c >> 1; a >= 1 && pl.stamp[a] != st; a >>= 1 {
			pl.stamp[a] = st
			sc = append(sc, pl.u[a]...)
		}
	}
	pl.scratch = sc
	if pl.firstFit {
		return firstGap(sc, tl.size[b])
	}
	return bestGap(sc, tl.size[b])
}

// firstGap sorts the occupied spans by offset and returns the start of the
// lowest gap of at least size bytes, or the top of the spans.
func firstGap(sc []span, size int64) int64 {
	sortSpans(sc)
	var prevTop int64
	for _, sp := range sc {
		if sp.off-prevTop >= size {
			return prevTop
		}
		prevTop = max(prevTop, sp.top)
	}
	return prevTop
}

// bestGap sorts the occupied spans by offset and returns the start of the
// smallest gap of at least size bytes (the lowest one among equals), or the
// top of the spans if none fits.
func bestGap(sc []span, size int64) int64 {
	if len(sc) == 0 {
		return 0
	}
	sortSpans(sc)
	var prevTop int64
	best, bestGap := int64(-1), int64(-1)
	for _, sp := range sc {
		if sp.off > prevTop {
			if g := sp.off - prevTop; g >= size && (best < 0 || g < bestGap) {
				best, bestGap = prevTop, g
				if g == size {
					return best
				}
			}
		}
		prevTop = max(prevTop, sp.top)
	}
	if best >= 0 {
		return best
	}
	return prevTop
}

// sortSpans sorts by offset. It is a plain quicksort (median of three,
// insertion sort below 16 elements) with the comparison inlined, falling back
// to the standard library's pdqsort if the recursion gets deep; this is the
// hot loop of every best-fit strategy.
func sortSpans(sc []span) { quickSpans(sc, 64) }

func quickSpans(a []span, depth int) {
	for len(a) > 16 {
		if depth == 0 {
			slices.SortFunc(a, func(x, y span) int { return cmp.Compare(x.off, y.off) })
			return
		}
		depth--
		m := len(a) / 2
		// median of three into a[m]
		if a[m].off < a[0].off {
			a[m], a[0] = a[0], a[m]
		}
		if a[len(a)-1].off < a[m].off {
			a[m], a[len(a)-1] = a[len(a)-1], a[m]
			if a[m].off < a[0].off {
				a[m], a[0] = a[0], a[m]
			}
		}
		pivot := a[m].off
		i, j := 0, len(a)-1
		for i <= j {
			for a[i].off < pivot {
				i++
			}
			for a[j].off > pivot {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		// recurse into the smaller part, loop on the larger
		if j+1 < len(a)-i {
			quickSpans(a[:j+1], depth)
			a = a[i:]
		} else {
			quickSpans(a[i:], depth)
			a = a[:j+1]
		}
	}
	for i := 1; i < len(a); i++ {
		v := a[i]
		j := i
		for j > 0 && a[j-1].off > v.off {
			a[j] = a[j-1]
			j--
		}
		a[j] = v
	}
}

// place puts buffer b at its best-fit offset and returns the offset.
func (pl *placer) place(b int32) int64 {
	off := int64(0)
	if pl.tl.live[b] {
		off = pl.bestFit(b)
	}
	pl.put(b, off)
	return off
}

// insert merges sp into the sorted disjoint list of node v (W list if w)
// and logs the change.
func (pl *placer) insert(v int32, w bool, sp span) {
	lp := &pl.u[v]
	if w {
		lp = &pl.w[v]
	}
	list := *lp
	// First span that ends at or after sp.off, and first that starts after sp.top.
	i, hi := 0, len(list)
	for i < hi {
		m := int(uint(i+hi) >> 1)
		if list[m].top < sp.off {
			i = m + 1
		} else {
			hi = m
		}
	}
	j := i
	for j < len(list) && list[j].off <= sp.top {
		j++
	}
	if j-i == 1 && list[i].off <= sp.off && list[i].top >= sp.top {
		return // already covered
	}
	if pl.undo {
		pl.log = append(pl.log, undoRec{node: v, w: w, pos: int32(i), n: int32(j - i), at: int32(len(pl.saved))})
		pl.saved = append(pl.saved, list[i:j]...)
	}
	merged := sp
	if j > i {
		merged.off = min(merged.off, list[i].off)
		merged.top = max(merged.top, list[j-1].top)
		list[i] = merged
		list = append(list[:i+1], list[j:]...)
	} else {
		list = slices.Insert(list, i, merged)
	}
	*lp = list
}

// revert undoes one logged list change.
func (pl *placer) revert(r undoRec) {
	lp := &pl.u[r.node]
	if r.w {
		lp = &pl.w[r.node]
	}
	list := *lp
	i := int(r.pos)
	if r.n == 0 {
		list = slices.Delete(list, i, i+1)
	} else {
		old := pl.saved[r.at : r.at+r.n]
		list = slices.Replace(list, i, i+1, old...)
		pl.saved = pl.saved[:r.at]
	}
	*lp = list
}

// put records buffer b at offset off.
func (pl *placer) put(b int32, off int64) {
	pl.putRange(b, off, pl.tl.s[b], pl.tl.e[b])
}

// putRange records buffer b at offset off as if it lived over [s, e) only
// (a part of its lifetime, for obstacles that matter only there).
func (pl *placer) putRange(b int32, off int64, s, e int32) {
	tl := pl.tl
	pl.off[b] = off
	pl.placed[b] = true
	pl.stack = append(pl.stack, b)
	if pl.undo {
		pl.arenaAt = append(pl.arenaAt, pl.arena)
		pl.marks = append(pl.marks, len(pl.log))
	}
	if !tl.live[b] {
		return
	}
	sp := span{off, off + tl.size[b]}
	pl.arena = max(pl.arena, sp.top)
	st := pl.nextStamp()
	for _, c := range pl.canonical(s, e) {
		pl.insert(c, false, sp)
		for a := c; a >= 1 && pl.stamp[a] != st; a >>= 1 {
			pl.stamp[a] = st
			if pl.need[a] {
				pl.insert(a, true, sp)
			}
		}
	}
}

// undoTo pops placements until k remain (k must be 0 without undo).
func (pl *placer) undoTo(k int) {
	if !pl.undo {
		if k != 0 {
			panic("planner: placer without undo log cannot undo a suffix")
		}
		for v := range pl.u {
			pl.u[v], pl.w[v] = pl.u[v][:0], pl.w[v][:0]
		}
		for _, b := range pl.stack {
			pl.placed[b] = false
		}
		pl.stack, pl.arenaAt, pl.marks = pl.stack[:0], pl.arenaAt[:0], pl.marks[:0]
		pl.arena = 0
		return
	}
	for len(pl.stack) > k {
		last := len(pl.stack) - 1
		b := pl.stack[last]
		for len(pl.log) > pl.marks[last] {
			pl.revert(pl.log[len(pl.log)-1])
			pl.log = pl.log[:len(pl.log)-1]
		}
		pl.arena = pl.arenaAt[last]
		pl.stack = pl.stack[:last]
		pl.arenaAt = pl.arenaAt[:last]
		pl.marks = pl.marks[:last]
		pl.placed[b] = false
	}
}

// decode places the buffers in order (a permutation of all buffers) after
// undoing placements beyond the first keep (which must equal order[:keep])
// and returns the arena.
func (pl *placer) decode(order []int32, keep int) int64 {
	keep = min(keep, len(pl.stack))
	if !pl.undo {
		keep = 0
	}
	pl.undoTo(keep)
	pl.aborted = false
	for _, b := range order[keep:] {
		if pl.stop.stop() {
			pl.aborted = true
			break
		}
		pl.place(b)
	}
	return pl.arena
}

// assignment copies the current offsets into an Assignment.
func (pl *placer) assignment() *Assignment {
	return &Assignment{Offsets: slices.Clone(pl.off), Arena: pl.arena}
}
