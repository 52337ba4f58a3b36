//go:build cann

package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/irtool/irtool/internal/testref"
)

type cannTPOut struct {
	Tokens []int32 `json:"tokens"`
	Stats  struct {
		Rank  *int `json:"rank"`
		Ranks []struct {
			Mode   string         `json:"mode"`
			Cache  map[string]int `json:"cache"`
			Decode struct {
				Steps          int   `json:"steps"`
				Replays        int64 `json:"replays"`
				KernelLaunches int64 `json:"kernel_launches"`
			} `json:"decode"`
		} `json:"ranks"`
		Decode struct {
			KernelLaunches int64 `json:"kernel_launches"`
		} `json:"decode"`
	} `json:"stats"`
}

func runCannJSON(t *testing.T, args ...string) cannTPOut {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"run", "--json"}, args...), &out, &errb)
	require.Equal(t, 0, code, "irtool run %v: %s", args, errb.String())
	var r cannTPOut
	require.NoError(t, json.Unmarshal(out.Bytes(), &r), "%s", out.String())
	return r
}

// run --backend cann --tp 2 (the ranks as goroutines, one emulated device
// each, the collectives HCCL calls captured in the segments' graphs) gives
// one device's tokens and sim --tp 2's, reports decode replays per rank,
// and leaves no goroutine behind.
func TestRunTPCannMatchesOneDevice(t *testing.T) {
	fakeCANN(t)
	t.Setenv("IRTFAKE_DEVICE_COUNT", "2")
	t.Setenv("IRTFAKE_HCCL_TIMEOUT_MS", "30000")
	const ids = "1,403,407,261,378"
	for _, model := range []string{"stories260K", "synth-llama-Q4_0"} {
		path := testref.Testdata(model + ".gguf")
		one := runCannJSON(t, path, "--tokens", ids, "-n", "8", "--backend", "cann")
		sim := runCannJSON(t, path, "--tokens", ids, "-n", "8", "--backend", "sim", "--tp", "2")
		before := runtime.NumGoroutine()
		got := runCannJSON(t, path, "--tokens", ids, "-n", "8", "--backend", "cann", "--tp", "2")
		require.Equal(t, one.Tokens, got.Tokens, "%s: cann --tp 2 against one device", model)
		require.Equal(t, sim.Tokens, got.Tokens, "%s: cann --tp 2 against sim --tp 2", model)
		require.Len(t, got.Stats.Ranks, 2)
		for r, st := range got.Stats.Ranks {
			require.Equal(t, "graph", st.Mode, "rank %d", r)
			require.Equal(t, 7, st.Decode.Steps, "rank %d", r)
			require.Positive(t, st.Decode.Replays, "%s rank %d: decode replays", model, r)
			// The collectives are NPU launches of the rank's segments
			// (HcclAllReduce, HcclAllGather), not host steps.
			require.Greater(t, st.Decode.KernelLaunches, one.Stats.Decode.KernelLaunches, "%s rank %d: launches", model, r)
		}
		require.Nil(t, got.Stats.Rank)
		deadline := time.Now().Add(2 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		require.LessOrEqual(t, runtime.NumGoroutine(), before, "goroutines left behind")
	}
}

// With a cache of one graph, prefill captured and the cpy KV write (a new
// graph every step), every rank captures, replays and evicts at the same
// steps (their graphs, and so their cache keys, are the same): the
// captured collectives keep meeting, and the tokens stay one device's.
func TestRunTPCannEvictsInLockstep(t *testing.T) {
	fakeCANN(t)
	t.Setenv("IRTFAKE_DEVICE_COUNT", "2")
	t.Setenv("IRTFAKE_HCCL_TIMEOUT_MS", "30000")
	path := testref.Testdata("stories260K.gguf")
	args := []string{path, "--tokens", "1,403,407,261,378", "-n", "8", "--backend", "cann", "--prefill-graph", "--graph-cache", "1", "--kv-write", "cpy"}
	one := runCannJSON(t, args...)
	got := runCannJSON(t, append(args, "--tp", "2")...)
	require.Equal(t, one.Tokens, got.Tokens)
	require.Len(t, got.Stats.Ranks, 2)
	require.Positive(t, got.Stats.Ranks[0].Cache["evictions"])
	require.Equal(t, got.Stats.Ranks[0].Cache, got.Stats.Ranks[1].Cache, "the ranks' graph caches")
}

// run --backend cann --pp 2: the stages on two devices, the hidden state
// sent by HcclSend/HcclRecv inside the captured graphs, give one device's
// tokens.
func TestRunPPCannMatchesOneDevice(t *testing.T) {
	fakeCANN(t)
	t.Setenv("IRTFAKE_DEVICE_COUNT", "2")
	t.Setenv("IRTFAKE_HCCL_TIMEOUT_MS", "30000")
	path := testref.Testdata("stories260K.gguf")
	args := []string{path, "--tokens", "1,403,407,261,378", "-n", "8", "--backend", "cann"}
	one := runCannJSON(t, args...)
	got := runCannJSON(t, append(args, "--pp", "2")...)
	require.Equal(t, one.Tokens, got.Tokens)
	require.Len(t, got.Stats.Ranks, 2)
	for r, st := range got.Stats.Ranks {
		require.Positive(t, st.Decode.Replays, "stage %d: decode replays", r)
	}
}

// run --backend cann --tp 2 --pp 2: four ranks, each on its own emulated
// device, each joining a tp and a pp communicator, give one device's
// tokens and sim --tp 2 --pp 2's, with decode replays on every rank, each
// rank's decode capture launching the kernels of its program in compile
// --tp 2 --pp 2.
func TestRunTPPPCannMatchesOneDevice(t *testing.T) {
	fakeCANN(t)
	t.Setenv("IRTFAKE_DEVICE_COUNT", "4")
	t.Setenv("IRTFAKE_HCCL_TIMEOUT_MS", "30000")
	for _, model := range []string{"stories260K", "synth-llama-Q4_0"} {
		path := testref.Testdata(model + ".gguf")
		args := []string{path, "--tokens", "1,403,407,261,378", "-n", "8"}
		one := runCannJSON(t, append(args, "--backend", "cann")...)
		sim := runCannJSON(t, append(args, "--backend", "sim", "--tp", "2", "--pp", "2")...)
		before := runtime.NumGoroutine()
		got := runCannJSON(t, append(args, "--backend", "cann", "--tp", "2", "--pp", "2")...)
		require.Equal(t, one.Tokens, got.Tokens, "%s: cann --tp 2 --pp 2 against one device", model)
		require.Equal(t, sim.Tokens, got.Tokens, "%s: cann --tp 2 --pp 2 against sim", model)
		require.Len(t, got.Stats.Ranks, 4)
		// compile --tp 2 --pp 2 shows each rank's program: its decode
		// capture launches that program's kernels, HCCL calls included.
		var cout, cerr bytes.Buffer
		require.Equal(t, 0, run([]string{"compile", path, "--json", "--tp", "2", "--pp", "2", "--strategy", "greedy-size"}, &cout, &cerr), cerr.String())
		var comp struct {
			Ranks []struct {
				Program struct {
					Kernels       int            `json:"kernels"`
					KernelsByName map[string]int `json:"kernels_by_name"`
				} `json:"program"`
			} `json:"ranks"`
		}
		require.NoError(t, json.Unmarshal(cout.Bytes(), &comp))
		require.Len(t, comp.Ranks, 4)
		for r, st := range got.Stats.Ranks {
			require.Equal(t, "graph", st.Mode, "rank %d", r)
			require.Positive(t, st.Decode.Replays, "%s rank %d stage %d: decode replays", model, r/2, r%2)
			// The device launches the NPU's kernels: not the CPU's (the
			// input layer's get_rows from a q4_0 table runs on the host).
			npu := comp.Ranks[r].Program.Kernels
			for name, n := range comp.Ranks[r].Program.KernelsByName {
				if strings.HasPrefix(name, "cpu.") {
					npu -= n
				}
			}
			require.EqualValues(t, npu, st.Decode.KernelLaunches, "%s rank %d stage %d: decode launches against compile's program", model, r/2, r%2)
		}
		deadline := time.Now().Add(2 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		require.LessOrEqual(t, runtime.NumGoroutine(), before, "goroutines left behind")
	}
}

// run --backend cann --tp 2 --tp-exact gives one device's logits bit for
// bit: its all-gathers along the feature dim of several tokens (prefill)
// gather into the node's workspace and are moved into place on the stream.
func TestRunTPCannExactLogits(t *testing.T) {
	fakeCANN(t)
	t.Setenv("IRTFAKE_DEVICE_COUNT", "2")
	t.Setenv("IRTFAKE_HCCL_TIMEOUT_MS", "30000")
	path := testref.Testdata("synth-llama-Q4_0.gguf")
	args := []string{path, "--tokens", "1,403,407,261,378", "-n", "4", "--backend", "cann"}
	one := runTPJSON(t, args...)
	got := runTPJSON(t, append(args, "--tp", "2", "--tp-exact")...)
	require.Equal(t, one.Tokens, got.Tokens)
	require.Zero(t, got.Stats.TP.Collectives["all_reduce"])
	require.Positive(t, got.Stats.TP.Collectives["all_gather"])
	require.Equal(t, one.Logits, got.Logits, "--tp-exact logits against one device")
}

// The ranks' devices take run's --llama-build: in the "ggml" QuantMatmul
// mode a q4_K model gives one device's logits bit for bit with
// --tp 2 --tp-exact for either build (3f545bec repacks its matrices to
// q4_K_8x8, c392e50 does not: other summation orders, other bits).
func TestRunTPCannTakesLlamaBuild(t *testing.T) {
	fakeCANN(t)
	t.Setenv("IRTFAKE_DEVICE_COUNT", "2")
	t.Setenv("IRTFAKE_HCCL_TIMEOUT_MS", "30000")
	t.Setenv("IRTFAKE_ARITH", "ggml")
	path := testref.Testdata("synth-llama256-Q4_K.gguf")
	var logits [][][]float64
	for _, lb := range []string{"c392e50", "3f545bec"} {
		args := []string{path, "--tokens", "1,403,407,261,378", "-n", "3", "--backend", "cann", "--acl-quant-matmul", "ggml", "--llama-build", lb}
		one := runTPJSON(t, args...)
		got := runTPJSON(t, append(args, "--tp", "2", "--tp-exact")...)
		require.Equal(t, one.Logits, got.Logits, "--llama-build %s: --tp-exact logits against one device", lb)
		logits = append(logits, one.Logits)
	}
	require.NotEqual(t, logits[0], logits[1], "the two builds' logits")
}

// TestHelperIrtoolProcess is irtool in a child process for the tests
// below: IRTOOL_TEST_ARGS holds run's arguments, separated by 0x1f.
func TestHelperIrtoolProcess(t *testing.T) {
	args := os.Getenv("IRTOOL_TEST_ARGS")
	if args == "" {
		t.Skip("a child process of the multi-process tests")
	}
	os.Exit(run(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
}

type procResult struct {
	code           int
	stdout, stderr string
}

// runRanks starts one irtool process per argument list, with the
// emulator in libs, and waits for all.
func runRanks(t *testing.T, libs string, argss ...[]string) []procResult {
	t.Helper()
	res := make([]procResult, len(argss))
	var wg sync.WaitGroup
	for i, args := range argss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperIrtoolProcess$")
			cmd.Env = append(os.Environ(), "IRTOOL_TEST_ARGS="+strings.Join(args, "\x1f"), "IRTOOL_ACL_LIBS="+libs,
				"IRTFAKE_DEVICE_COUNT=2", "IRTFAKE_HCCL_TIMEOUT_MS=30000")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			res[i] = procResult{code: cmd.ProcessState.ExitCode(), stdout: out.String(), stderr: errb.String()}
			if err != nil && res[i].code == 0 {
				res[i].code = -1
			}
		}()
	}
	wg.Wait()
	return res
}

func buildFake(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join("..", "scripts", "fakeacl.sh")
	if b, err := exec.Command("bash", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", script, dir, err, b)
	}
	return dir
}

// Two processes, --rank 0 and --rank 1 meeting through a root info file,
// give one device's tokens, each reporting its own rank; the file is
// gone afterwards.
func TestRunTPCannTwoProcesses(t *testing.T) {
	fakeCANN(t)
	libs := buildFake(t)
	path := testref.Testdata("stories260K.gguf")
	const ids = "1,403,407,261,378"
	one := runCannJSON(t, path, "--tokens", ids, "-n", "8", "--backend", "cann")
	rootInfo := filepath.Join(t.TempDir(), "root-info")
	args := func(rank string) []string {
		return []string{"run", "--json", path, "--tokens", ids, "-n", "8", "--backend", "cann", "--tp", "2", "--rank", rank, "--root-info", rootInfo}
	}
	res := runRanks(t, libs, args("1"), args("0"))
	for i, r := range res {
		rank := 1 - i
		require.Equal(t, 0, r.code, "rank %d: %s", rank, r.stderr)
		var out cannTPOut
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), "rank %d: %s", rank, r.stdout)
		require.Equal(t, one.Tokens, out.Tokens, "rank %d", rank)
		require.NotNil(t, out.Stats.Rank)
		require.Equal(t, rank, *out.Stats.Rank)
		require.Len(t, out.Stats.Ranks, 1)
		require.Positive(t, out.Stats.Ranks[0].Decode.Replays, "rank %d: decode replays", rank)
	}
	_, err := os.Stat(rootInfo)
	require.True(t, os.IsNotExist(err), "the root info file is removed once the ranks have joined: %v", err)
}

