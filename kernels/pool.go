package kernels

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/irtool/irtool/internal/threadpool"
)

// Pool is a persistent set of worker goroutines on which the kernels split
// their work (Options.Pool): started once, the workers wait for the next
// kernel spinning briefly and then parked, so a kernel run on a Pool
// creates no goroutine. The chunks are the same index ranges as without a
// Pool and every index is still computed by exactly one call, so results
// are the same bits.
//
// A Pool runs one kernel at a time. A kernel that finds it busy (another
// goroutine's kernel, or a kernel nested inside a kernel running on it) or
// closed falls back to starting goroutines of its own, so sharing a Pool is
// safe, merely not faster. The pool's size, not Options.Threads, decides
// how many goroutines work on a kernel it runs.
type Pool struct {
	mu     sync.Mutex // held while a kernel runs on the pool, and by Close
	p      *threadpool.Pool
	closed bool
	task   *poolTask // a separate object, so the workers never reach the Pool
	clean  runtime.Cleanup
}

// NewPool starts a pool of threads goroutines (the caller of a kernel
// included; threads <= 0 means GOMAXPROCS, as Options.Threads does). Call
// Close to stop it; a Pool that becomes unreachable unclosed is closed by
// the garbage collector.
func NewPool(threads int) *Pool {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	p := &Pool{p: threadpool.New(threads), task: &poolTask{}}
	p.clean = runtime.AddCleanup(p, func(tp *threadpool.Pool) { tp.Close() }, p.p)
	return p
}

// Threads is the number of goroutines that work on a kernel.
func (p *Pool) Threads() int { return p.p.Threads() }

// Close stops the workers once the kernel running on the pool, if any, is
// done. Kernels run afterwards start goroutines as without a pool. Close is
// idempotent.
func (p *Pool) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		p.clean.Stop()
		p.p.Close()
	}
}

// run runs fn over [0, n) in chunks on the pool and reports true, or
// reports false without running anything when the pool is busy or closed.
// A panic in fn is re-raised in the caller's goroutine once every chunk is
// done.
func (p *Pool) run(fn func(lo, hi int), n, chunk int) bool {
	if !p.mu.TryLock() {
		return false
	}
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	t := p.task
	t.fn, t.panicked = fn, nil
	err := p.p.Run(t, n, chunk)
	r := t.panicked
	t.fn, t.panicked = nil, nil
	if r != nil {
		panic(r)
	}
	if err != nil { // not reached: poolTask recovers its panics
		panic(fmt.Sprintf("kernels: pool: %v", err))
	}
	return true
}

// poolTask adapts a chunk function to threadpool.Task and keeps the first
// panic's value for the caller.
type poolTask struct {
	fn       func(lo, hi int)
	mu       sync.Mutex
	panicked any
}

// Run implements threadpool.Task.
func (t *poolTask) Run(_, lo, hi int) {
	defer func() {
		if r := recover(); r != nil {
			t.mu.Lock()
			if t.panicked == nil {
				t.panicked = r
			}
			t.mu.Unlock()
		}
	}()
	t.fn(lo, hi)
}
