package threadpool

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
)

// countTask counts how often each index is visited and which workers ran.
type countTask struct {
	hits    []atomic.Int32
	workers []atomic.Int32
}

func (c *countTask) Run(worker, lo, hi int) {
	c.workers[worker].Add(1)
	for i := lo; i < hi; i++ {
		c.hits[i].Add(1)
	}
}

func TestEveryIndexOnce(t *testing.T) {
	for _, tc := range []struct{ threads, n, chunk int }{
		{1, 10, 3}, {2, 1, 1}, {2, 1000, 7}, {3, 999, 1}, {4, 5, 8}, {2, 64, 64}, {4, 100000, 33},
	} {
		t.Run(fmt.Sprintf("t%d_n%d_c%d", tc.threads, tc.n, tc.chunk), func(t *testing.T) {
			p := New(tc.threads)
			defer p.Close()
			for rep := range 50 {
				c := &countTask{hits: make([]atomic.Int32, tc.n), workers: make([]atomic.Int32, tc.threads)}
				if err := p.Run(c, tc.n, tc.chunk); err != nil {
					t.Fatal(err)
				}
				for i := range c.hits {
					if h := c.hits[i].Load(); h != 1 {
						t.Fatalf("rep %d: index %d visited %d times", rep, i, h)
					}
				}
			}
		})
	}
}

type panicTask struct{ at int }

func (p panicTask) Run(_, lo, hi int) {
	if lo <= p.at && p.at < hi {
		panic(fmt.Sprintf("boom at %d", p.at))
	}
}

func TestPanicBecomesError(t *testing.T) {
	for _, threads := range []int{1, 2, 4} {
		p := New(threads)
		err := p.Run(panicTask{at: 77}, 100, 3)
		if err == nil || !strings.Contains(err.Error(), "boom at 77") {
			t.Errorf("threads %d: err = %v, want the panic", threads, err)
		}
		// The pool still works after a panic.
		c := &countTask{hits: make([]atomic.Int32, 50), workers: make([]atomic.Int32, threads)}
		if err := p.Run(c, 50, 4); err != nil {
			t.Fatalf("threads %d: after panic: %v", threads, err)
		}
		for i := range c.hits {
			if c.hits[i].Load() != 1 {
				t.Fatalf("threads %d: after panic: index %d visited %d times", threads, i, c.hits[i].Load())
			}
		}
		p.Close()
		p.Close()
		if err := p.Run(c, 50, 4); err == nil {
			t.Errorf("threads %d: Run on a closed pool succeeded", threads)
		}
	}
}

type nopTask struct{ sum atomic.Int64 }

func (t *nopTask) Run(_, lo, hi int) { t.sum.Add(int64(hi - lo)) }

func TestRunAllocatesNothing(t *testing.T) {
	p := New(2)
	defer p.Close()
	task := &nopTask{}
	allocs := testing.AllocsPerRun(200, func() {
		if err := p.Run(task, 1000, 10); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Run allocates %.1f times per job, want 0", allocs)
	}
	if got := task.sum.Load(); got != 201*1000 {
		t.Errorf("sum = %d, want %d", got, 201*1000)
	}
}

func TestDefaultThreads(t *testing.T) {
	if n := DefaultThreads(); n < 1 {
		t.Errorf("DefaultThreads() = %d", n)
	}
	p := New(0)
	defer p.Close()
	if p.Threads() != DefaultThreads() {
		t.Errorf("New(0) does not use DefaultThreads")
	}
}

// BenchmarkRun is the cost of one job of 64 chunks of no work: the
// dispatch and barrier overhead per op of a step.
func BenchmarkRun(b *testing.B) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			p := New(threads)
			defer p.Close()
			task := &nopTask{}
			b.ReportAllocs()
			for b.Loop() {
				p.Run(task, 64, 1)
			}
		})
	}
}