// Two processes given different prompts are stopped once they have
// joined, before their first all-reduce (whose element counts would
// differ): both fail at once, naming the flag and the other rank, instead
// of hanging. (A mismatch at an HCCL call itself is named by the
// emulator's self-test and TestHccl* in runtime/acl.)
func TestRunTPCannMismatchFailsEveryRank(t *testing.T) {
	fakeCANN(t)
	libs := buildFake(t)
	path := testref.Testdata("stories260K.gguf")
	rootInfo := filepath.Join(t.TempDir(), "root-info")
	args := func(rank, ids string) []string {
		return []string{"run", path, "--tokens", ids, "-n", "4", "--backend", "cann", "--tp", "2", "--rank", rank, "--root-info", rootInfo}
	}
	t0 := time.Now()
	res := runRanks(t, libs, args("0", "1,403,407,261,378"), args("1", "1,403,407"))
	for rank, r := range res {
		require.Equal(t, 1, r.code, "rank %d: %s", rank, r.stderr)
		for _, w := range []string{"--tokens", fmt.Sprintf("rank %d: this rank runs with", rank), fmt.Sprintf("rank %d with another value", 1-rank)} {
			require.Contains(t, r.stderr, w, "rank %d", rank)
		}
	}
	require.Less(t, time.Since(t0), 25*time.Second, "the mismatch is found when the ranks meet, not by a timeout")
}
