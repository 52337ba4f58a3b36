package planner

import (
	"context"
	"slices"
	"time"
)

// This file holds the O(n log n) building blocks every strategy relies on
// for large instances: a radix sort of 64-bit keys, lifetime compression,
// and the segment tree that validates a solution.

// radixSort sorts keys ascending and permutes val along with them (a stable
// least-significant-byte radix sort; passes whose byte is the same in every
// key are skipped, so small keys cost few passes).
func radixSort(keys []uint64, val []int32) {
	n := len(keys)
	if n < 2 {
		return
	}
	var or, and uint64 = 0, ^uint64(0)
	for _, k := range keys {
		or |= k
		and &= k
	}
	diff := or ^ and // bits that vary
	tk := make([]uint64, n)
	tv := make([]int32, n)
	src, dst := keys, tk
	sv, dv := val, tv
	for shift := uint(0); shift < 64; shift += 8 {
		if (diff>>shift)&0xff == 0 {
			continue
		}
		var cnt [257]int
		for _, k := range src {
			cnt[(k>>shift)&0xff+1]++
		}
		for i := 1; i < 257; i++ {
			cnt[i] += cnt[i-1]
		}
		for i, k := range src {
			b := (k >> shift) & 0xff
			p := cnt[b]
			cnt[b]++
			dst[p] = k
			dv[p] = sv[i]
		}
		src, dst = dst, src
		sv, dv = dv, sv
	}
	if &src[0] != &keys[0] {
		copy(keys, src)
		copy(val, sv)
	}
}

// compressLifetimes maps the lifetimes of p's live buffers to ranks among
// the distinct start steps: buffer i lives over [s[i], e[i]) of steps
// compressed steps, where s[i] is the rank of its start and e[i] the number
// of distinct starts before its end (both 0 for buffers that are not live).
// Two buffers overlap in time exactly when their compressed lifetimes do,
// and every step's live set is that of some compressed step. It runs in
// O(n) radix passes.
func compressLifetimes(p *Problem) (s, e []int32, steps int) {
	n := len(p.Buffers)
	s, e = make([]int32, n), make([]int32, n)
	keys := make([]uint64, 0, 2*n)
	ev := make([]int32, 0, 2*n) // 2i: start of i, 2i+1: end of i
	for i, b := range p.Buffers {
		if !p.live(i) {
			continue
		}
		// Ends sort before starts at the same step (half-open lifetimes).
		keys = append(keys, uint64(int64(b.Start)+MaxStep)<<1|1, uint64(int64(b.End)+MaxStep)<<1)
		ev = append(ev, int32(2*i), int32(2*i+1))
	}
	radixSort(keys, ev)
	count := int32(0) // distinct starts so far
	last := uint64(0)
	for k, x := range ev {
		if x&1 == 1 {
			e[x>>1] = count
			continue
		}
		if count == 0 || keys[k] != last {
			count++
			last = keys[k]
		}
		s[x>>1] = count - 1
	}
	return s, e, int(count)
}

// breadthOf returns, for each compressed step t, the sum of aligned sizes
// live over [t, t+1), given compressed lifetimes.
func breadthOf(p *Problem, s, e []int32, steps int) []int64 {
	d := make([]int64, steps+1)
	for i := range p.Buffers {
		if p.live(i) {
			sz := p.AlignedSize(i)
			d[s[i]] += sz
			d[e[i]] -= sz
		}
	}
	var cur int64
	for t := range d {
		cur += d[t]
		d[t] = cur
	}
	return d[:max(steps, 1)]
}

// coverTree is a segment tree over compressed steps supporting "add v to
// every step of [l, r)" and "maximum over [l, r)", both O(log T) and
// iterative: mx[x] is the maximum of x's range counting only the additions
// stored at x and below, lz[x] what was added to x's whole range.
type coverTree struct {
	n, h   int
	mx, lz []int32
}

func newCoverTree(steps int) *coverTree {
	n, h := 1, 0
	for n < steps {
		n <<= 1
		h++
	}
	return &coverTree{n: n, h: h, mx: make([]int32, 2*n), lz: make([]int32, 2*n)}
}

