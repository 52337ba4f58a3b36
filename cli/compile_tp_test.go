package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/parallel"
	"github.com/stretchr/testify/require"
)

// compile --pp 2 --json: two stages, each rank a stage with its send and
// recv planned, the link model's prediction the sum of the stages.
func TestCompilePPJSON(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"compile", "--pp", "2", "--json", "--strategy", "greedy-size"}, &out, &errb), errb.String())
	var r struct {
		PP    map[string]any `json:"pp"`
		Ranks []struct {
			Stage             int `json:"stage"`
			CollectiveBuffers struct {
				Count int   `json:"count"`
				Bytes int64 `json:"bytes"`
			} `json:"collective_buffers"`
			DeviceMemory struct {
				HCCLBufferBytes int64 `json:"hccl_buffer_bytes"`
				Fits            bool  `json:"fits"`
			} `json:"device_memory"`
			Step struct {
				StepUS float64 `json:"step_us"`
			} `json:"step"`
		} `json:"ranks"`
		Parallel struct {
			StepUS float64 `json:"predicted_step_us"`
			TokS   float64 `json:"predicted_tok_s"`
		} `json:"parallel"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	require.Len(t, r.Ranks, 2)
	require.EqualValues(t, 2, r.PP["stages"])
	sum := 0.0
	for i, rk := range r.Ranks {
		require.Equal(t, i, rk.Stage)
		require.Positive(t, rk.CollectiveBuffers.Count)
		require.Equal(t, int64(2*200<<20), rk.DeviceMemory.HCCLBufferBytes)
		require.True(t, rk.DeviceMemory.Fits)
		sum += rk.Step.StepUS
	}
	require.InDelta(t, sum, r.Parallel.StepUS, 1e-6)
	require.InDelta(t, 1e6/sum, r.Parallel.TokS, 1e-6)
}

// The HCCL buffers count in each rank's device memory: a buffer that does
// not fit fails naming the rank; the environment's HCCL_BUFFSIZE is read
// when the flag is not given.
func TestCompileTPDeviceBudget(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 1, run([]string{"compile", "--tp", "2", "--hccl-buffsize", "40000", "--strategy", "greedy-size"}, &out, &errb))
	require.Contains(t, errb.String(), "rank 0 (tp rank 0, stage 0): needs")
	require.Contains(t, errb.String(), "1 communicator(s) x 2 x HCCL_BUFFSIZE 40000 MB), more than the Ascend 910B3's 68719476736 B")
	t.Setenv("HCCL_BUFFSIZE", "50")
	out.Reset()
	errb.Reset()
	require.Equal(t, 0, run([]string{"compile", "--tp", "2", "--json", "--strategy", "greedy-size"}, &out, &errb), errb.String())
	var r struct {
		Ranks []struct {
			DeviceMemory struct {
				HCCLBufferBytes int64 `json:"hccl_buffer_bytes"`
			} `json:"device_memory"`
		} `json:"ranks"`
		Parallel struct {
			HCCLBuffMB int64 `json:"hccl_buffsize_mb"`
		} `json:"parallel"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	require.EqualValues(t, 50, r.Parallel.HCCLBuffMB)
	require.Equal(t, int64(2*50<<20), r.Ranks[1].DeviceMemory.HCCLBufferBytes)
	t.Setenv("HCCL_BUFFSIZE", "lots")
	errb.Reset()
	require.Equal(t, 1, run([]string{"compile", "--tp", "2", "--strategy", "greedy-size"}, &out, &errb))
	require.Contains(t, errb.String(), `environment HCCL_BUFFSIZE="lots"`)
}

// --tp on IR text: the graph as built splits like its GGUF file; an
// optimised IR is refused saying why; IR without weights names the meta.
func TestCompileTPIRText(t *testing.T) {
	dir := t.TempDir()
	built, opt := filepath.Join(dir, "built.ir"), filepath.Join(dir, "opt.ir")
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"ir", "-o", built}, &out, &errb), errb.String())
	require.Equal(t, 0, run([]string{"passes", built, "-o", opt}, &out, &errb), errb.String())
	collectives := func(args ...string) string {
		out.Reset()
		errb.Reset()
		require.Equal(t, 0, run(append([]string{"compile", "--json", "--strategy", "greedy-size"}, args...), &out, &errb), errb.String())
		var r struct {
			Ranks []struct {
				Collectives []string `json:"collectives"`
			} `json:"ranks"`
		}
		require.NoError(t, json.Unmarshal(out.Bytes(), &r))
		require.Len(t, r.Ranks, 2)
		return strings.Join(r.Ranks[1].Collectives, "\n")
	}
	require.Equal(t, collectives("--tp", "2"), collectives(built, "--tp", "2"))
	errb.Reset()
	require.Equal(t, 1, run([]string{"compile", opt, "--tp", "2"}, &out, &errb))
	require.Contains(t, errb.String(), "IR text must be the graph as built")
	text, err := os.ReadFile(built)
	require.NoError(t, err)
	var kept []string
	for _, l := range strings.Split(string(text), "\n") {
		if !strings.Contains(l, "meta weights=") {
			kept = append(kept, l)
		}
	}
	bare := filepath.Join(dir, "bare.ir")
	require.NoError(t, os.WriteFile(bare, []byte(strings.Join(kept, "\n")), 0o644))
	errb.Reset()
	require.Equal(t, 1, run([]string{"compile", bare, "--tp", "2"}, &out, &errb))
	require.Contains(t, errb.String(), "the IR names no weights file")
}

