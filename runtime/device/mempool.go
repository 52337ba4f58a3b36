package device

import (
	"fmt"
	"sort"
	"sync"
)

// MemPool is the device memory pool of the mLLM Ascend backend
// (github.com/UbiquitousLearning/mllm, AscendMemoryPool): one large pre-allocation per device, out of which
// requests are served without calling the driver again.
//
//   - A request is rounded up to 32 bytes.
//   - A freed block is reused for a later request it can hold (the
//     smallest such block; mLLM takes the first one that fits).
//   - Otherwise a new block is carved linearly from the unused tail of the
//     pre-allocation, starting on a 64-byte boundary.
//   - Every block gets an increasing id; all calls are serialised by a
//     mutex, so one pool can serve many goroutines.
//
// Freed blocks are kept whole (neither split nor merged, as in mLLM),
// except that freeing the block at the top of the carved region gives the
// space back to the tail, so alloc/free cycles of growing sizes do not
// exhaust the pool.
//
// MemPool manages offsets, not bytes: the simulated device maps them into
// its byte arena, and a real binding adds them to the base pointer of its
// one aclrtMalloc.
type MemPool struct {
	mu       sync.Mutex
	capacity int64
	cur      int64 // end of the carved region
	nextID   int64
	live     map[int64]*poolBlock // by offset
	free     []*poolBlock         // sorted by size, then offset
	stats    PoolStats
}

type poolBlock struct {
	id   int64
	off  int64
	size int64 // rounded size
	req  int64 // requested size
}

// PoolStats are a pool's usage statistics.
type PoolStats struct {
	Capacity   int64 `json:"capacity"`    // bytes pre-allocated
	UsedBytes  int64 `json:"used_bytes"`  // bytes held by live blocks (rounded sizes)
	Requested  int64 `json:"requested"`   // bytes asked for by live blocks
	PeakBytes  int64 `json:"peak_bytes"`  // maximum of UsedBytes
	HighWater  int64 `json:"high_water"`  // end of the carved region
	LiveBlocks int   `json:"live_blocks"` // blocks allocated and not freed
	FreeBlocks int   `json:"free_blocks"` // freed blocks waiting for reuse
	Allocs     int64 `json:"allocs"`
	Frees      int64 `json:"frees"`
	Reuses     int64 `json:"reuses"` // allocations served by a freed block
	Failures   int64 `json:"failures"`
}

// Pool alignment rules of mLLM's pool.
const (
	PoolSizeAlign  = 32 // requests are rounded up to this
	PoolBlockAlign = 64 // carved blocks start on this boundary
)

// NewMemPool returns a pool over capacity bytes.
func NewMemPool(capacity int64) *MemPool {
	return &MemPool{capacity: capacity, live: map[int64]*poolBlock{}, stats: PoolStats{Capacity: capacity}}
}

func roundUp(n, align int64) int64 { return (n + align - 1) / align * align }

// Alloc reserves size bytes and returns the block's offset and id. It
// fails with ACL_ERROR_RT_PARAM_INVALID for a size of zero or less (as
// aclrtMalloc does) and ACL_ERROR_RT_MEMORY_ALLOCATION when nothing fits.
func (p *MemPool) Alloc(size int64) (off int64, id int64, err error) {
	if size <= 0 {
		return 0, 0, aclErr("aclrtMalloc", ACLErrParamInvalid, "size %d: must be positive", size)
	}
	if size > p.capacity {
		p.mu.Lock()
		p.stats.Failures++
		p.mu.Unlock()
		return 0, 0, aclErr("aclrtMalloc", ACLErrMemoryAllocation, "size %d exceeds the %d-byte pool", size, p.capacity)
	}
	r := roundUp(size, PoolSizeAlign)
	p.mu.Lock()
	defer p.mu.Unlock()
	var b *poolBlock
	// Best fit among freed blocks: p.free is sorted by size.
	i := sort.Search(len(p.free), func(i int) bool { return p.free[i].size >= r })
	if i < len(p.free) {
		b = p.free[i]
		p.free = append(p.free[:i], p.free[i+1:]...)
		p.stats.Reuses++
	} else {
		start := roundUp(p.cur, PoolBlockAlign)
		if start+r > p.capacity {
			p.stats.Failures++
			return 0, 0, aclErr("aclrtMalloc", ACLErrMemoryAllocation,
				"out of device memory: %d bytes requested, %d of %d carved, %d held by %d live blocks, %d in %d free blocks too small",
				size, p.cur, p.capacity, p.stats.UsedBytes, len(p.live), p.freeBytes(), len(p.free))
		}
		p.cur = start + r
		b = &poolBlock{off: start, size: r}
	}
	p.nextID++
	b.id = p.nextID
	b.req = size
	p.live[b.off] = b
	p.stats.Allocs++
	p.stats.UsedBytes += b.size
	p.stats.Requested += size
	p.stats.PeakBytes = max(p.stats.PeakBytes, p.stats.UsedBytes)
	return b.off, b.id, nil
}

func (p *MemPool) freeBytes() int64 {
	var n int64
	for _, b := range p.free {
		n += b.size
	}
	return n
}

// Free returns the block at off to the pool. Freeing an offset that is not
// the start of a live block fails with ACL_ERROR_RT_MEMORY_FREE.
func (p *MemPool) Free(off int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.live[off]
	if !ok {
		return aclErr("aclrtFree", ACLErrMemoryFree, "offset %#x is not a live block (double free or foreign pointer)", off)
	}
	delete(p.live, off)
	p.stats.Frees++
	p.stats.UsedBytes -= b.size
	p.stats.Requested -= b.req
	if b.off+b.size == p.cur {
		// The top block: give its space back to the tail, and with it any
		// freed blocks that now end the carved region.
		p.cur = b.off
		for p.retractTop() {
		}
		return nil
	}
	p.insertFree(b)
	return nil
}

// retractTop removes a free block ending exactly at the (64-aligned)
// carved end, if any.
func (p *MemPool) retractTop() bool {
	for i, f := range p.free {
		// Blocks start 64-aligned, so only alignment padding can lie
		// between a block's end and the next block.
		if end := f.off + f.size; end <= p.cur && roundUp(end, PoolBlockAlign) >= p.cur {
			p.free = append(p.free[:i], p.free[i+1:]...)
			p.cur = f.off
			return true
		}
	}
	return false
}

func (p *MemPool) insertFree(b *poolBlock) {
	i := sort.Search(len(p.free), func(i int) bool {
		f := p.free[i]
		return f.size > b.size || (f.size == b.size && f.off > b.off)
	})
	p.free = append(p.free, nil)
	copy(p.free[i+1:], p.free[i:])
	p.free[i] = b
}

// Block returns the live block containing offset off: its start and
// rounded size.
func (p *MemPool) Block(off int64) (start, size int64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if b, ok := p.live[off]; ok {
		return b.off, b.size, true
	}
	for _, b := range p.live {
		if off >= b.off && off < b.off+b.size {
			return b.off, b.size, true
		}
	}
	return 0, 0, false
}

// Stats returns the pool's statistics.
func (p *MemPool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.HighWater = p.cur
	s.LiveBlocks = len(p.live)
	s.FreeBlocks = len(p.free)
	return s
}

// String summarises the pool for logs.
func (s PoolStats) String() string {
	return fmt.Sprintf("%d live blocks (%d B), %d free blocks, peak %d B, high water %d of %d B, %d allocs (%d reused), %d frees",
		s.LiveBlocks, s.UsedBytes, s.FreeBlocks, s.PeakBytes, s.HighWater, s.Capacity, s.Allocs, s.Reuses, s.Frees)
}
