package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/irtool/irtool/planner"
)

// stackStrategy is a strategy registered the way a file of this command
// would register one (from init): every buffer above the previous one, in
// buffer order (no reuse). It is trivially valid, so the test is about
// selection by name, not about packing.
func stackStrategy(_ context.Context, p *planner.Problem, _ planner.Options) (*planner.Assignment, error) {
	a := &planner.Assignment{Offsets: make([]int64, len(p.Buffers))}
	for i := range p.Buffers {
		a.Offsets[i] = a.Arena
		a.Arena += p.AlignedSize(i)
	}
	return a, nil
}

func init() {
	if err := planner.DefaultStrategies().Register("test-stack", stackStrategy); err != nil {
		panic(err)
	}
}

// TestPlanCustomStrategy selects a registered strategy by name from the
// command line.
func TestPlanCustomStrategy(t *testing.T) {
	csv := filepath.Join(t.TempDir(), "p.csv")
	require.NoError(t, os.WriteFile(csv, []byte("id,lower,upper,size\n0,0,2,32\n1,1,3,28\n2,2,4,36\n"), 0o644))
	out := runOK(t, "plan", csv, "--strategy", "test-stack", "--json")
	var rep planner.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, "test-stack", rep.Winner)
	require.Equal(t, int64(96), rep.Arena)
	require.Equal(t, int64(64), rep.LowerBound)

	code, _, stderr := runCLI(t, "plan", csv, "--strategy", "no-such")
	require.Equal(t, 2, code)
	require.Contains(t, stderr, "test-stack", "the error lists registered strategies")
}

// TestStrategyNamesRoundTrip: the strategy compile --json reports for a
// plan is a name compile --strategy and plan --strategy take back.
func TestStrategyNamesRoundTrip(t *testing.T) {
	for _, tgt := range []string{"ascend910b", "ascend310b-strict", "cpu"} {
		worst, _ := compileMemory(t, "../testdata/synth-llama-Q4_0.gguf", "--target", tgt, "--ctx", "64")
		if code, _, stderr := runCLI(t, "compile", "../testdata/synth-llama-Q4_0.gguf", "--target", tgt, "--ctx", "64", "--strategy", worst.Strategy); code != 0 {
			t.Errorf("%s: compile --strategy %s (the reported one): exit %d: %s", tgt, worst.Strategy, code, stderr)
		}
	}
	csv := filepath.Join(t.TempDir(), "p.csv")
	if err := os.WriteFile(csv, []byte("id,lower,upper,size\n0,0,2,64\n1,1,3,64\n2,2,4,64\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"exact", "greedy-area", "orders", "repair"} {
		if code, _, stderr := runCLI(t, "plan", csv, "--strategy", name); code != 0 {
			t.Errorf("plan --strategy %s: exit %d: %s", name, code, stderr)
		}
	}
}
