package program

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/session"
)

// tpRanks starts one program session per rank of tp, each on its own
// simulated device, their collectives in one group.
func tpRanks(t *testing.T, tp *models.TP, f *gguf.File, timeout time.Duration, ko kernels.Options) (*session.Ranks, *device.Group, []*Runner) {
	t.Helper()
	grp, err := device.NewGroup(models.TPGroup, len(tp.Ranks), timeout)
	if err != nil {
		t.Fatal(err)
	}
	var steppers []session.Stepper
	var sessions []*Runner
	for i, r := range tp.Ranks {
		c, err := grp.Comm(i)
		if err != nil {
			t.Fatal(err)
		}
		ks := eval.NewCollectiveKernels(nil, c)
		dev, err := device.NewSimDevice(device.SimOptions{MemoryBytes: 64 << 20, KernelSet: ks, Kernels: ko})
		if err != nil {
			t.Fatal(err)
		}
		s, err := NewRunner(r.Model, r.Weights(f), dev, Options{Policy: policy(true), KernelSet: ks, Kernels: ko})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		steppers = append(steppers, s)
		sessions = append(sessions, s)
	}
	ranks, err := session.NewRanks(steppers, grp.Fail)
	if err != nil {
		t.Fatal(err)
	}
	return ranks, grp, sessions
}

// tpModels are the reference models with llama.cpp runs whose heads
// allow two ranks, with the degrees tested.
var tpModels = []struct {
	name  string
	ranks []int
}{
	{"stories260K", []int{2, 4}},
	{"synth-llama-F32", []int{2, 4}}, // 4 ranks: the 2 KV heads replicated
	{"synth-llama-F16", []int{2}},
	{"synth-llama-Q4_0", []int{2}},
	{"synth-llama-Q8_0", []int{2}},
	{"synth-llama256-Q2_K", []int{2}},
	{"synth-llama256-Q4_K", []int{2}},
	{"synth-llama3rope-Q4_0", []int{2}},
	{"synth-qwen3-Q4_0", []int{2, 4}},
	{"synth-gemma3-Q4_0", []int{2}},
	{"synth-phi3-Q4_0", []int{2}},
	{"synth-qwen3moe-Q4_0", []int{2}},
	{"synth-llamamoe-Q4_0", []int{2}},
}

// TestTPMatchesLlamaCpp runs llama.cpp's prompt and greedy tokens through
// the ranks of each tensor-parallel split on simulated devices: the
// prefill and first decode logits within 1e-3 of max|logit| of
// llama.cpp's, the top-5 of every step within 1e-3, llama.cpp's tokens
// wherever its top-1/top-2 gap exceeds 2e-3 of max|logit|; in exact mode,
// every step's logits bit-identical to one simulated device's. A split
// the layout cannot take (a quantisation block cut by the column split)
// must be refused with the block named, and is logged.
func TestTPMatchesLlamaCpp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every split of the reference models")
	}
	for _, tm := range tpModels {
		if d := testref.SharedDir(); d != "" {
			if _, err := os.Stat(filepath.Join(d, "llamacpp", tm.name+".llamacpp.json")); err == nil {
				continue // TestTPSharedModelsMatchLlamaCpp runs it
			}
		}
		checkTP(t, testref.Testdata(tm.name+".gguf"), filepath.Join(testref.CopyDir(), "llamacpp", tm.name+".llamacpp.json"), tm.ranks)
	}
}

// TestTPSharedModelsMatchLlamaCpp is TestTPMatchesLlamaCpp on every model
// of the external reference data directory that has a llama.cpp run and
// whose architecture the split takes, over 2 ranks (and 4 for
// stories260K, synth-llama-F32 and synth-qwen3-F32, whose 2 KV heads are
// then replicated).
func TestTPSharedModelsMatchLlamaCpp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every split of the reference models")
	}
	if testref.SharedDir() == "" {
		t.Skip("no external reference data directory (TestTPMatchesLlamaCpp covers the copies in testdata)")
	}
	for _, path := range testref.Models(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".gguf")
		ref := filepath.Join(testref.SharedDir(), "llamacpp", name+".llamacpp.json")
		if _, err := os.Stat(ref); err != nil {
			t.Logf("%s: no llama.cpp run", name)
			continue
		}
		ranks := []int{2}
		switch name {
		case "stories260K", "synth-llama-F32", "synth-qwen3-F32":
			ranks = []int{2, 4}
		}
		checkTP(t, path, ref, ranks)
	}
}