// push moves the pending additions of the ancestors of x and y down to
// their children.
func (c *coverTree) push(x, y int) {
	for s := c.h; s > 0; s-- {
		i := x >> s
		c.pushOne(i)
		if j := y >> s; j != i {
			c.pushOne(j)
		}
	}
}

func (c *coverTree) pushOne(i int) {
	if d := c.lz[i]; d != 0 {
		c.mx[2*i] += d
		c.lz[2*i] += d
		c.mx[2*i+1] += d
		c.lz[2*i+1] += d
		c.lz[i] = 0
	}
}

func (c *coverTree) add(l, r int32, v int32) {
	if l >= r {
		return
	}
	l0, r0 := int(l)+c.n, int(r)+c.n-1
	for a, b := int(l)+c.n, int(r)+c.n; a < b; a, b = a>>1, b>>1 {
		if a&1 == 1 {
			c.mx[a] += v
			c.lz[a] += v
			a++
		}
		if b&1 == 1 {
			b--
			c.mx[b] += v
			c.lz[b] += v
		}
	}
	for l0 > 1 {
		l0, r0 = l0>>1, r0>>1
		c.mx[l0] = max(c.mx[2*l0], c.mx[2*l0+1]) + c.lz[l0]
		if r0 != l0 {
			c.mx[r0] = max(c.mx[2*r0], c.mx[2*r0+1]) + c.lz[r0]
		}
	}
}

func (c *coverTree) max(l, r int32) int32 {
	res := int32(-1 << 30)
	if l >= r {
		return res
	}
	c.push(int(l)+c.n, int(r)+c.n-1)
	for a, b := int(l)+c.n, int(r)+c.n; a < b; a, b = a>>1, b>>1 {
		if a&1 == 1 {
			res = max(res, c.mx[a])
			a++
		}
		if b&1 == 1 {
			b--
			res = max(res, c.mx[b])
		}
	}
	return res
}

// firstDuplicate returns the positions (first, second) of the duplicate
// in ids whose second occurrence comes first, or (-1, -1).
func firstDuplicate(ids []int) (int, int) {
	keys := make([]uint64, len(ids))
	pos := make([]int32, len(ids))
	for i, id := range ids {
		keys[i] = uint64(id) ^ 1<<63
		pos[i] = int32(i)
	}
	radixSort(keys, pos) // stable: equal ids stay in input order
	fi, se := -1, -1
	for k := 1; k < len(keys); k++ {
		if keys[k] == keys[k-1] && (k < 2 || keys[k-2] != keys[k]) {
			if se < 0 || int(pos[k]) < se {
				fi, se = int(pos[k-1]), int(pos[k])
			}
		}
	}
	return fi, se
}

// findOverlap sweeps the live buffers in address order (ends before starts
// at the same address), keeping the buffers whose address range is open: a
// buffer overlaps one of them exactly when their lifetimes meet. While at
// most 8 ranges are open they sit in a list and are compared directly;
// beyond that a coverage count over time in a segment tree answers (a
// buffer whose lifetime is already covered when its range opens overlaps
// an open one) until no range is open again. It returns such a pair, or
// (-1, -1). O(n log n).
func findOverlap(p *Problem, off []int64, s, e []int32, steps int) (int, int) {
	keys := make([]uint64, 0, 2*len(p.Buffers))
	ev := make([]int32, 0, 2*len(p.Buffers))
	for i := range p.Buffers {
		if !p.live(i) {
			continue
		}
		top := off[i] + p.AlignedSize(i)
		keys = append(keys, uint64(off[i])<<1|1, uint64(top)<<1)
		ev = append(ev, int32(i), int32(i))
	}
	radixSort(keys, ev)
	const maxList = 8
	var ct *coverTree
	list := make([]int32, 0, maxList+1)
	inTree, open := false, 0
	partner := func(i int32) int { // rare path: a linear scan
		for j := range p.Buffers {
			if j != int(i) && p.live(j) && s[j] < e[i] && s[i] < e[j] &&
				off[j] < off[i]+p.AlignedSize(int(i)) && off[i] < off[j]+p.AlignedSize(j) {
				return j
			}
		}
		return -1
	}
	for k, i := range ev {
		if keys[k]&1 == 0 { // a range closes
			open--
			if inTree {
				ct.add(s[i], e[i], -1)
				inTree = open > 0
			} else if x := slices.Index(list, i); x >= 0 {
				list = slices.Delete(list, x, x+1)
			}
			continue
		}
		open++
		if inTree {
			if ct.max(s[i], e[i]) > 0 {
				return partner(i), int(i)
			}
			ct.add(s[i], e[i], 1)
			continue
		}
		for _, j := range list {
			if s[j] < e[i] && s[i] < e[j] {
				return int(j), int(i)
			}
		}
		list = append(list, i)
		if len(list) > maxList {
			if ct == nil {
				ct = newCoverTree(steps)
			}
			for _, j := range list {
				ct.add(s[j], e[j], 1)
			}
			list, inTree = list[:0], true
		}
	}
	return -1, -1
}

