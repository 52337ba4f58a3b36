package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/gocount"
)

// poolCase is one kernel call that splits its work over several chunks.
type poolCase struct {
	name string
	run  func(o Options, dst Tensor) error
	dst  func() Tensor
}

func poolCases(t *testing.T) []poolCase {
	r := rand.New(rand.NewPCG(21, 22))
	const k, m, n = 256, 512, 3
	wv := randF32(r, k*m, 0.5)
	q8, err := gguf.QuantizeQ8_0(wv)
	if err != nil {
		t.Fatal(err)
	}
	wq, err := FromBytes(gguf.TypeQ8_0, q8, k, m)
	if err != nil {
		t.Fatal(err)
	}
	wf := f16t(t, wv, k, m)
	x := f32t(t, randF32(r, k*n, 1), k, n)
	bias := f32t(t, randF32(r, m, 1), m)
	const hd, nt, nh, nhkv, nkv = 64, 16, 8, 2, 96
	q := f32t(t, randF32(r, hd*nt*nh, 1), hd, nt, nh)
	kk := f32t(t, randF32(r, hd*nkv*nhkv, 1), hd, nkv, nhkv)
	v := f32t(t, randF32(r, nkv*hd*nhkv, 1), nkv, hd, nhkv)
	mm := func() Tensor { return newT(t, gguf.TypeF32, m, n) }
	return []poolCase{
		{"mul_mat Q8_0", func(o Options, d Tensor) error { return o.MulMat(d, wq, x) }, mm},
		{"mul_mat F16", func(o Options, d Tensor) error { return o.MulMat(d, wf, x) }, mm},
		{"mul_mat_add Q8_0", func(o Options, d Tensor) error { return o.MulMatAdd(d, wq, x, bias) }, mm},
		{"attention", func(o Options, d Tensor) error { return o.Attention(d, q, kk, v, nil, 0.125, 0) },
			func() Tensor { return newT(t, gguf.TypeF32, hd, nt, nh) }},
	}
}

// elementwisePoolCases are the row kernels at a prefill-like size (8 chunks
// of elemGrain elements): their chunks run on the pool too.
func elementwisePoolCases(t *testing.T) []poolCase {
	r := rand.New(rand.NewPCG(23, 24))
	const ne0, nh, nt = 64, 8, 256 // [head_dim, n_head, n_tokens]: 131072 values
	x := f32t(t, randF32(r, ne0*nh*nt, 2), ne0, nh, nt)
	y := f32t(t, randF32(r, ne0*nh*nt, 2), ne0, nh, nt)
	w := f32t(t, randF32(r, ne0, 1), ne0)
	pos := make([]int32, nt)
	for i := range pos {
		pos[i] = int32(3 * i)
	}
	pt := i32t(t, pos, nt)
	rp := RopeParams{NDims: ne0, Mode: RopeNeox, NCtxOrig: 4096, FreqBase: 10000, FreqScale: 1, AttnFactor: 1, BetaFast: 32, BetaSlow: 1}
	cache := newT(t, gguf.TypeF32, ne0, nt)
	if err := RopeCache(cache, pt, rp); err != nil {
		t.Fatal(err)
	}
	const nkv, nq = 512, 256 // soft_max rows [n_kv, n_q]
	kq := f32t(t, randF32(r, nkv*nq, 4), nkv, nq)
	mask := make([]float32, nkv*nq)
	for i := range nq {
		for j := range nkv {
			if j > 256+i {
				mask[i*nkv+j] = float32(math.Inf(-1))
			}
		}
	}
	mt := f16t(t, mask, nkv, nq)
	const vocab = 1024
	emb, err := gguf.QuantizeQ8_0(randF32(r, ne0*4*vocab, 1))
	if err != nil {
		t.Fatal(err)
	}
	et, err := FromBytes(gguf.TypeQ8_0, emb, ne0*4, vocab)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int32, 512)
	for i := range ids {
		ids[i] = int32(r.IntN(vocab))
	}
	it := i32t(t, ids, int64(len(ids)))
	like := func() Tensor { return newT(t, gguf.TypeF32, ne0, nh, nt) }
	likeF16 := func() Tensor { return newT(t, gguf.TypeF16, ne0, nh, nt) }
	return []poolCase{
		{"add", func(o Options, d Tensor) error { return o.Add(d, x, w) }, like},
		{"mul", func(o Options, d Tensor) error { return o.Mul(d, x, y) }, like},
		{"div", func(o Options, d Tensor) error { return o.Div(d, x, w) }, like},
		{"scale", func(o Options, d Tensor) error { return o.Scale(d, x, 0.3) }, like},
		{"silu f16 dst", func(o Options, d Tensor) error { return o.Silu(d, x) }, likeF16},
		{"gelu", func(o Options, d Tensor) error { return o.Gelu(d, x) }, like},
		{"swiglu", func(o Options, d Tensor) error { return o.SwiGLU(d, x, y) }, like},
		{"rms_norm", func(o Options, d Tensor) error { return o.RMSNorm(d, x, 1e-5) }, like},
		{"rms_norm_mul", func(o Options, d Tensor) error { return o.RMSNormMul(d, x, w, 1e-5) }, like},
		{"add_rms_norm_mul", func(o Options, d Tensor) error {
			return o.AddRMSNormMul(d, newT(t, gguf.TypeF32, ne0, nh, nt), x, y, w, 1e-5)
		}, like},
		{"rope", func(o Options, d Tensor) error { return o.Rope(d, x, pt, rp) }, like},
		{"rope_apply", func(o Options, d Tensor) error { return o.RopeApply(d, x, cache, rp) }, like},
		{"soft_max", func(o Options, d Tensor) error { return o.SoftMax(d, kq, &mt, 0.125, 0) },
			func() Tensor { return newT(t, gguf.TypeF32, nkv, nq) }},
		{"get_rows Q8_0", func(o Options, d Tensor) error { return o.GetRows(d, et, it) },
			func() Tensor { return newT(t, gguf.TypeF32, ne0*4, int64(len(ids))) }},
	}
}