// viz --pp 2 --rank 1 draws the second stage with its recv and send;
// --tp takes IR as built; a rank past tp×pp is a usage error.
func TestVizPPAndIRText(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"viz", "--pp", "2", "--rank", "1"}, &out, &errb), errb.String())
	require.Contains(t, out.String(), `label="embedded:stories260K.gguf rank 1 of 2 (stage 1) (graph)"`)
	require.Contains(t, out.String(), ` recv\n`)
	require.Contains(t, out.String(), ` send\n`)
	ir := filepath.Join(t.TempDir(), "s.ir")
	require.Equal(t, 0, run([]string{"ir", "-o", ir}, &out, &errb), errb.String())
	out.Reset()
	require.Equal(t, 0, run([]string{"viz", ir, "--tp", "2", "--rank", "1"}, &out, &errb), errb.String())
	require.Contains(t, out.String(), ` all_reduce\n`)
	// The rank's segments are compile's: one captured segment, the
	// collectives in it (parallel.Rules).
	out.Reset()
	require.Equal(t, 0, run([]string{"viz", "--tp", "2", "--rank", "1", "--what", "segments"}, &out, &errb), errb.String())
	require.Contains(t, out.String(), `label="segment 0: 87 kernels, captured`)
	require.NotContains(t, out.String(), `label="segment 1`)
	errb.Reset()
	require.Equal(t, 2, run([]string{"viz", "--tp", "2", "--pp", "2", "--rank", "4"}, &out, &errb))
	require.Contains(t, errb.String(), "--rank 4: want 0..3 (--tp 2, --pp 2)")
}

// run --tp 2 on IR as built gives the GGUF file's tokens.
func TestRunTPIRText(t *testing.T) {
	ir := filepath.Join(t.TempDir(), "s.ir")
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"ir", "-o", ir}, &out, &errb), errb.String())
	tokens := func(args ...string) []int {
		out.Reset()
		errb.Reset()
		require.Equal(t, 0, run(append([]string{"run", "--backend", "sim", "--tp", "2", "--tokens", "1,403,407", "-n", "6", "--json"}, args...), &out, &errb), errb.String())
		var r struct {
			Tokens []int `json:"tokens"`
		}
		require.NoError(t, json.Unmarshal(out.Bytes(), &r))
		require.Len(t, r.Tokens, 6)
		return r.Tokens
	}
	require.Equal(t, tokens(), tokens(ir))
}

// parallel.PlanCollectives finds every collective's buffer in the plans of a
// rank, and names the node when one has no planned place.
func TestPlanCollectives(t *testing.T) {
	f, err := openModel("")
	require.NoError(t, err)
	defer f.Close()
	mo, err := models.ParseOptions(64, "f16", "set_rows")
	require.NoError(t, err)
	tp, err := models.ShardTPFile(f, mo, models.TPOptions{Ranks: 2})
	require.NoError(t, err)
	var flags compileFlags
	flags.declare(flag.NewFlagSet("x", flag.ContinueOnError))
	opts, err := flags.options(compiler.StageMemory)
	require.NoError(t, err)
	opts.Ctx, opts.UBatch, opts.Strategy = 64, 64, "greedy-size"
	r, err := compiler.Compile(context.Background(), tp.Ranks[1].Model.Graph, opts)
	require.NoError(t, err)
	p := r.MemoryDecode.Plan
	got, err := parallel.PlanCollectives(p, r.MemoryDecode.Bindings, "decode")
	require.NoError(t, err)
	require.Equal(t, 22, got.Count) // 11 collectives, each result and operand
	require.Positive(t, got.Bytes)
	c := ir.Collectives(p.Graph)[0].Node
	delete(p.Offsets, c.ID)
	_, err = parallel.PlanCollectives(p, r.MemoryDecode.Bindings, "decode")
	require.ErrorContains(t, err, fmt.Sprintf("%s (all_reduce %q), operand or result of %s, has no planned offset in the decode arena", c, c.Name, c))
}

