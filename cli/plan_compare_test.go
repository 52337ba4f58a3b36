package cli

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/planner"
)

// TestPlanCompare: plan --compare prints every strategy, the registered
// test-stack included, against each instance's lower bound, for a CSV
// instance and for the embedded model's two plans; --json is the
// harness's Comparison list.
func TestPlanCompare(t *testing.T) {
	csv := testref.Root() + "/planner/testdata/bench/minimalloc/A.1048576.csv"
	code, out, errs := runCLI(t, "plan", "--compare", "--strategies", "greedy-size,online-bestfit,test-stack", csv)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"A.1048576.csv: 154 buffers, lower bound 1048576 B", "greedy-size     1374208    1.3105", "online-bestfit  1837056    1.7520", "test-stack"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = runCLI(t, "plan", "--compare", "--budget", "2s", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got planCompareJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Instances) != 2 || !strings.Contains(got.Instances[0].Instance, "worst case") || !strings.Contains(got.Instances[1].Instance, "decode") {
		t.Fatalf("instances %+v", got.Instances)
	}
	for _, c := range got.Instances {
		var names []string
		for _, r := range c.Rows {
			names = append(names, r.Strategy)
			if r.Err == "" && (r.Arena < c.LowerBound || r.Ratio != planner.Ratio(r.Arena, c.LowerBound)) {
				t.Errorf("%s: %s: arena %d, ratio %v, lower bound %d", c.Instance, r.Strategy, r.Arena, r.Ratio, c.LowerBound)
			}
		}
		if !slices.Equal(names, planner.DefaultStrategies().Names()) || !slices.Contains(names, "test-stack") {
			t.Errorf("%s: strategies %v", c.Instance, names)
		}
	}
	if code, _, errs := runCLI(t, "plan", "--compare", "--strategies", "nope", csv); code != 2 || !strings.Contains(errs, `unknown strategy "nope"`) {
		t.Errorf("--strategies nope: exit %d, %s", code, errs)
	}
	if code, _, errs := runCLI(t, "plan", csv, "--strategies", "naive"); code != 2 || !strings.Contains(errs, "--strategies applies to --compare only") {
		t.Errorf("--strategies without --compare: exit %d, %s", code, errs)
	}
}