// checkTP runs the checks of TestTPMatchesLlamaCpp on one model.
func checkTP(t *testing.T, path, refPath string, degrees []int) {
	t.Helper()
	const bound = 1e-3
	name := strings.TrimSuffix(filepath.Base(path), ".gguf")
	ref := testmodel.LoadRun(t, refPath)
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mo := models.Options{NCtx: ref.Context.NCtx}
	ko := ref.Kernels(t) // the llama.cpp build's summation orders
	m, err := models.Build(f, mo)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := device.NewSimDevice(device.SimOptions{MemoryBytes: 64 << 20, Kernels: ko})
	if err != nil {
		t.Fatal(err)
	}
	one, err := NewRunner(m, f, dev, Options{Policy: policy(true), Kernels: ko})
	if err != nil {
		t.Fatal(err)
	}
	var oneLogits [][]float32
	feed := ref.Prompt.Tokens
	for _, tok := range ref.Generation.Tokens {
		res, err := one.Step(feed)
		if err != nil {
			t.Fatal(err)
		}
		oneLogits = append(oneLogits, res.Logits[len(res.Logits)-1])
		feed = []int32{tok}
	}
	one.Close()
	for _, n := range degrees {
		for _, exact := range []bool{false, true} {
			label := fmt.Sprintf("%s --tp %d", name, n)
			if exact {
				label += " --tp-exact"
			}
			tp, err := models.ShardTPFile(f, mo, models.TPOptions{Ranks: n, Exact: exact})
			if err != nil {
				switch {
				case !exact && strings.Contains(err.Error(), "block"):
					t.Logf("%s: refused: %v", label, err)
				default:
					t.Errorf("%s: %v", label, err)
				}
				continue
			}
			ranks, _, _ := tpRanks(t, tp, f, 10*time.Second, ko)
			feed := ref.Prompt.Tokens
			worstRef, worstOne, tokensOK := 0.0, 0.0, true
			for i, tok := range ref.Generation.Tokens {
				res, err := ranks.Step(feed)
				if err != nil {
					t.Fatalf("%s step %d: %v", label, i, err)
				}
				logits := res.Logits[len(res.Logits)-1]
				switch i {
				case 0:
					worstRef = max(worstRef, testmodel.RelErr(logits, ref.Prefill.LogitsLast))
				case 1:
					worstRef = max(worstRef, testmodel.RelErr(logits, ref.Decode.Logits))
				}
				scale := 0.0
				for _, v := range logits {
					scale = max(scale, math.Abs(float64(v)))
				}
				top5 := ref.Generation.Top5[i]
				for _, p := range top5 {
					worstRef = max(worstRef, math.Abs(float64(logits[int(p[0])])-p[1])/scale)
				}
				if got := session.Argmax(logits); got != tok && top5[0][1]-top5[1][1] > 2*bound*scale {
					t.Errorf("%s step %d: token %d, llama.cpp %d", label, i, got, tok)
					tokensOK = false
				}
				d := testmodel.RelErr(logits, oneLogits[i])
				worstOne = max(worstOne, d)
				if exact && d != 0 {
					t.Errorf("%s step %d: %.3g of max|logit| from one device's, want bit-identical", label, i, d)
				}
				feed = []int32{tok}
			}
			if worstRef > bound {
				t.Errorf("%s: max|Δ|/max|logit| = %.3g against llama.cpp", label, worstRef)
			}
			t.Logf("%s: %d steps, llama.cpp's tokens %v, max|Δ|/max|logit| %.3g against llama.cpp, %.3g against one device (KV replicated %v, vocab split %v)",
				label, len(ref.Generation.Tokens), tokensOK, worstRef, worstOne, tp.KVReplicated, tp.VocabSplit)
		}
	}
}

// faultyComm is rank 1's communicator with a fault injected at its
// call-th all_reduce: a short buffer (a mismatch the group detects) or
// an error of its own (a failing rank).
type faultyComm struct {
	*device.Comm
	call, calls int
	fail        bool
}

func (c *faultyComm) AllReduce(send, recv []byte, dt ir.DType) error {
	c.calls++
	if c.calls == c.call {
		if c.fail {
			return errors.New("injected failure")
		}
		return c.Comm.AllReduce(send[:4], recv[:4], dt)
	}
	return c.Comm.AllReduce(send, recv, dt)
}

