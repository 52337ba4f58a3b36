package kernels

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// workers returns how many goroutines to use for n independent tasks.
func workers(threads, n int) int {
	w := threads
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	return max(1, min(w, n))
}

// parallelFor runs fn over [0, n) split into chunks of at least grain
// items, on up to threads goroutines (0 = GOMAXPROCS): on pool's workers
// when pool is set and free, else on goroutines started for this call.
// Chunks are handed out dynamically, but each index is processed by exactly
// one call, and the chunk bounds do not depend on which goroutines run
// them, so results that depend only on the index are deterministic. A panic
// in any worker is re-raised in the caller's goroutine, where the kernel's
// guard turns it into an error.
func parallelFor(pool *Pool, threads, n, grain int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	grain = max(grain, 1)
	nChunks := (n + grain - 1) / grain
	w := workers(threads, nChunks)
	if w == 1 {
		fn(0, n)
		return
	}
	// Aim for a few chunks per worker so uneven chunks balance out.
	parallelChunks(pool, w, n, max(grain, (n+4*w-1)/(4*w)), fn)
}

// parallelForEach is parallelFor with chunks of one item: for a few
// large items (a prefill matmul's tiles, each millions of multiply-adds),
// where chunks of several would leave one worker idle for up to a chunk
// at the end (15 tiles in chunks of 2 on 2 workers: 8 tiles against 7).
func parallelForEach(pool *Pool, threads, n int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if w := workers(threads, n); w > 1 {
		parallelChunks(pool, w, n, 1, fn)
		return
	}
	fn(0, n)
}

// parallelChunks runs fn over [0, n) in chunks of chunk items handed out
// dynamically to w > 1 workers (parallelFor's loop).
func parallelChunks(pool *Pool, w, n, chunk int, fn func(lo, hi int)) {
	if pool != nil && pool.run(fn, n, chunk) {
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var panicked atomic.Value
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					panicked.CompareAndSwap(nil, r)
				}
			}()
			for {
				lo := int(next.Add(int64(chunk))) - chunk
				if lo >= n {
					return
				}
				fn(lo, min(lo+chunk, n))
			}
		}()
	}
	wg.Wait()
	if r := panicked.Load(); r != nil {
		panic(r)
	}
}

// f32Pool recycles float32 scratch buffers.
var f32Pool sync.Pool

// getF32 returns a scratch slice of length n (contents undefined).
func getF32(n int) *[]float32 {
	if p, ok := f32Pool.Get().(*[]float32); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	s := make([]float32, n)
	return &s
}

// putF32 returns a scratch slice to the pool.
func putF32(p *[]float32) { f32Pool.Put(p) }

// wideMin is the least capacity of a widePool buffer (floats): a tile of
// F16 rows read raw holds about 160 KiB of them (matmul.schedule), 80 Ki
// values once widened, so one size serves every product.
const wideMin = 80 << 10

// widePool recycles the float32 copies of F16 weight tiles (tile.wide),
// apart from f32Pool so that smaller scratch slices do not displace them.
var widePool sync.Pool

// getWide returns a widePool buffer of length n.
func getWide(n int) *[]float32 {
	if p, ok := widePool.Get().(*[]float32); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	s := make([]float32, n, max(n, wideMin))
	return &s
}
