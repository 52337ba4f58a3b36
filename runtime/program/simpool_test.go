package program

import (
	"slices"
	"testing"

	"github.com/irtool/irtool/compiler"
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
	compareOwnPool(t, prompt, 7, func(ko kernels.Options) (*Runner, error) {
		dev, err := device.NewSimDevice(device.SimOptions{MemoryBytes: 64 << 20, Kernels: ko})
		if err != nil {
			return nil, err
		}
		return NewRunner(m, f, dev, Options{Policy: policy(true), Kernels: ko})
	})
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
	for _, pipe := range []string{"default", "none"} {
		t.Run(pipe, func(t *testing.T) {
			compareOwnPool(t, long, 2, func(ko kernels.Options) (*Runner, error) {
				dev, err := device.NewSimDevice(device.SimOptions{MemoryBytes: 256 << 20, Kernels: ko})
				if err != nil {
					return nil, err
				}
				return NewRunner(m, f, dev, Options{Policy: policy(true), Kernels: ko, Compile: compiler.Options{Passes: pipe}})
			})
		})
	}
}

// compareOwnPool runs a prefill of prompt and decode steps twice on
// sessions made by open: with the device's and the session's own pools
// (Options.Pool nil) and with a closed pool that the kernels bypass by
// starting goroutines. After a first generation has started the pools, the
// first run must create no goroutine and the second must create some (so
// the count can fail); both give the same tokens.
func compareOwnPool(t *testing.T, prompt []int32, steps int, open func(kernels.Options) (*Runner, error)) {
	t.Helper()
	closed := kernels.NewPool(4)
	closed.Close()
	var tokens [2][]int32
	for i, pool := range []*kernels.Pool{nil, closed} {
		s, err := open(kernels.Options{Quant: kernels.QuantGGML, Threads: 4, Pool: pool})
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
		r, err := s.Generate(prompt, steps+1, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		created := gocount.Created(t) - g0
		tokens[i] = r.Tokens
		t.Logf("own pool=%v: %d goroutines created over a %d-token prefill and %d decode steps", pool == nil, created, len(prompt), steps)
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
