package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/irtool/irtool/internal/golden"
	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/ir"
)

// qwenShapesIR is the graph of a Qwen2.5-0.5B-shaped model (24 layers) as
// IR text without weights: the views of a real-sized model can be drawn
// and planned from it (go test ./cli -run TestQwenShapesIR -update
// writes it).
const qwenShapesIR = "testdata/qwen2.5-0.5b-shapes.ir"

// qwen25Graph builds Qwen2.5-0.5B's graph from its published configuration
// (config.json of Qwen/Qwen2.5-0.5B: 24 layers, n_embd 896, 14 query heads
// and 2 KV heads of 64, n_ff 4864, vocabulary 151936, q/k/v biases, tied
// embeddings, NEOX RoPE with base 1e6), f16 matrices and f32 vectors as in
// its F16 GGUF.
func qwen25Graph(t *testing.T) *ir.Graph {
	m := testmodel.Qwen25(t, 512)
	m.Graph.Name = "qwen2.5-0.5b-shapes"
	return m.Graph
}

// TestQwenShapesIR keeps testdata/qwen2.5-0.5b-shapes.ir the graph the
// builder makes, and checks the readable views of a 24-layer plan: layer
// bands in the liveness chart, --layer zooms, the buffer table.
func TestQwenShapesIR(t *testing.T) {
	text := qwen25Graph(t).String()
	golden.Check(t, qwenShapesIR, []byte(text))
	if t.Failed() {
		t.FailNow()
	}
	if testing.Short() {
		t.Skip("plans a 24-layer graph")
	}
	dir := t.TempDir()
	common := []string{qwenShapesIR, "--ubatch", "32", "--strategy", "greedy-size", "--target", "cpu"}

	svg := runOK(t, append([]string{"viz", "--what", "liveness"}, common...)...)
	require.Equal(t, 12, strings.Count(svg, `data-band="L`), "every other of 24 layers is shaded")
	for _, l := range []string{">L0<", ">L23<"} {
		require.Contains(t, svg, l)
	}

	zoom := runOK(t, append([]string{"viz", "--what", "liveness", "--layer", "5"}, common...)...)
	require.Contains(t, zoom, "layer 5 (steps ")
	require.Less(t, strings.Count(zoom, "data-node="), strings.Count(svg, "data-node=")/4, "a zoomed chart draws one layer's buffers")

	table := runOK(t, append([]string{"viz", "--what", "buffers", "--layer", "5", "-o", "-"}, common...)...)
	rows := regexp.MustCompile(`(?m)^\s*(\d+)\s+\d+\s+\d+\s+\[\d+,\d+\)\s+(\d+|-)\s+%`).FindAllStringSubmatch(table, -1)
	require.NotEmpty(t, rows, table)
	last := int64(-1)
	for _, r := range rows {
		var off int64
		fmt.Sscan(r[1], &off)
		require.GreaterOrEqual(t, off, last, "the table is sorted by offset")
		last = off
	}
	require.Contains(t, table, "attn_norm-5") // names, not only IDs

	inter := filepath.Join(dir, "l5.dot")
	runOK(t, append([]string{"viz", "--what", "interference", "--layer", "5", "-o", inter}, common...)...)
	dot, err := os.ReadFile(inter)
	require.NoError(t, err)
	require.Less(t, strings.Count(string(dot), " -- "), 2000, "one layer's interference graph stays drawable")

	code, _, stderr := runCLI(t, append([]string{"viz", "--what", "liveness", "--layer", "24"}, common...)...)
	require.Equal(t, 1, code)
	require.Contains(t, stderr, "no such layer")
}
