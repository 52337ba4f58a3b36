package planner

import (
	"errors"
	"fmt"
	"slices"
)

// MaxSize bounds a single buffer's size and the sum of all sizes of a
// Problem, so that aligned sizes, offsets and sums never overflow int64.
const MaxSize int64 = 1 << 60

// MaxStep bounds the absolute value of lifetime steps, so that lifetime
// lengths never overflow.
const MaxStep = 1 << 60

// Buffer is one tensor to place: it is live over the half-open range of
// execution steps [Start, End) and needs Size bytes. A buffer with
// Start == End or Size == 0 conflicts with nothing.
type Buffer struct {
	ID    int   `json:"id"`
	Start int   `json:"start"`
	End   int   `json:"end"`
	Size  int64 `json:"size"`
}

// Problem is a static offset-assignment instance. Alignment (a positive
// number of bytes; 0 means 1) applies to every size and offset: sizes are
// rounded up to it and offsets are multiples of it, as ggml-alloc does.
type Problem struct {
	Buffers   []Buffer `json:"buffers"`
	Alignment int64    `json:"alignment,omitempty"`
}

// Assignment is a solution: Offsets[i] is the offset of Problem.Buffers[i]
// (indexed by position, not by Buffer.ID) and Arena is the arena size, the
// highest offset+aligned size.
type Assignment struct {
	Offsets []int64 `json:"offsets"`
	Arena   int64   `json:"arena"`
}

// align returns the effective alignment (at least 1).
func (p *Problem) align() int64 {
	if p.Alignment <= 1 {
		return 1
	}
	return p.Alignment
}

// AlignedSize returns buffer i's size rounded up to the problem's alignment.
func (p *Problem) AlignedSize(i int) int64 {
	return alignUp(p.Buffers[i].Size, p.align())
}

// Aligned returns a copy of the problem whose sizes are already rounded
// up to its alignment, with no alignment of its own: the same instance
// for a reader of its CSV (WriteCSV), which has no alignment column.
func (p *Problem) Aligned() *Problem {
	q := &Problem{Buffers: slices.Clone(p.Buffers)}
	for i := range q.Buffers {
		q.Buffers[i].Size = p.AlignedSize(i)
	}
	return q
}

func alignUp(v, a int64) int64 {
	if a <= 1 {
		return v
	}
	if r := v % a; r != 0 {
		return v + a - r
	}
	return v
}

// Check reports the first reason the problem is malformed: a negative or
// too large size, an inverted lifetime, a duplicate ID, a negative alignment,
// or sizes whose sum could overflow.
func (p *Problem) Check() error {
	if p == nil {
		return errors.New("planner: nil problem")
	}
	if p.Alignment < 0 || p.Alignment > MaxSize {
		return fmt.Errorf("planner: alignment %d out of range", p.Alignment)
	}
	var total int64
	for _, b := range p.Buffers {
		if b.Size < 0 || b.Size > MaxSize {
			return fmt.Errorf("planner: buffer %d: size %d out of range [0, 2^60]", b.ID, b.Size)
		}
		if b.Start > b.End {
			return fmt.Errorf("planner: buffer %d: start %d after end %d", b.ID, b.Start, b.End)
		}
		if b.Start < -MaxStep || b.End > MaxStep {
			return fmt.Errorf("planner: buffer %d: lifetime [%d, %d) out of range [-2^60, 2^60]", b.ID, b.Start, b.End)
		}
		total += alignUp(b.Size, p.align())
		if total > MaxSize {
			return fmt.Errorf("planner: total size exceeds 2^60 bytes at buffer %d", b.ID)
		}
	}
	ids := make([]int, len(p.Buffers))
	for i, b := range p.Buffers {
		ids[i] = b.ID
	}
	if i, j := firstDuplicate(ids); i >= 0 {
		return fmt.Errorf("planner: buffer %d: duplicate id (positions %d and %d)", p.Buffers[i].ID, i, j)
	}
	return nil
}

// live reports whether buffer i occupies memory at some step.
func (p *Problem) live(i int) bool {
	b := p.Buffers[i]
	return b.Start < b.End && b.Size > 0
}

// NaiveSize returns the arena a planner without reuse needs: the sum of all
// aligned sizes of buffers that are live at some step.
func NaiveSize(p *Problem) int64 {
	var s int64
	for i := range p.Buffers {
		if p.live(i) {
			s += p.AlignedSize(i)
		}
	}
	return s
}

// LowerBound returns the LOAD of the problem: the maximum over steps of the
// sum of aligned sizes of the buffers live at that step. No assignment has a
// smaller arena. It compresses the lifetimes with a radix sort and sums a
// difference array, O(n).
func LowerBound(p *Problem) int64 {
	s, e, steps := compressLifetimes(p)
	var best int64
	for _, b := range breadthOf(p, s, e, steps) {
		best = max(best, b)
	}
	return best
}

// ArenaOf returns the arena size implied by offsets: the largest
// offset+aligned size over buffers that are live at some step.
func ArenaOf(p *Problem, offsets []int64) int64 {
	var top int64
	for i := range p.Buffers {
		if p.live(i) && i < len(offsets) {
			top = max(top, offsets[i]+p.AlignedSize(i))
		}
	}
	return top
}

// Validate checks that a is a correct solution of p: one offset per buffer,
// every offset non-negative and aligned, every buffer inside the arena, and
// no two buffers that are live at a common step overlapping in address. It
// sweeps time keeping the live buffers sorted by offset while at most 512
// are live at once; beyond that it sweeps the buffers in address order
// keeping, in a segment tree over time, how many open address ranges cover
// each step: O(n log n) on any input.
func Validate(p *Problem, a *Assignment) error {
	if err := p.Check(); err != nil {
		return err
	}
	if a == nil {
		return errors.New("planner: nil assignment")
	}
	if len(a.Offsets) != len(p.Buffers) {
		return fmt.Errorf("planner: assignment has %d offsets for %d buffers", len(a.Offsets), len(p.Buffers))
	}
	al := p.align()
	for i, b := range p.Buffers {
		off := a.Offsets[i]
		if off < 0 {
			return fmt.Errorf("planner: buffer %d: negative offset %d", b.ID, off)
		}
		if off%al != 0 {
			return fmt.Errorf("planner: buffer %d: offset %d not aligned to %d", b.ID, off, al)
		}
		if off > MaxSize {
			return fmt.Errorf("planner: buffer %d: offset %d out of range", b.ID, off)
		}
		if p.live(i) && off+p.AlignedSize(i) > a.Arena {
			return fmt.Errorf("planner: buffer %d: [%d, %d) exceeds arena %d", b.ID, off, off+p.AlignedSize(i), a.Arena)
		}
	}
	cs, ce, steps := compressLifetimes(p)
	i, j, ok := findOverlapTime(p, a.Offsets, cs, ce, steps)
	if !ok {
		i, j = findOverlap(p, a.Offsets, cs, ce, steps)
	}
	if i >= 0 {
		return overlapError(p, a, i, j)
	}
	return nil
}

func overlapError(p *Problem, a *Assignment, i, j int) error {
	bi, bj := p.Buffers[i], p.Buffers[j]
	return fmt.Errorf("planner: buffers %d (steps [%d,%d), bytes [%d,%d)) and %d (steps [%d,%d), bytes [%d,%d)) overlap",
		bi.ID, bi.Start, bi.End, a.Offsets[i], a.Offsets[i]+p.AlignedSize(i),
		bj.ID, bj.Start, bj.End, a.Offsets[j], a.Offsets[j]+p.AlignedSize(j))
}
