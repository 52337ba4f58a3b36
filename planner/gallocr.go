package planner

import (
	"errors"
	"fmt"
	"math"
)

// GallocrMaxFreeBlocks is ggml-alloc's MAX_FREE_BLOCKS: the free list of a
// ggml_dyn_tallocr holds at most this many blocks.
const GallocrMaxFreeBlocks = 256

// gallocrHeap is the size of the initial free block of a measuring
// allocator: ggml uses SIZE_MAX/2 so that the heap never runs out.
const gallocrHeap = math.MaxInt64 / 2

// ErrGallocrFreeBlocks is returned by Gallocr.Free when a free would need more
// than GallocrMaxFreeBlocks free blocks; ggml aborts in that case.
var ErrGallocrFreeBlocks = errors.New("planner: gallocr: out of free blocks")

type freeBlock struct {
	off, size int64
}

// Gallocr simulates ggml-alloc's dynamic tensor allocator (ggml_dyn_tallocr
// in ggml/src/ggml-alloc.c at llama.cpp c392e50) as used to measure a graph's
// compute buffer. Its rules, reproduced exactly:
//
//   - sizes are rounded up to the alignment on Alloc and on Free;
//   - Alloc takes the best-fitting free block among all blocks except the
//     last one, scanning in address order and letting a later block win a tie
//     (size <= best size); only if none fits does it use the last block,
//     which starts as a huge block and so acts as the growing tail of the heap;
//   - the chosen block gives away its first bytes and is removed when empty;
//   - Free merges the range into a block that ends where it starts (and then
//     with the following block) or into a block that starts where it ends
//     (and then with the preceding block), else inserts a new block in address
//     order, failing when GallocrMaxFreeBlocks blocks are already in use;
//   - MaxSize is the highest offset+size ever handed out: the buffer size
//     ggml reserves.
//
// The zero value is not usable; call NewGallocr.
type Gallocr struct {
	alignment int64
	maxBlocks int  // 0: unlimited
	tieLater  bool // ggml: among equal best fits the later block wins
	blocks    []freeBlock
	maxSize   int64
}

// NewGallocr returns a measuring allocator with ggml's limits for the given
// buffer alignment (ggml's CPU buffer type uses 32, TENSOR_ALIGNMENT; values
// below 1 mean 1).
func NewGallocr(alignment int64) *Gallocr {
	return newGallocr(alignment, GallocrMaxFreeBlocks, true)
}

// newGallocr returns an allocator with the given free-block limit (0 means
// none) and tie rule (tieLater false gives classic best fit, where the
// lowest of equal blocks wins).
func newGallocr(alignment int64, maxBlocks int, tieLater bool) *Gallocr {
	if alignment < 1 {
		alignment = 1
	}
	g := &Gallocr{alignment: alignment, maxBlocks: maxBlocks, tieLater: tieLater}
	g.Reset()
	return g
}

// Reset empties the allocator, like ggml_dyn_tallocr_reset.
func (g *Gallocr) Reset() {
	g.blocks = append(g.blocks[:0], freeBlock{0, gallocrHeap})
	g.maxSize = 0
}

// MaxSize returns the largest offset+size handed out since the last Reset.
func (g *Gallocr) MaxSize() int64 { return g.maxSize }

// FreeBlocks returns the number of free blocks, the tail included.
func (g *Gallocr) FreeBlocks() int { return len(g.blocks) }

// Alloc reserves size bytes (rounded up to the alignment) and returns their
// offset.
func (g *Gallocr) Alloc(size int64) (int64, error) {
	if size < 0 || size > MaxSize {
		return 0, fmt.Errorf("planner: gallocr: alloc of %d bytes out of range", size)
	}
	size = alignUp(size, g.alignment)
	best := -1
	bestSize := int64(math.MaxInt64)
	n := len(g.blocks)
	for i := 0; i < n-1; i++ {
		if b := g.blocks[i].size; b >= size && (b < bestSize || (g.tieLater && b == bestSize)) {
			best, bestSize = i, b
		}
	}
	if best < 0 {
		if n == 0 || g.blocks[n-1].size < size {
			return 0, fmt.Errorf("planner: gallocr: no free block holds %d bytes", size)
		}
		best = n - 1
	}
	b := &g.blocks[best]
	off := b.off
	b.off += size
	b.size -= size
	if b.size == 0 {
		g.blocks = append(g.blocks[:best], g.blocks[best+1:]...)
	}
	g.maxSize = max(g.maxSize, off+size)
	return off, nil
}

// Free returns size bytes (rounded up to the alignment) at off to the free
// list. It does not check that the range was allocated, exactly like ggml.
func (g *Gallocr) Free(off, size int64) error {
	if size < 0 || size > MaxSize || off < 0 || off > MaxSize {
		return fmt.Errorf("planner: gallocr: free of %d bytes at %d out of range", size, off)
	}
	size = alignUp(size, g.alignment)
	for i := range g.blocks {
		b := &g.blocks[i]
		if b.off+b.size == off { // the range follows block i
			b.size += size
			if i+1 < len(g.blocks) && b.off+b.size == g.blocks[i+1].off {
				b.size += g.blocks[i+1].size
				g.blocks = append(g.blocks[:i+1], g.blocks[i+2:]...)
			}
			return nil
		}
		if off+size == b.off { // the range precedes block i
			b.off = off
			b.size += size
			if i > 0 && g.blocks[i-1].off+g.blocks[i-1].size == b.off {
				g.blocks[i-1].size += b.size
				g.blocks = append(g.blocks[:i], g.blocks[i+1:]...)
			}
			return nil
		}
	}
	if g.maxBlocks > 0 && len(g.blocks) >= g.maxBlocks {
		return fmt.Errorf("%w (%d in use, freeing %d bytes at %d)", ErrGallocrFreeBlocks, len(g.blocks), size, off)
	}
	pos := 0
	for pos < len(g.blocks) && g.blocks[pos].off < off {
		pos++
	}
	g.blocks = append(g.blocks, freeBlock{})
	copy(g.blocks[pos+1:], g.blocks[pos:])
	g.blocks[pos] = freeBlock{off, size}
	return nil
}