// compile --pp on IR: the IR as built cuts into stages; an IR whose passes
// fused ops across layers is refused saying why.
func TestCompilePPIRText(t *testing.T) {
	dir := t.TempDir()
	built, opt := filepath.Join(dir, "built.ir"), filepath.Join(dir, "opt.ir")
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"ir", "-o", built}, &out, &errb), errb.String())
	require.Equal(t, 0, run([]string{"passes", built, "-o", opt}, &out, &errb), errb.String())
	out.Reset()
	require.Equal(t, 0, run([]string{"compile", built, "--pp", "2", "--json", "--strategy", "greedy-size"}, &out, &errb), errb.String())
	var r struct {
		Ranks []json.RawMessage `json:"ranks"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	require.Len(t, r.Ranks, 2)
	errb.Reset()
	require.Equal(t, 1, run([]string{"compile", opt, "--pp", "2"}, &out, &errb))
	require.Contains(t, errb.String(), "an IR after passes that fuse ops across layers cannot be cut")
}

// compile --tp/--pp lowers every rank with parallel.Rules, the rules run
// --backend cann --tp/--pp uses: the collectives are HCCL kernels inside
// the rank's one captured segment (no CPU node, no copy), their count per
// rank is the collectives per step, and the program's predicted step is
// the link model's step. With --tp-exact on stories260K the FFN's uneven
// all_gathers (counts) stay host collectives, named as such.
func TestCompileTPLowersHCCL(t *testing.T) {
	type rank struct {
		Partition struct {
			CPUNodes  int `json:"cpu_nodes"`
			Segments  int `json:"segments"`
			Copies    int `json:"copies"`
			Fallbacks []struct {
				Op     string `json:"op"`
				Reason string `json:"reason"`
			} `json:"fallbacks"`
		} `json:"partition"`
		Program struct {
			KernelsByName map[string]int `json:"kernels_by_name"`
		} `json:"program"`
		Predicted struct {
			GraphUS float64 `json:"graph_us_per_token"`
		} `json:"predicted"`
		Step struct {
			StepUS float64 `json:"step_us"`
		} `json:"step"`
	}
	type out struct {
		Ranks    []rank `json:"ranks"`
		Parallel struct {
			Collectives []struct {
				Op    string  `json:"op"`
				Count int     `json:"count"`
				Bytes float64 `json:"bytes"`
				Host  int     `json:"host"`
			} `json:"collectives_per_step"`
		} `json:"parallel"`
	}
	compile := func(args ...string) out {
		t.Helper()
		var o, errb bytes.Buffer
		code := run(append([]string{"compile", "--json", "--target", "ascend910b", "--strategy", "greedy-size"}, args...), &o, &errb)
		require.Equal(t, 0, code, errb.String())
		var r out
		require.NoError(t, json.Unmarshal(o.Bytes(), &r))
		return r
	}
	kernel := map[string]string{"all_reduce": "HcclAllReduce", "all_gather": "HcclAllGather", "send": "HcclSend", "recv": "HcclRecv"}
	for _, args := range [][]string{
		{"testdata/stories260K.gguf", "--tp", "2"},
		{"testdata/synth-llama-Q4_0.gguf", "--tp", "2"},
		{"testdata/synth-llama-Q4_0.gguf", "--tp", "2", "--tp-exact"},
		{"testdata/stories260K.gguf", "--pp", "2"},
		{"testdata/synth-llama-Q4_0.gguf", "--tp", "2", "--pp", "2"},
	} {
		args[0] = filepath.Join("..", args[0])
		r := compile(args...)
		require.NotEmpty(t, r.Ranks, "%v", args)
		for i, rk := range r.Ranks {
			// The one CPU node a q4_0 model keeps: its input layer (the
			// get_rows from the int4 token table), whose embeddings are
			// one copy to the device.
			input := 0
			for _, f := range rk.Partition.Fallbacks {
				if f.Op == "get_rows" && strings.Contains(f.Reason, "llama.cpp's input layer") {
					input++
				}
			}
			require.Equal(t, input, rk.Partition.CPUNodes, "%v rank %d: %+v", args, i, rk.Partition.Fallbacks)
			require.Equal(t, 1+input, rk.Partition.Segments, "%v rank %d", args, i)
			require.Equal(t, input, rk.Partition.Copies, "%v rank %d", args, i)
			if input == 0 {
				// target.Profile.EstimateStep prices a CPU node (the input layer) and
				// its copies apart from lower/cann's simulation, so the two
				// agree on all-NPU ranks only.
				require.InDelta(t, rk.Step.StepUS, rk.Predicted.GraphUS, 1e-6*rk.Step.StepUS, "%v rank %d: predicted against the link model", args, i)
			}
		}
		if len(args) == 3 && args[1] == "--tp" { // --tp 2 alone: rank 0's calls are every rank's
			for _, c := range r.Parallel.Collectives {
				require.Zero(t, c.Host, "%v %s", args, c.Op)
				require.Positive(t, c.Bytes, "%v %s", args, c.Op)
				require.Equal(t, c.Count, r.Ranks[0].Program.KernelsByName[kernel[c.Op]], "%v: %s per step against the program's %s kernels", args, c.Op, kernel[c.Op])
			}
		}
	}
	r := compile(filepath.Join("..", "testdata", "stories260K.gguf"), "--tp", "2", "--tp-exact")
	for i, rk := range r.Ranks {
		host := 0
		for _, f := range rk.Partition.Fallbacks {
			if f.Op == "all_gather" && strings.Contains(f.Reason, "unequal parts") {
				host++
			}
		}
		require.Equal(t, 5, host, "rank %d: the FFN's uneven all_gathers", i)
		require.Equal(t, 21-host, rk.Program.KernelsByName["HcclAllGather"], "rank %d", i)
	}
	require.Len(t, r.Parallel.Collectives, 1)
	require.Equal(t, 5, r.Parallel.Collectives[0].Host)
}
