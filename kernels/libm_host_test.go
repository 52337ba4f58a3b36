//go:build hostlibm && cgo && linux

package kernels

import (
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/irtool/irtool/internal/hostlibm"
)

var libmStep = flag.Uint("libm-step", 7, "TestLibmMatchesHost: compare every N-th float32 encoding (1: all 2^32)")

// TestLibmMatchesHost compares sincosf and expf with the host C library's
// on every libm-step-th float32 encoding (go test -tags hostlibm ./kernels
// -run LibmMatchesHost -libm-step 1 for all of them). The host must be
// GNU libc 2.28 or later on an x86-64 CPU with FMA, as llama.cpp's Linux
// builds run; with -update it rewrites testdata/libm_glibc.txt from the
// host (TestLibmGolden's cases).
func TestLibmMatchesHost(t *testing.T) {
	step := uint64(*libmStep)
	if step == 0 {
		step = 1
	}
	workers := runtime.GOMAXPROCS(0)
	var mu sync.Mutex
	var bad []string
	var wg sync.WaitGroup
	const chunk = 1 << 16
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := make([]float32, 0, chunk)
			s, c, e := make([]float32, chunk), make([]float32, chunk), make([]float32, chunk)
			flush := func() {
				hostlibm.Sincosf(x, s, c)
				hostlibm.Expf(x, e)
				for i, v := range x {
					ms, mc := sincosf(v)
					me := expf(v)
					if !sameF32(ms, s[i]) || !sameF32(mc, c[i]) || !sameF32(me, e[i]) {
						mu.Lock()
						if len(bad) < 20 {
							bad = append(bad, fmt.Sprintf("x=%x (%g): sincosf %x %x host %x %x; expf %x host %x", math.Float32bits(v), v,
								math.Float32bits(ms), math.Float32bits(mc), math.Float32bits(s[i]), math.Float32bits(c[i]), math.Float32bits(me), math.Float32bits(e[i])))
						}
						mu.Unlock()
					}
				}
				x = x[:0]
			}
			for u := uint64(w) * step; u < 1<<32; u += uint64(workers) * step {
				x = append(x, math.Float32frombits(uint32(u)))
				if len(x) == chunk {
					flush()
				}
			}
			flush()
		}()
	}
	wg.Wait()
	for _, b := range bad {
		t.Error(b)
	}
	if *update {
		writeLibmGolden(t)
	}
}

// TestPowfMatchesHost compares powf with the host's on RoPE's
// powf(freq_base, -2/n_dims) over a sweep of bases, ALiBi's powers of two
// and random pairs.
func TestPowfMatchesHost(t *testing.T) {
	x, y := powfGoldenInputs()
	r := make([]float32, len(x))
	hostlibm.Powf(x, y, r)
	bad := 0
	for i := range x {
		if got := powf(x[i], y[i]); !sameF32(got, r[i]) {
			if bad++; bad <= 20 {
				t.Errorf("powf(%x, %x) = %x, host %x", math.Float32bits(x[i]), math.Float32bits(y[i]), math.Float32bits(got), math.Float32bits(r[i]))
			}
		}
	}
	t.Logf("%d pairs, %d differ", len(x), bad)
	if *update {
		f, err := os.Create("testdata/libm_glibc_powf.txt")
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(f, "# x y powf(x, y) as float32 encodings, from GNU libc 2.36 (x86-64, FMA): go test -tags hostlibm ./kernels -run PowfMatchesHost -update")
		kept := 0
		for i := range x {
			notNearest := r[i] != float32(math.Pow(float64(x[i]), float64(y[i])))
			if notNearest || i%499 == 0 {
				fmt.Fprintf(f, "%08x %08x %08x\n", math.Float32bits(x[i]), math.Float32bits(y[i]), math.Float32bits(r[i]))
				kept++
			}
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("kept %d", kept)
	}
}

// writeLibmGolden stores the host's results on the golden inputs.
func writeLibmGolden(t *testing.T) {
	cand := libmGoldenInputs()
	s, c, e := make([]float32, len(cand)), make([]float32, len(cand)), make([]float32, len(cand))
	hostlibm.Sincosf(cand, s, c)
	hostlibm.Expf(cand, e)
	seen := map[uint32]bool{}
	nTrig, nExp := 0, 0
	var xs []float32
	for i, x := range cand {
		if seen[math.Float32bits(x)] {
			continue
		}
		trig := s[i] != float32(math.Sin(float64(x))) || c[i] != float32(math.Cos(float64(x)))
		ex := e[i] != float32(math.Exp(float64(x)))
		if (trig && nTrig < 600) || (ex && nExp < 300) {
			seen[math.Float32bits(x)] = true
			xs = append(xs, x)
			if trig {
				nTrig++
			}
			if ex {
				nExp++
			}
		}
	}
	xs = append(xs, libmEdges()...)
	s, c, e = make([]float32, len(xs)), make([]float32, len(xs)), make([]float32, len(xs))
	hostlibm.Sincosf(xs, s, c)
	hostlibm.Expf(xs, e)
	f, err := os.Create("testdata/libm_glibc.txt")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "# x sinf(x) cosf(x) expf(x) as float32 encodings, from GNU libc 2.36 (x86-64, FMA): go test -tags hostlibm ./kernels -run LibmMatchesHost -update")
	for i, x := range xs {
		fmt.Fprintf(f, "%08x %08x %08x %08x\n", math.Float32bits(x), math.Float32bits(s[i]), math.Float32bits(c[i]), math.Float32bits(e[i]))
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
