package cli

import (
	"encoding/json"
	"github.com/irtool/irtool/compiler"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/irtool/irtool/internal/testref"
)

// TestMemoryCompareMatchesLlamaCpp checks compile's memory comparison
// against llama.cpp's own number: on the graph llama.cpp builds (cpy KV
// writes, no passes, 256 cells), the gallocr replay on ggml's layout is the
// compute buffer llama.cpp reported, and on each layout our plan is no
// larger than gallocr's and no smaller than the lower bound.
func TestMemoryCompareMatchesLlamaCpp(t *testing.T) {
	raw, err := os.ReadFile(testref.Shared(t, "llamacpp/stories260K.llamacpp.json"))
	require.NoError(t, err)
	var run struct {
		Context struct {
			ComputeBuffer int64 `json:"compute_buffer_bytes_cpu"`
			NCtx          int64 `json:"n_ctx"`
		} `json:"context"`
	}
	require.NoError(t, json.Unmarshal(raw, &run))
	require.Equal(t, int64(256), run.Context.NCtx)

	out := runOK(t, "compile", "--kv-write", "cpy", "--passes", "none", "--target", "cpu", "--ctx", "256", "--strategy", "greedy-size", "--json")
	var j struct {
		Memory struct {
			GgmlCPUBytes int64            `json:"ggml_cpu_bytes"`
			Compare      compiler.Compare `json:"compare"`
		} `json:"memory"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j))
	c := j.Memory.Compare
	require.Equal(t, run.Context.ComputeBuffer, c.GgmlLayout.GallocrBytes, "gallocr on ggml's layout is llama.cpp's compute buffer")
	require.Equal(t, run.Context.ComputeBuffer, j.Memory.GgmlCPUBytes)
	for _, l := range []compiler.LayoutCompare{c.Target, c.GgmlLayout} {
		require.LessOrEqual(t, l.OursBytes, l.GallocrBytes, l.Layout)
		require.GreaterOrEqual(t, l.OursBytes, l.OursLowerBound, l.Layout)
		require.GreaterOrEqual(t, l.GallocrBytes, l.GraphOrderBound, l.Layout)
		require.Equal(t, l.GallocrBytes-l.GraphOrderBound, l.GallocrOverBound, l.Layout)
	}
	require.Less(t, c.GgmlLayout.OursBytes, c.GgmlLayout.GallocrBytes, "our plan beats ggml-alloc on its own layout")
}
