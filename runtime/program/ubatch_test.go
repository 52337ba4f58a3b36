package program

import (
	"slices"
	"testing"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
)

// TestUBatchLoadsOnceAndChunks: with Options.UBatch the runner allocates
// every region at NewRunner (the largest step) and none after it, and a
// prompt longer than UBatch runs in chunks whose greedy tokens are those
// of the whole prompt in one step.
func TestUBatchLoadsOnceAndChunks(t *testing.T) {
	f, m := openModel(t, "stories260K.gguf", models.Options{NCtx: 128})
	long := make([]int32, 0, 60)
	for len(long) < 60 {
		long = append(long, prompt...)
	}
	gen := func(ub int64) ([]int32, Stats) {
		s, err := NewRunner(m, f, newSim(t), Options{Policy: policy(true), UBatch: ub, Compile: compiler.Options{Passes: "none"}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		res, err := s.Generate(long, 8, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		return res.Tokens, s.Stats()
	}
	whole, _ := gen(0)
	chunked, st := gen(16)
	if !slices.Equal(whole, chunked) {
		t.Errorf("chunks of 16 tokens: %v, the whole prompt: %v", chunked, whole)
	}
	if st.Prefill.Steps != 4 || st.AllocsAfterLoad != 0 || st.Pool.Allocs == 0 {
		t.Errorf("%d prefill steps (want 4 of at most 16 tokens), %d of %d allocations after load", st.Prefill.Steps, st.AllocsAfterLoad, st.Pool.Allocs)
	}
}

// The compiler rounds regions as the device pool does.
func TestPoolAlignAgrees(t *testing.T) {
	if compiler.PoolAlign != device.PoolBlockAlign || compiler.PoolAlign%device.PoolSizeAlign != 0 {
		t.Errorf("compiler.PoolAlign %d, device.PoolBlockAlign %d", compiler.PoolAlign, device.PoolBlockAlign)
	}
}
