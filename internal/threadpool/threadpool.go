// Package threadpool is a persistent pool of worker goroutines that split
// one job at a time into chunks of an index range, in the manner of ggml's
// CPU thread pool (ggml-cpu.c, ggml_threadpool): the workers are started
// once, wait for the next job by spinning briefly on an atomic counter and
// then park on a condition variable, and the submitting goroutine works on
// the job too. Submitting a job creates no goroutine, sends on no channel
// and allocates nothing.
//
// One pool runs one job at a time; it is meant to be owned by one session
// (one stream of steps). Run must not be called concurrently or from inside
// a job.
package threadpool

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Task is one job: the pool calls Run(worker, lo, hi) for disjoint chunks
// [lo, hi) that cover the job's range exactly once. worker is in
// [0, Threads()) and is unique among the calls running at the same time, so
// a task may keep per-worker scratch indexed by it. A Task is usually a
// pointer to a prepared struct, which makes submitting it allocation-free.
type Task interface {
	Run(worker, lo, hi int)
}

// spinTime is how long a waiting worker polls for the next job before it
// parks (it checks the clock, and yields with Gosched, every spinYield
// polls): long enough to bridge the gaps between the kernels of a step and
// between the steps of a generation (sampling a token takes microseconds),
// so that a busy pool never parks (parking costs a futex wake-up, and
// after a GC the Go runtime allocates the record a parked goroutine waits
// on), short enough not to burn a core once the work stops.
const (
	spinTime  = 2 * time.Millisecond
	spinYield = 64
)

// Pool is a fixed set of workers. The zero value is not usable; call New.
type Pool struct {
	threads int

	// The current job. Written by Run before epoch is bumped, read by the
	// workers after they see the new epoch (the atomic gives the ordering).
	task  Task
	n     int
	chunk int
	next  atomic.Int64 // next unclaimed index
	// active counts the workers (not the caller) still inside the job.
	active atomic.Int32
	epoch  atomic.Uint64
	closed atomic.Bool

	mu       sync.Mutex
	cond     *sync.Cond
	sleeping int // workers parked on cond (guarded by mu)

	panicMu sync.Mutex
	panic   any
	wg      sync.WaitGroup
}

// New starts a pool that runs jobs on threads goroutines: the caller of Run
// and threads-1 workers. threads <= 0 means DefaultThreads().
func New(threads int) *Pool {
	if threads <= 0 {
		threads = DefaultThreads()
	}
	p := &Pool{threads: threads}
	p.cond = sync.NewCond(&p.mu)
	for w := 1; w < threads; w++ {
		p.wg.Add(1)
		go p.worker(w)
	}
	return p
}

// Threads is the number of goroutines that work on a job (the caller
// included).
func (p *Pool) Threads() int { return p.threads }

// Close stops the workers and waits for them to exit. The pool cannot be
// used afterwards. Close is idempotent.
func (p *Pool) Close() {
	if p == nil || p.closed.Swap(true) {
		return
	}
	p.mu.Lock()
	p.epoch.Add(1)
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
}

// Run calls t.Run over [0, n) in chunks of chunk indexes (the last may be
// shorter), on every thread of the pool, and returns when all chunks are
// done. Chunks are claimed dynamically, but each index is processed by
// exactly one call, so a task whose result depends only on the index is
// deterministic. With one thread, or when n fits in one chunk, t runs on
// the caller's goroutine alone. A panic in any call is recovered and
// returned as an error once every thread has finished the job.
func (p *Pool) Run(t Task, n, chunk int) error {
	if n <= 0 {
		return nil
	}
	if p.closed.Load() {
		return fmt.Errorf("threadpool: Run on a closed pool")
	}
	chunk = max(chunk, 1)
	if p.threads == 1 || n <= chunk {
		return runAlone(t, n, chunk)
	}
	p.task, p.n, p.chunk = t, n, chunk
	p.next.Store(0)
	p.active.Store(int32(p.threads - 1))
	p.epoch.Add(1) // publishes the job
	p.mu.Lock()
	if p.sleeping > 0 {
		p.cond.Broadcast()
	}
	p.mu.Unlock()
	p.work(0)
	// Wait for the workers to leave the job (they may still be inside
	// their last chunk).
	for i := 0; p.active.Load() != 0; i++ {
		if i%spinYield == spinYield-1 {
			runtime.Gosched()
		}
	}
	p.task = nil
	p.panicMu.Lock()
	r := p.panic
	p.panic = nil
	p.panicMu.Unlock()
	if r != nil {
		return fmt.Errorf("threadpool: task panicked: %v", r)
	}
	return nil
}

// runAlone runs the whole range on the calling goroutine.
func runAlone(t Task, n, chunk int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("threadpool: task panicked: %v", r)
		}
	}()
	for lo := 0; lo < n; lo += chunk {
		t.Run(0, lo, min(lo+chunk, n))
	}
	return nil
}

// work claims and runs chunks of the current job until none is left.
func (p *Pool) work(worker int) {
	defer func() {
		if r := recover(); r != nil {
			p.panicMu.Lock()
			if p.panic == nil {
				p.panic = r
			}
			p.panicMu.Unlock()
			// Drain the remaining chunks so the job ends.
			p.next.Store(int64(p.n))
		}
	}()
	t, n, chunk := p.task, p.n, p.chunk
	for {
		lo := int(p.next.Add(int64(chunk))) - chunk
		if lo >= n {
			return
		}
		t.Run(worker, lo, min(lo+chunk, n))
	}
}

// worker waits for jobs: it spins on the epoch for a while, then parks.
// The pool's epoch starts at 0, so a worker that starts late still sees
// the first job (or Close).
func (p *Pool) worker(id int) {
	defer p.wg.Done()
	seen := uint64(0)
	for {
		e := p.epoch.Load()
		var deadline time.Time
		for i := 0; e == seen; i++ {
			if i%spinYield == spinYield-1 {
				now := time.Now()
				if deadline.IsZero() {
					deadline = now.Add(spinTime)
				} else if now.After(deadline) {
					break
				}
				runtime.Gosched()
			}
			e = p.epoch.Load()
		}
		if e == seen {
			p.mu.Lock()
			for p.epoch.Load() == seen && !p.closed.Load() {
				p.sleeping++
				p.cond.Wait()
				p.sleeping--
			}
			p.mu.Unlock()
			e = p.epoch.Load()
		}
		if p.closed.Load() {
			return
		}
		seen = e
		p.work(id)
		p.active.Add(-1)
	}
}

// DefaultThreads is the number of physical cores (llama.cpp's default for
// -t): on Linux, the distinct core sibling sets under
// /sys/devices/system/cpu; elsewhere, or when those files cannot be read,
// runtime.NumCPU(). It is never more than GOMAXPROCS.
func DefaultThreads() int {
	n := physicalCores()
	if n <= 0 {
		n = runtime.NumCPU()
	}
	return max(1, min(n, runtime.GOMAXPROCS(0)))
}

// physicalCores counts the distinct thread_siblings_list sets of the
// online CPUs (0 when unknown).
func physicalCores() int {
	seen := map[string]bool{}
	for cpu := 0; cpu < 4096; cpu++ {
		b, err := os.ReadFile("/sys/devices/system/cpu/cpu" + strconv.Itoa(cpu) + "/topology/thread_siblings_list")
		if err != nil {
			if cpu == 0 {
				return 0
			}
			break
		}
		seen[strings.TrimSpace(string(b))] = true
	}
	return len(seen)
}
