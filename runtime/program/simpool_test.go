package program

import (
	"slices"
	"testing"

	"github.com/irtool/irtool/internal/gocount"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
)

// The kernels of a session on the simulated device run on persistent
// pools (the device stream's, and the session's for its CPU segments):
// once the first generation started them, prefill and decode steps create
// no goroutine, and the tokens are the same as with goroutines started per
// kernel (a closed pool, which the kernels bypass; that run does create
// goroutines, so the count can fail). synth-llama256-Q4_K: big enough for
// its matmuls to be split over several goroutines.
func TestSimSessionNoGoroutinePerKernel(t *testing.T) {
	f, m := openModel(t, "synth-llama256-Q4_K.gguf", models.Options{NCtx: 64})
	closed := kernels.NewPool(4)
	closed.Close()
	var tokens [2][]int32
	for i, pool := range []*kernels.Pool{nil, closed} {
		ko := kernels.Options{Quant: kernels.QuantGGML, Threads: 4, Pool: pool}
		dev, err := device.NewSimDevice(device.SimOptions{MemoryBytes: 64 << 20, Kernels: ko})
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewSession(m, f, dev, Options{Policy: policy(true), Kernels: ko})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Generate(prompt, 2, false, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.Rewind(0); err != nil {
			t.Fatal(err)
		}
		g0 := gocount.Created(t)
		r, err := s.Generate(prompt, 8, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		created := gocount.Created(t) - g0
		tokens[i] = r.Tokens
		t.Logf("own pool=%v: %d goroutines created over a prefill and 8 decode steps", pool == nil, created)
		if (pool == nil) != (created == 0) {
			t.Errorf("own pool=%v: %d goroutines created", pool == nil, created)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(tokens[0], tokens[1]) {
		t.Errorf("tokens on the stream pool %v, with goroutines per kernel %v", tokens[0], tokens[1])
	}
}

// The same at prefill size, where the row kernels (add, rms_norm,
// soft_max, rope, swiglu, get_rows, ...) split their rows too: a
// 160-token prompt of synth-llama256-Q4_K (n_embd 256: three chunks per
// row kernel), with the default pipeline's fused graph and the unfused one
// of "none". On the pools neither the prefill nor the decode steps create a
// goroutine; with a closed pool they do, and the tokens are the same.
func TestSimSessionPrefillNoGoroutinePerKernel(t *testing.T) {
	if testing.Short() {
		t.Skip("prefill of 160 tokens, twice per pipeline")
	}
	f, m := openModel(t, "synth-llama256-Q4_K.gguf", models.Options{NCtx: 192})
	long := make([]int32, 160)
	for i := range long {
		long[i] = int32(3 + i*7%500)
	}
	closed := kernels.NewPool(4)
	closed.Close()
	for _, pipe := range []string{"default", "none"} {
		t.Run(pipe, func(t *testing.T) {
			var tokens [2][]int32
			for i, pool := range []*kernels.Pool{nil, closed} {
				ko := kernels.Options{Quant: kernels.QuantGGML, Threads: 4, Pool: pool}
				dev, err := device.NewSimDevice(device.SimOptions{MemoryBytes: 256 << 20, Kernels: ko})
				if err != nil {
					t.Fatal(err)
				}
				s, err := NewSession(m, f, dev, Options{Policy: policy(true), Kernels: ko, Compile: CompileOptions{Passes: pipe}})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := s.Generate(long, 1, false, nil); err != nil {
					t.Fatal(err)
				}
				if err := s.Rewind(0); err != nil {
					t.Fatal(err)
				}
				g0 := gocount.Created(t)
				r, err := s.Generate(long, 3, false, nil)
				if err != nil {
					t.Fatal(err)
				}
				created := gocount.Created(t) - g0
				tokens[i] = r.Tokens
				t.Logf("own pool=%v: %d goroutines created over a %d-token prefill and 2 decode steps", pool == nil, created, len(long))
				if (pool == nil) != (created == 0) {
					t.Errorf("own pool=%v: %d goroutines created", pool == nil, created)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(tokens[0], tokens[1]) {
				t.Errorf("tokens on the stream pool %v, with goroutines per kernel %v", tokens[0], tokens[1])
			}
		})
	}
}
