package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/testref"
)

// planOut is what plan --json prints.
type planOut struct {
	Buffers    int                `json:"buffers"`
	LowerBound int64              `json:"lower_bound"`
	Arena      int64              `json:"arena"`
	Ratio      float64            `json:"ratio"`
	Naive      int64              `json:"naive"`
	Strategy   string             `json:"strategy"`
	Winner     string             `json:"winner"`
	MS         float64            `json:"ms"`
	Strategies map[string]int64   `json:"strategies"`
	StrategyMS map[string]float64 `json:"strategy_ms"`
}

// pisarchykLeeCSV is the worked example of Pisarchyk & Lee (arXiv
// 2001.03288) in the benchmark format: inclusive [first, last] op ranges
// become [first, last+1).
const pisarchykLeeCSV = `id,lower,upper,size
0,0,2,32
1,1,5,28
2,2,6,36
3,3,6,16
4,4,6,8
5,5,8,64
6,6,9,10
7,7,9,40
`

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func planJSON(t *testing.T, args ...string) planOut {
	t.Helper()
	code, stdout, stderr := runCLI(t, append([]string{"plan"}, args...)...)
	if code != 0 {
		t.Fatalf("plan %v: exit %d: %s", args, code, stderr)
	}
	var out planOut
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("plan %v: bad JSON: %v\n%s", args, err, stdout)
	}
	return out
}

// TestPlanPisarchykLee: the paper's example has a lower bound of 124 bytes,
// which greedy-by-size (and so best) reaches; online best fit needs 160
// (Pisarchyk & Lee, arXiv 2001.03288).
func TestPlanPisarchykLee(t *testing.T) {
	path := writeTemp(t, "pl.csv", pisarchykLeeCSV)
	out := planJSON(t, "--json", path) // best by default
	if out.Buffers != 8 || out.LowerBound != 124 || out.Arena != 124 || out.Ratio != 1 || out.Strategy != "best" {
		t.Errorf("best: %+v", out)
	}
	want := map[string]int64{"naive": 234, "greedy-size": 124, "online-bestfit": 160, "search": 124}
	for s, v := range want {
		if out.Strategies[s] != v {
			t.Errorf("strategies[%s] = %d, want %d", s, out.Strategies[s], v)
		}
	}
	// 6 built-in ones and the registered test-stack (plan_strategy_test.go):
	// best runs the registered strategies too.
	if len(out.Strategies) != 7 || len(out.StrategyMS) != 7 || out.Strategies["test-stack"] != 234 {
		t.Errorf("best should report 7 strategies, test-stack's among them, got %v", out.Strategies)
	}
	// Flags after the path, and alignment: sizes round up to 64.
	out = planJSON(t, path, "--strategy", "online-bestfit", "--align", "64", "--json")
	if out.Arena%64 != 0 || out.LowerBound != 64*4 || len(out.Strategies) != 1 || out.Winner != "online-bestfit" {
		t.Errorf("aligned online-bestfit: %+v", out)
	}
}

// TestPlanPublishedGreedy checks `plan --strategy greedy-size` against the
// published greedy-by-size score of MiniMalloc's instance A (1.311).
func TestPlanPublishedGreedy(t *testing.T) {
	path := filepath.Join(testref.Root(), "..", "shared", "planner-bench", "minimalloc", "A.1048576.csv")
	if _, err := os.Stat(path); err != nil {
		t.Skip("the planner benchmark instances (MiniMalloc, idealloc) are absent")
	}
	out := planJSON(t, "--strategy=greedy-size", "--json", path)
	if out.LowerBound != 1048576 || math.Abs(out.Ratio-1.311) > 0.0006 {
		t.Errorf("greedy-size on A: LB %d ratio %.4f, want 1048576 and 1.311", out.LowerBound, out.Ratio)
	}
}

func TestPlanText(t *testing.T) {
	path := writeTemp(t, "pl.csv", pisarchykLeeCSV)
	code, stdout, stderr := runCLI(t, "plan", path, "--budget", "2s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"pl.csv (8 buffers, alignment 1)", "lower bound  124 B", "1.0000 x LB", "online-bestfit", "160"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("text output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestPlanErrors(t *testing.T) {
	good := writeTemp(t, "good.csv", pisarchykLeeCSV)
	bad := writeTemp(t, "bad.csv", "id,lower,upper,size\n0,0,2,32\n1,5,2,8\n")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no instance", []string{}, 2, "want one INSTANCE.csv or FILE.ir argument, got 0"},
		{"two instances", []string{good, good}, 2, "got 2"},
		{"unknown strategy", []string{good, "--strategy", "tetris"}, 2, `unknown strategy "tetris"`},
		{"bad budget", []string{good, "--budget", "0s"}, 2, "--budget must be positive"},
		{"bad align", []string{good, "--align", "0"}, 2, "--align must be a power of two"},
		{"align not a power of two", []string{good, "--align", "3"}, 2, "--align must be a power of two"},
		{"unknown flag", []string{good, "--frobnicate"}, 2, "frobnicate"},
		{"missing file", []string{filepath.Join(t.TempDir(), "none.csv")}, 1, "none.csv"},
		{"malformed CSV names file and line", []string{bad}, 1, "bad.csv: planner: csv line 3: lower 5 > upper 2"},
	}
	for _, tt := range tests {
		code, _, stderr := runCLI(t, append([]string{"plan"}, tt.args...)...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", tt.name, code, stderr, tt.code, tt.want)
		}
	}
}