// stopper tells long loops when to give up: at a deadline, when a context
// is done, or never (the zero value).
type stopper struct {
	ctx      context.Context
	deadline time.Time
	n        int
	stopped  bool
}

// stop reports whether the work should stop; it looks at the clock only
// every 16 calls.
func (st *stopper) stop() bool {
	if st == nil || st.stopped {
		return st != nil && st.stopped
	}
	st.n++
	if st.n&15 != 0 {
		return false
	}
	if (st.ctx != nil && st.ctx.Err() != nil) || (!st.deadline.IsZero() && time.Now().After(st.deadline)) {
		st.stopped = true
	}
	return st.stopped
}

// maxSweepLive is the largest number of simultaneously live buffers for
// which Validate sweeps time with a sorted slice of the live buffers (each
// insertion moves at most this many entries) instead of the segment tree.
const maxSweepLive = 512

// findOverlapTime is findOverlap for instances with few simultaneously
// live buffers: it sweeps the compressed steps (buckets, no sort), keeping
// the live buffers sorted by offset, and compares each new buffer with its
// two address neighbours. It returns ok = false, without a verdict, when
// more than maxSweepLive buffers are live at once (checked first, O(n)).
func findOverlapTime(p *Problem, off []int64, s, e []int32, steps int) (i, j int, ok bool) {
	n := len(p.Buffers)
	startAt := make([]int32, steps+2)
	endAt := make([]int32, steps+2)
	top := make([]int64, n)
	for b := range n {
		if p.live(b) {
			startAt[s[b]+1]++
			endAt[e[b]+1]++
			top[b] = off[b] + p.AlignedSize(b)
		}
	}
	live := int32(0)
	for t := 1; t < len(startAt); t++ {
		live += startAt[t] - endAt[t]
		if live > maxSweepLive {
			return -1, -1, false
		}
	}
	for t := 1; t < len(startAt); t++ {
		startAt[t] += startAt[t-1]
		endAt[t] += endAt[t-1]
	}
	byStart := make([]int32, startAt[steps+1])
	byEnd := make([]int32, endAt[steps+1])
	fs, fe := slices.Clone(startAt), slices.Clone(endAt)
	for b := range n {
		if p.live(b) {
			byStart[fs[s[b]]] = int32(b)
			fs[s[b]]++
			byEnd[fe[e[b]]] = int32(b)
			fe[e[b]]++
		}
	}
	// The live buffers sorted by offset (they never overlap), and the
	// first of them at an offset >= o.
	active := make([]int32, 0, maxSweepLive)
	find := func(o int64) int {
		lo, hi := 0, len(active)
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if off[active[m]] < o {
				lo = m + 1
			} else {
				hi = m
			}
		}
		return lo
	}
	for t := 0; t <= steps; t++ {
		for _, b := range byEnd[endAt[t]:endAt[t+1]] {
			k := find(off[b])
			for k < len(active) && active[k] != b {
				k++
			}
			if k < len(active) {
				active = slices.Delete(active, k, k+1)
			}
		}
		if t == steps {
			break
		}
		for _, b := range byStart[startAt[t]:startAt[t+1]] {
			k := find(off[b])
			if k > 0 {
				if x := active[k-1]; top[x] > off[b] {
					return int(x), int(b), true
				}
			}
			if k < len(active) {
				if x := active[k]; off[x] < top[b] {
					return int(x), int(b), true
				}
			}
			active = slices.Insert(active, k, b)
		}
	}
	return -1, -1, true
}
