package cli

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/internal/testext"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/planner"
)

// extendedContext is what a researcher's main registers: testext's op
// my_silu and pass use-my-silu, and a strategy ctx-stack (no reuse).
func extendedContext(t *testing.T) *irtool.Context {
	t.Helper()
	reg := testext.MySiluContext(t)
	err := reg.Strategies.Register("ctx-stack", func(_ context.Context, p *planner.Problem, _ planner.Options) (*planner.Assignment, error) {
		a := &planner.Assignment{}
		for i := range p.Buffers {
			a.Offsets = append(a.Offsets, a.Arena)
			a.Arena += p.AlignedSize(i)
		}
		return a, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestContextReachesEveryCommand: the commands resolve passes, ops,
// kernels and strategies in the Context they are run with: the op runs
// on the cpu and sim backends with the tokens of the built-in silu, the
// pass and strategy are names compile, passes, plan and viz take, and
// the same names are unknown to the default context.
func TestContextReachesEveryCommand(t *testing.T) {
	reg := extendedContext(t)
	runWith := func(args ...string) (int, string, string) {
		t.Helper()
		var out, errs strings.Builder
		code := runIn(reg, args, &out, &errs)
		return code, out.String(), errs.String()
	}
	tokens := func(out string) []int32 {
		t.Helper()
		var r runOut
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return r.Tokens
	}
	base := runJSONCmd(t, "--tokens", "1,403,407,261", "-n", "6", "--json").Tokens
	for _, backend := range []string{"cpu", "sim"} {
		code, out, errs := runWith("run", "--backend", backend, "--passes", "use-my-silu,default", "--tokens", "1,403,407,261", "-n", "6", "--json")
		if code != 0 {
			t.Fatalf("run --backend %s: exit %d: %s", backend, code, errs)
		}
		if got := tokens(out); !slices.Equal(got, base) {
			t.Errorf("run --backend %s: tokens %v, want %v", backend, got, base)
		}
	}
	code, out, errs := runWith("compile", "--passes", "use-my-silu,default", "--strategy", "ctx-stack", "--target", "cpu", "--json")
	if code != 0 {
		t.Fatalf("compile: exit %d: %s", code, errs)
	}
	var c struct {
		OpsAfter map[string]int `json:"ops_after"`
		Memory   struct {
			Strategy string `json:"strategy"`
		} `json:"memory"`
	}
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatal(err)
	}
	if c.OpsAfter["my_silu"] != 5 || c.Memory.Strategy != "ctx-stack" {
		t.Errorf("compile: ops %v, strategy %q", c.OpsAfter, c.Memory.Strategy)
	}
	if code, out, errs = runWith("passes"); code != 0 || !strings.Contains(out, "use-my-silu\n    silu(x) -> my_silu(x)\n    rule silu-to-my-silu") {
		t.Errorf("passes: exit %d %s\n%s", code, errs, out)
	}
	if code, out, errs = runWith("passes", "--check", "--passes", "use-my-silu,default"); code != 0 || !strings.HasPrefix(out, "check use-my-silu: bit-identical (4 steps)\n") {
		t.Errorf("passes --check: exit %d %s\n%s", code, errs, out)
	}
	csv := testref.Root() + "/planner/testdata/bench/minimalloc/A.1048576.csv"
	if code, out, errs = runWith("plan", "--compare", "--strategies", "greedy-size,ctx-stack", csv); code != 0 || !strings.Contains(out, "ctx-stack    15071232   14.3730") {
		t.Errorf("plan --compare: exit %d %s\n%s", code, errs, out)
	}
	if code, _, errs = runWith("viz", "--passes", "use-my-silu,default", "--what", "graph", "-o", t.TempDir()+"/g.dot"); code != 0 {
		t.Errorf("viz: exit %d %s", code, errs)
	}
	// The default context knows none of them.
	for _, args := range [][]string{
		{"compile", "--passes", "use-my-silu,default"},
		{"run", "--passes", "use-my-silu,default", "-n", "1"},
		{"plan", "--compare", "--strategies", "ctx-stack", csv},
	} {
		if code, _, errs := runCLI(t, args...); code == 0 || !strings.Contains(errs, "use-my-silu") && !strings.Contains(errs, "ctx-stack") {
			t.Errorf("%v with the default context: exit %d, %s", args, code, errs)
		}
	}
}
