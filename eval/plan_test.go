package eval_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
)

// stepGraph builds name's step graph (after the pass pipeline pipe) for
// nTokens tokens at position pos, and its inputs.
func stepGraph(t testing.TB, name, pipe string, nTokens, pos int64) (*ir.Graph, eval.WeightSource, map[string][]byte, []string) {
	t.Helper()
	f, m := testmodel.Build(t, testref.Testdata(name+".gguf"), models.Options{NCtx: 256})
	g := m.Graph
	p, err := passes.Parse(pipe)
	if err != nil {
		t.Fatal(err)
	}
	if len(p) > 0 {
		if g, _, err = passes.Run(g, p, passes.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	b := ir.Bindings{models.SymTokens: nTokens, models.SymKV: models.KVLen(pos+nTokens, 256), models.SymOutputs: 1, models.SymKVHead: pos}
	sg, err := g.Specialize(b)
	if err != nil {
		t.Fatal(err)
	}
	toks := make([]int32, nTokens)
	for i := range toks {
		toks[i] = int32((i*7919 + 13) % int(m.HParams.NVocab))
	}
	var states []string
	for _, n := range sg.Leaves(ir.OpState) {
		states = append(states, n.Name)
	}
	return sg, f, models.Inputs(toks, pos, b), states
}

type runner interface {
	testmodel.Runner
	BindState(string, []byte) error
}

// runWith binds states (a deterministic non-zero KV cache, so attention
// reads real history) and inputs, runs, and returns output 0 and the
// states.
func runWith(t *testing.T, r runner, g *ir.Graph, in map[string][]byte, states []string) ([]float32, map[string][]byte) {
	t.Helper()
	st := map[string][]byte{}
	for _, name := range states {
		var size int64
		for _, n := range g.Leaves(ir.OpState) {
			if n.Name == name {
				size, _ = n.Type.Bytes()
			}
		}
		buf := make([]byte, size)
		for i := range buf {
			// Small F16 values: byte pairs with a low exponent.
			if i%2 == 1 {
				buf[i] = 0x20 + byte(i/2%7)
			} else {
				buf[i] = byte(i * 31)
			}
		}
		st[name] = buf
		if err := r.BindState(name, buf); err != nil {
			t.Fatal(err)
		}
	}
	return testmodel.RunOutput(t, r, in), st
}

// TestPlanMatchesExecutor runs step graphs (prefill and decode, with the
// default pipeline and as built) on the compiled plan with 1, 2 and 3
// threads and on the reference executor: logits and the KV cache they
// write must agree bit for bit.
func TestPlanMatchesExecutor(t *testing.T) {
	for _, name := range []string{"stories260K", "synth-llama-F16", "synth-llama-Q8_0", "synth-llama-Q4_0", "synth-llama256-Q2_K", "synth-qwen2-tied-Q4_0",
		"synth-gemma3-Q4_0", "synth-llama3rope-Q4_0", "synth-phi3-Q4_0", "synth-qwen3-Q4_0", "synth-qwen3moe-Q4_0", "synth-llamamoe-Q4_0"} {
		for _, pipe := range []string{"default", "none"} {
			for _, shape := range []struct{ tokens, pos int64 }{{7, 0}, {1, 40}} {
				t.Run(fmt.Sprintf("%s/%s/%dx%d", name, pipe, shape.tokens, shape.pos), func(t *testing.T) {
					g, w, in, states := stepGraph(t, name, pipe, shape.tokens, shape.pos)
					ex, err := eval.NewExecutor(g, w, eval.ExecOptions{})
					if err != nil {
						t.Fatal(err)
					}
					want, wantState := runWith(t, ex, g, in, states)
					for _, threads := range []int{1, 2, 3} {
						workers := eval.NewWorkers(threads)
						defer workers.Close()
						p, err := eval.NewExecutable(g, w, eval.ExecOptions{}, workers)
						if err != nil {
							t.Fatal(err)
						}
						got, gotState := runWith(t, p, g, in, states)
						for i := range want {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("threads %d: logit %d = %v, executor %v", threads, i, got[i], want[i])
							}
						}
						for name, b := range wantState {
							if string(gotState[name]) != string(b) {
								t.Fatalf("threads %d: state %q differs", threads, name)
							}
						}
						if prep, fb := p.Prepared(); fb != 0 {
							t.Errorf("threads %d: %d prepared kernels, %d through the kernel table", threads, prep, fb)
						}
					}
				})
			}
		}
	}
}

// ranDecodePlan compiles the default pipeline's one-token step graph of
// model name at position pos to an Executable on 2 workers (closed when the test
// ends) and runs it once.
func ranDecodePlan(t *testing.T, name string, pos int64) *eval.Executable {
	return ranDecodePlanPipe(t, name, "default", pos)
}

// ranDecodePlanPipe is ranDecodePlan with the pass pipeline pipe.
func ranDecodePlanPipe(t *testing.T, name, pipe string, pos int64) *eval.Executable {
	t.Helper()
	g, w, in, states := stepGraph(t, name, pipe, 1, pos)
	workers := eval.NewWorkers(2)
	t.Cleanup(workers.Close)
	p, err := eval.NewExecutable(g, w, eval.ExecOptions{}, workers)
	if err != nil {
		t.Fatal(err)
	}
	runWith(t, p, g, in, states)
	return p
}

// TestPlanDecodeAllocatesNothing: after the first run, running a decode
// step allocates nothing, with the default pipeline's graph and with the
// unfused one (no fusion passes).
func TestPlanDecodeAllocatesNothing(t *testing.T) {
	for _, name := range []string{"stories260K", "synth-llama-Q4_0", "synth-llama-F16", "synth-qwen2-tied-Q4_0", "synth-gemma3-Q4_0",
		"synth-qwen3moe-Q4_0", "synth-llamamoe-Q4_0"} {
		for _, pipe := range []string{"default", "none"} {
			p := ranDecodePlanPipe(t, name, pipe, 9)
			allocs := testing.AllocsPerRun(20, func() {
				if err := p.Run(); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%s %s: %.1f allocations per decode step, want 0", name, pipe, allocs)
			}
		}
	}
}

// TestPlanErrorNamesNode: a token id outside the vocabulary makes the
// embedding lookup fail with an error naming the node, not a panic.
func TestPlanErrorNamesNode(t *testing.T) {
	p := ranDecodePlan(t, "stories260K", 0)
	copy(p.Input("inp_tokens"), []byte{0xff, 0xff, 0xff, 0x7f})
	err := p.Run()
	if err == nil {
		t.Fatal("out-of-range token ran")
	}
	t.Log(err)
}
