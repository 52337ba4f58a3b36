package program

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/session"
)

func openModel(t testing.TB, name string, opts models.Options) (*gguf.File, *models.Model) {
	t.Helper()
	f, err := gguf.Open(testref.Testdata(name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := models.Build(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	return f, m
}

func newSim(t testing.TB) *device.SimDevice {
	t.Helper()
	d, err := device.NewSimDevice(device.SimOptions{MemoryBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func policy(graphs bool) device.GraphPolicy {
	p := device.DefaultGraphPolicy()
	p.Graphs = graphs
	return p
}

// prompt is "Once upon a time" as llama.cpp tokenises it with the
// stories260K vocabulary (shared by every test model).
var prompt = []int32{1, 403, 407, 261, 378}

var testModels = []string{"stories260K", "synth-llama-F32", "synth-llama-F16", "synth-llama-Q8_0", "synth-llama-Q4_0"}

// llamaTokens returns llama.cpp's greedy tokens for a model, or nil when
// the external reference data is absent.
func llamaTokens(t *testing.T, model string) []int32 {
	t.Helper()
	dir := testref.Dir()
	data, err := os.ReadFile(dir + "/llamacpp/" + model + ".llamacpp.json")
	if err != nil {
		return nil
	}
	var ref struct {
		Prompt     struct{ Tokens []int32 }
		Generation struct{ Tokens []int32 }
	}
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatalf("%s: %v", model, err)
	}
	if !slices.Equal(ref.Prompt.Tokens, prompt) {
		t.Fatalf("%s: llama.cpp's prompt is %v, the test's %v", model, ref.Prompt.Tokens, prompt)
	}
	return ref.Generation.Tokens
}

func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func bitsEqual(a, b [][]float32) (bool, string) {
	if len(a) != len(b) {
		return false, fmt.Sprintf("%d vs %d rows", len(a), len(b))
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false, fmt.Sprintf("row %d: %d vs %d values", i, len(a[i]), len(b[i]))
		}
		for j := range a[i] {
			if math.Float32bits(a[i][j]) != math.Float32bits(b[i][j]) {
				return false, fmt.Sprintf("step %d logit %d: %g vs %g", i, j, a[i][j], b[i][j])
			}
		}
	}
	return true, ""
}

// Every path gives the same tokens: the CPU executor, the simulated device
// eager and with graphs, with and without the pass pipeline, and llama.cpp.
// Replayed logits equal eager ones bit for bit.
func TestSameTokensEveryPath(t *testing.T) {
	const n = 32
	for _, model := range testModels {
		t.Run(model, func(t *testing.T) {
			f, m := openModel(t, model+".gguf", models.Options{NCtx: 256})
			cpu, err := session.NewSession(m, f, session.SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want, err := cpu.Generate(prompt, n, true, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, pipe := range []string{"none", "default"} {
				var eager [][]float32
				for _, graphs := range []bool{false, true} {
					d := newSim(t)
					s, err := NewRunner(m, f, d, Options{Policy: policy(graphs), Compile: compiler.Options{Passes: pipe}})
					if err != nil {
						t.Fatal(err)
					}
					got, err := s.Generate(prompt, n, true, nil)
					if err != nil {
						t.Fatal(err)
					}
					what := fmt.Sprintf("passes %s, graphs %v", pipe, graphs)
					if !slices.Equal(got.Tokens, want.Tokens) {
						t.Errorf("%s: tokens %v, cpu %v", what, got.Tokens, want.Tokens)
					}
					// Lowering alone runs the executor's kernels on the same
					// bytes: bit-identical. Fused passes promise the same.
					if eq, where := bitsEqual(got.Logits, want.Logits); !eq {
						if pipe == "none" {
							t.Errorf("%s: logits differ from the cpu executor's (%s)", what, where)
						} else {
							t.Logf("%s: logits differ from the cpu executor's (%s)", what, where)
						}
					}
					st := s.Stats()
					if graphs {
						if st.Decode.Replays == 0 {
							t.Errorf("%s: no replays: %+v", what, st.Decode)
						}
						if eq, where := bitsEqual(got.Logits, eager); !eq {
							t.Errorf("%s: replayed logits differ from eager ones: %s", what, where)
						}
					} else {
						eager = got.Logits
						if st.Decode.Replays != 0 || st.Decode.Captures != 0 {
							t.Errorf("%s: graph mode off but %+v", what, st.Decode)
						}
					}
					if err := s.Close(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if ref := llamaTokens(t, model); ref != nil {
				agree := commonPrefix(want.Tokens, ref)
				if model == "stories260K" && agree != n {
					t.Errorf("greedy tokens %v, llama.cpp %v", want.Tokens, ref)
				}
				t.Logf("%s: the first %d of %d greedy tokens equal llama.cpp's", model, agree, n)
			}
		})
	}
}

// ggml-cann's cache behaviour over 64 decode tokens: with set_rows, one
// capture per capturable segment and shape bucket (n_kv changes every 32
// cells), every other step a hit; with cpy, the KV write's destination
// moves every token, so every step misses.
func TestDecodeHitsAndCpyMisses(t *testing.T) {
	const decode = 64
	for _, kv := range []models.KVWrite{models.KVSetRows, models.KVCpy} {
		for _, pipe := range []string{"none", "default"} {
			t.Run(kv.String()+"/"+pipe, func(t *testing.T) {
				f, m := openModel(t, "stories260K.gguf", models.Options{NCtx: 256, KVWrite: kv})
				d := newSim(t)
				pol := policy(true)
				pol.Cache.Capacity = 64
				s, err := NewRunner(m, f, d, Options{Policy: pol, Compile: compiler.Options{Passes: pipe}})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				res, err := s.Step(prompt)
				if err != nil {
					t.Fatal(err)
				}
				tok := session.Argmax(res.Logits[0])
				seen := map[string]bool{}
				hits, misses := int64(0), int64(0)
				for i := 0; i < decode; i++ {
					b, err := s.Compiler().Bucket(s.bindings(s.Pos(), 1))
					if err != nil {
						t.Fatal(err)
					}
					bucket := b.String()
					before := s.cache.Stats()
					res, err := s.Step([]int32{tok})
					if err != nil {
						t.Fatal(err)
					}
					tok = session.Argmax(res.Logits[0])
					after := s.cache.Stats()
					h, ms := after.Hits-before.Hits, after.Misses-before.Misses
					hits, misses = hits+h, misses+ms
					capturable := int64(0)
					for _, ls := range s.progs[bucket].segs {
						if ls.props != nil {
							capturable++
						}
					}
					if capturable == 0 {
						t.Fatalf("step %d: no capturable segment", i)
					}
					switch {
					case kv == models.KVCpy:
						if ms == 0 {
							t.Errorf("step %d: cpy mode, yet no miss (%d hits)", i, h)
						}
					case !seen[bucket]:
						if ms != capturable || h != 0 {
							t.Errorf("step %d (new bucket %s): %d misses, %d hits; want %d captures", i, bucket, ms, h, capturable)
						}
					default:
						if h != capturable || ms != 0 {
							t.Errorf("step %d (bucket %s): %d hits, %d misses; want every segment a hit", i, bucket, h, ms)
						}
					}
					seen[bucket] = true
				}
				st := s.Stats().Decode
				t.Logf("kv %s, passes %s: %d decode steps, %d buckets, %d hits, %d misses: hit rate %.1f%% (%d captures, %d replays, %d kernel launches)",
					kv, pipe, decode, len(seen), hits, misses, 100*st.HitRate, st.Captures, st.Replays, st.KernelLaunches)
			})
		}
	}
}

// Closing a session destroys its graphs (every eviction counted) and gives
// every pool block back.
func TestCloseFreesEverythingAndEvictionsDestroy(t *testing.T) {
	f, m := openModel(t, "stories260K.gguf", models.Options{NCtx: 256})
	d := newSim(t)
	pol := policy(true)
	pol.Cache.Capacity = 1
	s, err := NewRunner(m, f, d, Options{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	// Decode positions 5..78 cross three n_kv buckets (32, 64, 96).
	if _, err := s.Generate(prompt, 75, false, nil); err != nil {
		t.Fatal(err)
	}
	cs := s.Cache().Stats()
	if cs.Evictions == 0 {
		t.Fatalf("no evictions with capacity 1 over three buckets: %+v", cs)
	}
	if got := d.Stats().GraphsDestroyed; got != cs.Evictions {
		t.Errorf("device destroyed %d graphs, cache evicted %d", got, cs.Evictions)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ds := d.Stats()
	if ds.GraphsDestroyed != ds.Captures || d.LiveGraphs() != 0 {
		t.Errorf("%d captured, %d destroyed, %d live after close", ds.Captures, ds.GraphsDestroyed, d.LiveGraphs())
	}
	if p := ds.Pools[0]; p.LiveBlocks != 0 || p.UsedBytes != 0 {
		t.Errorf("pool after close: %v", p)
	}
	if _, err := s.Step(prompt); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("step after close: %v", err)
	}
	t.Logf("capacity 1: %d captures, %d evictions, all destroyed; pool %v", cs.Captures, cs.Evictions, ds.Pools[0])
}

// Several sessions share one device (and one compiler) from several
// goroutines; each must produce the CPU executor's tokens. Run with -race.
func TestConcurrentSessionsShareDevice(t *testing.T) {
	f, m := openModel(t, "stories260K.gguf", models.Options{NCtx: 256})
	cpu, err := session.NewSession(m, f, session.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 12
	want, err := cpu.Generate(prompt, n, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	comp, err := NewCompiler(m, compiler.Options{Passes: "none"})
	if err != nil {
		t.Fatal(err)
	}
	d := newSim(t)
	var wg sync.WaitGroup
	for u := 0; u < 3; u++ {
		wg.Add(1)
		go func(u int) {
			defer wg.Done()
			s, err := NewRunner(m, f, d, Options{Policy: policy(u != 2), Compiler: comp})
			if err != nil {
				t.Error(err)
				return
			}
			got, err := s.Generate(prompt, n, false, nil)
			if err != nil {
				t.Errorf("session %d: %v", u, err)
			} else if !slices.Equal(got.Tokens, want.Tokens) {
				t.Errorf("session %d: tokens %v, want %v", u, got.Tokens, want.Tokens)
			}
			if err := s.Close(); err != nil {
				t.Errorf("session %d: %v", u, err)
			}
		}(u)
	}
	wg.Wait()
	if p := d.Stats().Pools[0]; p.LiveBlocks != 0 {
		t.Errorf("pool after every session closed: %v", p)
	}
}

// With prefill graphs, prompts are padded to a bucket: two prompt chunks
// of different lengths in one bucket share one captured graph, and the
// tokens are still the CPU executor's.
func TestPrefillBuckets(t *testing.T) {
	f, m := openModel(t, "stories260K.gguf", models.Options{NCtx: 256})
	chunks := [][]int32{prompt[:3], prompt[3:]}
	cpu, err := session.NewSession(m, f, session.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want [][]float32
	for _, c := range chunks {
		r, err := cpu.Step(c)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, r.Logits[0])
	}
	pol := policy(true)
	pol.PrefillGraphs = true
	s, err := NewRunner(m, f, newSim(t), Options{Policy: pol, Compile: compiler.Options{Passes: "none"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got [][]float32
	for _, c := range chunks {
		r, err := s.Step(c)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Logits[0])
	}
	st := s.Stats().Prefill
	if st.Captures != 1 || st.CacheHits != 1 {
		t.Errorf("two prefill chunks in bucket 16: %d captures, %d hits; want 1 and 1", st.Captures, st.CacheHits)
	}
	for i := range got {
		if session.Argmax(got[i]) != session.Argmax(want[i]) {
			t.Errorf("chunk %d: argmax %d, cpu %d", i, session.Argmax(got[i]), session.Argmax(want[i]))
		}
	}
	// Padding adds rows the real tokens never attend to (both chunks stay
	// in n_kv bucket 32), so the logits are the unpadded run's bits.
	if eq, where := bitsEqual(got, want); !eq {
		t.Errorf("padded prefill logits differ from the unpadded cpu run: %s", where)
	}
	if got := s.Compiler().Buckets(); len(got) != 1 || !strings.Contains(got[0], "n_tokens=16") {
		t.Errorf("programs compiled: %v; want one, for n_tokens=16", got)
	}
}

// The CUDA-style warm-up captures a decode bucket on its second step.
func TestSessionWarmup(t *testing.T) {
	f, m := openModel(t, "stories260K.gguf", models.Options{NCtx: 256})
	pol := policy(true)
	pol.Cache.Warmup = true
	s, err := NewRunner(m, f, newSim(t), Options{Policy: pol, Compile: compiler.Options{Passes: "none"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Generate(prompt, 6, false, nil); err != nil {
		t.Fatal(err)
	}
	cs := s.Cache().Stats()
	// 5 decode steps in one bucket: eager, capture, then 3 replays.
	if cs.WarmupEager != 1 || cs.Captures != 1 || cs.Hits != 3 {
		t.Errorf("warm-up: %+v", cs)
	}
}

func TestStepErrors(t *testing.T) {
	f, m := openModel(t, "stories260K.gguf", models.Options{NCtx: 64})
	s, err := NewRunner(m, f, newSim(t), Options{Policy: policy(true)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		tokens []int32
		want   string
	}{
		{nil, "no tokens"},
		{[]int32{1, 600}, "out of range"},
		{make([]int32, 65), "context full"},
	} {
		if _, err := s.Step(tc.tokens); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("step %v: %v, want %q", tc.tokens, err, tc.want)
		}
	}
	if _, err := NewCompiler(m, compiler.Options{Target: "gpu9000"}); err == nil {
		t.Error("unknown target accepted")
	}
	if _, err := NewCompiler(m, compiler.Options{Passes: "no-such-pass"}); err == nil {
		t.Error("unknown pass accepted")
	}
}
