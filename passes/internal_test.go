package passes

import (
	"maps"
	"slices"
	"testing"

	"github.com/irtool/irtool/ir"
)

// withScratchRegistry runs f with a copy of the pass registry and restores
// the original afterwards, so a test can register passes (a required one
// changes every pipeline) without leaking them into other tests.
func withScratchRegistry(t *testing.T, f func()) {
	regMu.Lock()
	saved, savedOrder, savedCons := maps.Clone(registry), slices.Clone(regOrder), slices.Clone(constraints)
	regMu.Unlock()
	defer func() {
		regMu.Lock()
		registry, regOrder, constraints = saved, savedOrder, savedCons
		regMu.Unlock()
	}()
	f()
}

// TestRequiredPasses: a required pass runs in "none" and is added to any
// pipeline that does not name it (Go's SSA: required passes run even
// without optimisation).
func TestRequiredPasses(t *testing.T) {
	if p, err := Parse("none"); err != nil || len(p) != 0 {
		t.Fatalf("none = %v, %v: no built-in pass is required", p, err)
	}
	withScratchRegistry(t, func() {
		legal := Pass{Name: "legalise", Required: true, Doc: "test",
			Run: func(*ir.Graph, *Context) (bool, error) { return false, nil }}
		if err := Register(legal); err != nil {
			t.Fatal(err)
		}
		for in, want := range map[string][]string{
			"none":             {"legalise"},
			"cse":              {"cse", "legalise"},
			"legalise,cse":     {"legalise", "cse"},
			"default,legalise": append(slices.Clone(defaultNames), "legalise"),
		} {
			p, err := Parse(in)
			if err != nil || !slices.Equal(p.Names(), want) {
				t.Errorf("Parse(%q) = %v, %v; want %v", in, p.Names(), err, want)
			}
		}
	})
	if _, ok := Lookup("legalise"); ok {
		t.Error("the scratch registry leaked")
	}
}
