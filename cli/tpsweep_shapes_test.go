package cli

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/irtool/irtool/internal/pubshape"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/parallel"
	"github.com/irtool/irtool/target"
	"github.com/stretchr/testify/require"
)

var updateSweep = flag.Bool("update-tp-sweep", false, "rewrite testdata/tp-sweep-shapes.txt")

// sweepShapes are the shapes of docs/LOWERING.md's table.
var sweepShapes = []*pubshape.Shape{pubshape.Qwen25_05B, pubshape.Qwen25_7B, pubshape.Llama2_7B}

// TestTPSweepShapes is the table of docs/LOWERING.md: the link model's
// predicted decode at TP 1/2/4/8 on the 910B profile for F16 weights of
// three published shapes, 4096 cache cells. go test ./cli -run
// TestTPSweepShapes -update-tp-sweep rewrites it.
func TestTPSweepShapes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 7B-shaped graphs")
	}
	prof, err := parallel.Profile("ascend910b")
	require.NoError(t, err)
	var flags compileFlags
	flags.declare(flag.NewFlagSet("x", flag.ContinueOnError))
	opts, err := flags.options(0)
	require.NoError(t, err)
	opts.Ctx, opts.UBatch = 4096, 512
	mo, err := models.ParseOptions(4096, "f16", "set_rows")
	require.NoError(t, err)
	var buf bytes.Buffer
	for _, s := range sweepShapes {
		for _, algo := range []target.Algorithm{target.Mesh, target.Ring} {
			ic := *prof.Interconnect
			ic.Algorithm = algo
			p := *prof
			p.Interconnect = &ic
			rows, err := parallel.Sweep(s.HP, s.Lookup(ir.F16), mo, opts, &p, []int{1, 2, 4, 8}, false)
			require.NoError(t, err, s.Name)
			fmt.Fprintf(&buf, "%s, F16, n_kv=4096, %s:\n", s.Name, algo)
			parallel.WriteSweep(&buf, rows)
			checkSweep(t, s.Name, rows)
		}
	}
	path := filepath.Join("testdata", "tp-sweep-shapes.txt")
	if *updateSweep {
		require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "go test ./cli -run TestTPSweepShapes -update-tp-sweep writes it")
	require.Equal(t, string(want), buf.String())
}

func checkSweep(t *testing.T, name string, rows []parallel.SweepRow) {
	t.Helper()
	{
		for _, r := range rows {
			if r.Error == "" {
				require.Greater(t, r.PredictedTokS, 0.0, "%s tp %d", name, r.TP)
				require.InDelta(t, 1e6/r.StepUS, r.PredictedTokS, 1e-9, "%s tp %d", name, r.TP)
			}
		}
		// Every rank holds less weight as the degree grows.
		last := int64(1 << 62)
		for _, r := range rows {
			if r.Error == "" {
				require.Less(t, r.WeightBytes, last, "%s tp %d", name, r.TP)
				last = r.WeightBytes
			}
		}
	}
}