// A kernel run on a Pool gives the same bits as with goroutines of its own
// and as on one goroutine, and creates no goroutine; without a Pool the
// same calls do create goroutines (so the count can fail).
func TestPoolSameBitsNoGoroutines(t *testing.T) {
	p := NewPool(4)
	defer p.Close()
	for _, c := range append(poolCases(t), elementwisePoolCases(t)...) {
		t.Run(c.name, func(t *testing.T) {
			for _, quant := range []QuantMode{QuantGGML, QuantDequant} {
				one, own, pooled := c.dst(), c.dst(), c.dst()
				for _, run := range []struct {
					o   Options
					dst Tensor
				}{{Options{Quant: quant, Threads: 1}, one}, {Options{Quant: quant, Threads: 4}, own}, {Options{Quant: quant, Threads: 4, Pool: p}, pooled}} {
					if err := c.run(run.o, run.dst); err != nil {
						t.Fatal(err)
					}
				}
				same(t, fmt.Sprintf("%s pool vs one goroutine", quant), vals(t, pooled), vals(t, one))
				same(t, fmt.Sprintf("%s pool vs own goroutines", quant), vals(t, pooled), vals(t, own))

				for _, tc := range []struct {
					o    Options
					want string
				}{{Options{Quant: quant, Threads: 4, Pool: p}, "none"}, {Options{Quant: quant, Threads: 4}, "some"}} {
					g0 := gocount.Created(t)
					for range 20 {
						if err := c.run(tc.o, c.dst()); err != nil {
							t.Fatal(err)
						}
					}
					got := gocount.Created(t) - g0
					if (tc.want == "none") != (got == 0) {
						t.Errorf("%s pool=%v: 20 calls created %d goroutines, want %s", quant, tc.o.Pool != nil, got, tc.want)
					}
				}
			}
		})
	}
}

// Nested use (a chunk that starts a parallel loop on the same pool) and
// concurrent use fall back to goroutines: no deadlock, every index once.
func TestPoolNestedAndConcurrent(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	const n, inner = 64, 100
	var hits [n * inner]atomic.Int32
	parallelFor(p, 3, n, 1, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			parallelFor(p, 3, inner, 1, func(l, h int) {
				for j := l; j < h; j++ {
					hits[i*inner+j].Add(1)
				}
			})
		}
	})
	for i := range hits {
		if h := hits[i].Load(); h != 1 {
			t.Fatalf("nested: index %d visited %d times", i, h)
		}
	}

	var wg sync.WaitGroup
	var total atomic.Int64
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				parallelFor(p, 3, 1000, 7, func(lo, hi int) { total.Add(int64(hi - lo)) })
			}
		}()
	}
	wg.Wait()
	if got := total.Load(); got != 4*50*1000 {
		t.Fatalf("concurrent: %d indexes visited, want %d", got, 4*50*1000)
	}
}

// A panic in a chunk on the pool reaches the kernel's caller as an error,
// and the pool keeps working; a closed pool falls back to goroutines.
func TestPoolPanicAndClose(t *testing.T) {
	p := NewPool(2)
	err := func() (err error) {
		defer guard("test_op", &err)
		parallelFor(p, 2, 100, 1, func(lo, hi int) {
			if lo <= 57 && 57 < hi {
				panic("boom")
			}
		})
		return nil
	}()
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("panic on the pool: err = %v, want one naming the panic", err)
	}
	for _, closed := range []bool{false, true} {
		if closed {
			p.Close()
			p.Close()
		}
		var sum atomic.Int64
		parallelFor(p, 2, 100, 1, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				sum.Add(int64(i))
			}
		})
		if got := sum.Load(); got != 4950 {
			t.Fatalf("closed=%v: sum %d, want 4950", closed, got)
		}
	}
}

// A Pool dropped without Close stops its workers once collected.
func TestPoolCollected(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		p := NewPool(4)
		parallelFor(p, 4, 100, 1, func(lo, hi int) {})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > before {
		t.Errorf("%d goroutines after the pool was dropped, %d before", g, before)
	}
}