// TestTPFaultFailsEveryRank: a collective mismatch or a failing rank in
// the middle of a step fails the step on every rank within a second,
// naming the op and the ranks, and no goroutine outlives it.
func TestTPFaultFailsEveryRank(t *testing.T) {
	f, err := gguf.Open(testref.Testdata("stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tp, err := models.ShardTPFile(f, models.Options{}, models.TPOptions{Ranks: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		fail bool
		want []string
	}{
		{"mismatch", false, []string{"collective mismatch: rank 0 calls all_reduce(count 320, f32), rank 1 calls all_reduce(count 1, f32)"}},
		{"failing rank", true, []string{"rank 1: ", "injected failure"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			grp, err := device.NewGroup(models.TPGroup, 2, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var steppers []session.Stepper
			var sessions []*Runner
			for i, r := range tp.Ranks {
				dc, _ := grp.Comm(i)
				var comm eval.Communicator = dc
				if i == 1 {
					comm = &faultyComm{Comm: dc, call: 3, fail: c.fail}
				}
				ks := eval.NewCollectiveKernels(nil, comm)
				dev, err := device.NewSimDevice(device.SimOptions{MemoryBytes: 64 << 20, KernelSet: ks})
				if err != nil {
					t.Fatal(err)
				}
				s, err := NewRunner(r.Model, r.Weights(f), dev, Options{Policy: policy(true), KernelSet: ks})
				if err != nil {
					t.Fatal(err)
				}
				sessions = append(sessions, s)
				steppers = append(steppers, s)
			}
			ranks, err := session.NewRanks(steppers, grp.Fail)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = ranks.Step(prompt)
			if d := time.Since(start); d > time.Second {
				t.Errorf("the step failed after %s", d)
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\nwant it to contain %q", err, w)
				}
			}
			// Both ranks report: rank 0 through the group.
			if !strings.Contains(err.Error(), "rank 0: ") {
				t.Errorf("rank 0 did not fail: %v", err)
			}
			// Once the sessions are closed, no goroutine of the ranks,
			// the devices or the group is left.
			for _, s := range sessions {
				s.Close()
			}
			deadline := time.Now().Add(2 * time.Second)
			for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before {
				t.Errorf("%d goroutines after closing the ranks, %d before", n, before)
			}
		})
	}
}

// TestPPMatchesOneDevice: pipeline stages on simulated devices give one
// simulated device's logits bit for bit at every step of llama.cpp's
// greedy run.
func TestPPMatchesOneDevice(t *testing.T) {
	for _, c := range []struct {
		name   string
		stages int
	}{{"stories260K", 5}, {"synth-qwen3moe-Q4_0", 2}, {"synth-phi3-Q4_0", 2}, {"synth-gemma3-Q4_0", 2}} {
		ref := testmodel.LoadRun(t, filepath.Join(testref.CopyDir(), "llamacpp", c.name+".llamacpp.json"))
		f, err := gguf.Open(testref.Testdata(c.name + ".gguf"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		m, err := models.Build(f, models.Options{NCtx: ref.Context.NCtx})
		if err != nil {
			t.Fatal(err)
		}
		one, err := NewRunner(m, f, newSim(t), Options{Policy: policy(true)})
		if err != nil {
			t.Fatal(err)
		}
		defer one.Close()
		graphs, err := passes.ShardPP(m.Graph, c.stages)
		if err != nil {
			t.Fatal(err)
		}
		grp, err := device.NewGroup(passes.PPGroup, c.stages, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var steppers []session.Stepper
		for k, g := range graphs {
			comm, _ := grp.Comm(k)
			ks := eval.NewCollectiveKernels(nil, comm)
			dev, err := device.NewSimDevice(device.SimOptions{MemoryBytes: 64 << 20, KernelSet: ks})
			if err != nil {
				t.Fatal(err)
			}
			sm := *m
			sm.Graph = g
			s, err := NewRunner(&sm, f, dev, Options{Policy: policy(true), KernelSet: ks})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			steppers = append(steppers, s)
		}
		ranks, err := session.NewRanks(steppers, grp.Fail)
		if err != nil {
			t.Fatal(err)
		}
		feed := ref.Prompt.Tokens
		for i, tok := range ref.Generation.Tokens {
			want, err := one.Step(feed)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ranks.Step(feed)
			if err != nil {
				t.Fatalf("%s --pp %d step %d: %v", c.name, c.stages, i, err)
			}
			if d := testmodel.RelErr(got.Logits[0], want.Logits[0]); d != 0 {
				t.Errorf("%s --pp %d step %d: %.3g of max|logit| from one device's", c.name, c.stages, i, d)
			}
			feed = []int32{tok}
		}
		t.Logf("%s --pp %d: %d steps bit-identical to one device", c.name, c.stages, len(ref.Generation.Tokens))
	}
}
