package device

import (
	"bytes"
	"math/rand"
	"runtime"
	"testing"
	"time"

	"github.com/irtool/irtool/internal/floatbits"
	"github.com/irtool/irtool/internal/gocount"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// A stream of the sim device runs its kernels on a persistent pool: after
// the first synchronisation started it, eager launches and graph replays
// of kernels that split their work over several goroutines create no
// goroutine, the results equal the host kernels' on one goroutine bit for
// bit, and DestroyStream stops the pool's workers. With a pool that cannot
// be used (closed) the same launches do create goroutines, so the count
// can fail.
func TestSimStreamPoolNoGoroutinePerKernel(t *testing.T) {
	const k, m, n, threads = 256, 512, 2, 4
	r := rand.New(rand.NewSource(7))
	w, x := floatbits.Rand(r, k*m, 1), floatbits.Rand(r, k*n, 1)
	W, err := kernels.FromF32(w, k, m)
	if err != nil {
		t.Fatal(err)
	}
	X, err := kernels.FromF32(x, k, n)
	if err != nil {
		t.Fatal(err)
	}
	Y, err := kernels.NewTensor(X.Type, m, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := (kernels.Options{Threads: 1}).MulMat(Y, W, X); err != nil {
		t.Fatal(err)
	}
	want := Y.Data

	closed := kernels.NewPool(threads)
	closed.Close()
	for _, tc := range []struct {
		name string
		pool *kernels.Pool // SimOptions.Kernels.Pool
		none bool          // no goroutine may be created
	}{{"stream pool", nil, true}, {"closed pool", closed, false}} {
		t.Run(tc.name, func(t *testing.T) {
			g00 := runtime.NumGoroutine()
			d, err := NewSimDevice(SimOptions{MemoryBytes: 4 << 20, Kernels: kernels.Options{Threads: threads, Pool: tc.pool}})
			if err != nil {
				t.Fatal(err)
			}
			if err := d.SetDevice(0); err != nil {
				t.Fatal(err)
			}
			st, err := d.CreateStream()
			if err != nil {
				t.Fatal(err)
			}
			var pw, px, py Ptr
			for _, p := range []struct {
				p    *Ptr
				size int64
			}{{&pw, 4 * k * m}, {&px, 4 * k * n}, {&py, 4 * m * n}} {
				if *p.p, err = d.Malloc(p.size); err != nil {
					t.Fatal(err)
				}
			}
			upload(t, d, pw, w)
			upload(t, d, px, x)
			kl := &KernelLaunch{Name: "aclnnMatmul", Op: ir.OpMulMat, Inputs: []TensorDesc{f32Desc(pw, k, m), f32Desc(px, k, n)}, Output: f32Desc(py, m, n), Node: 1}
			step := func() {
				if err := d.Launch(st, kl); err != nil {
					t.Fatal(err)
				}
				if err := d.Launch(st, kl); err != nil {
					t.Fatal(err)
				}
				if err := d.SynchronizeStream(st); err != nil {
					t.Fatal(err)
				}
			}
			step() // starts the stream's pool
			if err := d.CaptureBegin(st, CaptureGlobal); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if err := d.Launch(st, kl); err != nil {
					t.Fatal(err)
				}
			}
			g, err := d.CaptureEnd(st)
			if err != nil {
				t.Fatal(err)
			}

			g0 := gocount.Created(t)
			for range 10 {
				step()
				if err := d.ExecuteAsync(g, st); err != nil {
					t.Fatal(err)
				}
				if err := d.SynchronizeStream(st); err != nil {
					t.Fatal(err)
				}
			}
			created := gocount.Created(t) - g0
			if tc.none != (created == 0) {
				t.Errorf("50 kernels (10 steps of 2 launches and a 3-kernel graph) created %d goroutines", created)
			}
			if got := download(t, d, py, 4*m*n); !bytes.Equal(got, want) {
				t.Error("result differs from the host kernel on one goroutine")
			}
			if err := d.DestroyGraph(g); err != nil {
				t.Fatal(err)
			}
			if err := d.DestroyStream(st); err != nil {
				t.Fatal(err)
			}
			if !tc.none {
				return
			}
			// The default stream never ran anything, so it has no pool: once
			// the stream is gone, its workers are too.
			deadline := time.Now().Add(5 * time.Second)
			for runtime.NumGoroutine() > g00 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			if g := runtime.NumGoroutine(); g > g00 {
				t.Errorf("%d goroutines after DestroyStream, %d before the device existed", g, g00)
			}
		})
	}
}
