package planner

import (
	"math"
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

// sortOrder sorts order stably by each key in turn, so the last key is the
// most significant and input order breaks the remaining ties (radix sorts,
// O(n) per key).
func sortOrder(order []int32, keys ...func(i int32) uint64) {
	k := make([]uint64, len(order))
	for _, key := range keys {
		for j, i := range order {
			k[j] = key(i)
		}
		radixSort(k, order)
	}
}

// orderBySize is greedy-by-size's order: larger first, then earlier start,
// then input order. (This tie rule reproduces the published greedy-by-size
// scores on all ten benchmark instances.)
func orderBySize(tl *timeline) []int32 {
	o := identity(tl.n)
	sortOrder(o,
		func(i int32) uint64 { return uint64(int64(tl.start[i]) + MaxStep) },
		func(i int32) uint64 { return ^uint64(tl.size[i]) })
	return o
}

// orderByLifetime is XLA kTemporal's order: longer lifetime (in the
// problem's own steps) first, then larger, then input order.
func orderByLifetime(tl *timeline) []int32 {
	o := identity(tl.n)
	sortOrder(o,
		func(i int32) uint64 { return ^uint64(tl.size[i]) },
		func(i int32) uint64 { return ^uint64(tl.length[i]) })
	return o
}

// orderByArea orders by size × lifetime, larger first.
func orderByArea(tl *timeline) []int32 {
	o := identity(tl.n)
	sortOrder(o,
		func(i int32) uint64 { return ^uint64(tl.size[i]) },
		func(i int32) uint64 {
			return ^math.Float64bits(float64(tl.size[i]) * float64(tl.length[i]))
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
	sortOrder(o,
		func(i int32) uint64 { return ^uint64(tl.size[i]) },
		func(i int32) uint64 { return uint64(step[i]) },
		func(i int32) uint64 { return ^uint64(br[step[i]]) },
		func(i int32) uint64 {
			if tl.live[i] {
				return 0
			}
			return 1
		})
	return o
}

// solveOrder decodes order with best-fit placement; it returns nil when st
// stops it first.
func solveOrder(tl *timeline, order []int32, st *stopper) *Assignment {
	pl := newPlacer(tl, false)
	pl.stop = st
	pl.decode(order, 0)
	if pl.aborted {
		return nil
	}
	return pl.assignment()
}

// solveOnline replays allocations and frees in time order through a
// best-fit free list with a growing tail (Gallocr without its free-block
// limit, and with classic best fit's tie rule: the lowest of equal blocks
// wins): at each step the buffers ending there are freed first (lifetimes
// are half-open), then the ones starting there are allocated in input order.
// The free blocks below the tail are kept in a treap ordered by (size,
// offset) and indexed by both ends, so each event is O(log n).
//
// It returns nil when st stops it first.
func solveOnline(tl *timeline, st *stopper) *Assignment {
	keys := make([]uint64, 0, 2*tl.n)
	ev := make([]int32, 0, 2*tl.n)
	for i := 0; i < tl.n; i++ {
		if tl.live[i] {
			// time, then frees before allocations, then input order.
			keys = append(keys, uint64(tl.s[i])<<33|1<<32|uint64(i), uint64(tl.e[i])<<33|uint64(i))
			ev = append(ev, int32(i), int32(i))
		}
	}
	radixSort(keys, ev)
	a := &Assignment{Offsets: make([]int64, tl.n)}
	fl := newFreeList()
	for k, i := range ev {
		if st.stop() {
			return nil
		}
		if keys[k]>>32&1 == 1 {
			a.Offsets[i] = fl.alloc(tl.size[i])
		} else {
			fl.free(a.Offsets[i], tl.size[i])
		}
	}
	a.Arena = fl.high
	return a
}

// freeList is a best-fit allocator over an unbounded heap: free blocks
// below the tail sit in a treap keyed by (size, offset); byStart and byEnd
// find a freed range's neighbours.
type freeList struct {
	tail    int64 // the free tail [tail, ∞)
	high    int64 // high-water mark
	byStart map[int64]int64
	byEnd   map[int64]int64 // end -> start
	t       treap
}

func newFreeList() *freeList {
	return &freeList{byStart: map[int64]int64{}, byEnd: map[int64]int64{}, t: treap{seed: 0x2545F4914F6CDD1D}}
}

func (f *freeList) alloc(size int64) int64 {
	if n := f.t.ceil(size); n >= 0 {
		off, bs := f.t.nodes[n].off, f.t.nodes[n].size
		f.remove(off, bs)
		if bs > size {
			f.add(off+size, bs-size)
		}
		return off
	}
	off := f.tail
	f.tail += size
	f.high = max(f.high, f.tail)
	return off
}

func (f *freeList) free(off, size int64) {
	if size == 0 {
		return
	}
	if s, ok := f.byEnd[off]; ok { // merge with the block before
		bs := off - s
		f.remove(s, bs)
		off, size = s, size+bs
	}
	if bs, ok := f.byStart[off+size]; ok { // merge with the block after
		f.remove(off+size, bs)
		size += bs
	}
	if off+size == f.tail {
		f.tail = off
		return
	}
	f.add(off, size)
}

func (f *freeList) add(off, size int64) {
	f.byStart[off] = size
	f.byEnd[off+size] = off
	f.t.insert(size, off)
}

func (f *freeList) remove(off, size int64) {
	delete(f.byStart, off)
	delete(f.byEnd, off+size)
	f.t.delete(size, off)
}

// treap is a randomized binary search tree of (size, off) keys stored in a
// slice (index 0 is unused as "nil").
type treap struct {
	nodes []treapNode
	root  int32
	free  []int32
	seed  uint64
}

type treapNode struct {
	size, off   int64
	prio        uint64
	left, right int32
}

func (t *treap) less(s1, o1, s2, o2 int64) bool {
	return s1 < s2 || (s1 == s2 && o1 < o2)
}

// split splits the subtree n into keys < (s, o) and keys >= (s, o).
func (t *treap) split(n int32, s, o int64) (int32, int32) {
	if n == 0 {
		return 0, 0
	}
	nd := &t.nodes[n]
	if t.less(nd.size, nd.off, s, o) {
		l, r := t.split(nd.right, s, o)
		t.nodes[n].right = l
		return n, r
	}
	l, r := t.split(nd.left, s, o)
	t.nodes[n].left = r
	return l, n
}

func (t *treap) merge(a, b int32) int32 {
	if a == 0 {
		return b
	}
	if b == 0 {
		return a
	}
	if t.nodes[a].prio > t.nodes[b].prio {
		t.nodes[a].right = t.merge(t.nodes[a].right, b)
		return a
	}
	t.nodes[b].left = t.merge(a, t.nodes[b].left)
	return b
}

func (t *treap) insert(size, off int64) {
	if len(t.nodes) == 0 {
		t.nodes = append(t.nodes, treapNode{})
	}
	t.seed ^= t.seed << 13
	t.seed ^= t.seed >> 7
	t.seed ^= t.seed << 17
	nd := treapNode{size: size, off: off, prio: t.seed}
	var n int32
	if k := len(t.free); k > 0 {
		n = t.free[k-1]
		t.free = t.free[:k-1]
		t.nodes[n] = nd
	} else {
		n = int32(len(t.nodes))
		t.nodes = append(t.nodes, nd)
	}
	l, r := t.split(t.root, size, off)
	t.root = t.merge(t.merge(l, n), r)
}

func (t *treap) delete(size, off int64) {
	l, r := t.split(t.root, size, off)
	// r's smallest key is (size, off): cut it off.
	m, rest := t.split(r, size, off+1)
	if m != 0 {
		t.free = append(t.free, m)
	}
	t.root = t.merge(l, rest)
}

// ceil returns the node with the smallest key >= (size, -inf): the best fit,
// lowest offset among equal sizes; -1 if none.
func (t *treap) ceil(size int64) int32 {
	n, best := t.root, int32(-1)
	for n != 0 {
		nd := &t.nodes[n]
		if nd.size >= size {
			best = n
			n = nd.left
		} else {
			n = nd.right
		}
	}
	return best
}
