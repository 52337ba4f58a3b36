package passes_test

import (
	"slices"
	"testing"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/passes"
)

// TestDescribe: the catalogue lists every registered pass once, marks the
// default pipeline's, carries the rules and constraints, and documents
// every fused op the passes make.
func TestDescribe(t *testing.T) {
	c, err := passes.Describe(passes.DefaultRegistry(), ir.DefaultOps())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Default, passes.Default().Names()) {
		t.Errorf("default %v, want %v", c.Default, passes.Default().Names())
	}
	rules := 0
	for _, p := range c.Passes {
		if p.InDefault != slices.Contains(c.Default, p.Name) || p.Doc == "" {
			t.Errorf("pass %+v", p)
		}
		rules += len(p.Rules)
	}
	if len(c.Passes) != len(passes.DefaultRegistry().All()) || rules == 0 || len(c.Constraints) == 0 {
		t.Errorf("%d passes, %d rules, %d constraints", len(c.Passes), rules, len(c.Constraints))
	}
	if len(c.FusedOps) != len(passes.Ops()) {
		t.Errorf("%d fused ops documented, the passes make %d", len(c.FusedOps), len(passes.Ops()))
	}
	for _, op := range c.FusedOps {
		if op.Doc == "" {
			t.Errorf("fused op %s has no doc", op.Op)
		}
	}
}
