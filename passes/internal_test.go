package passes

import (
	"slices"
	"testing"

	"github.com/irtool/irtool/ir"
)

// TestRequiredPasses: a required pass runs in "none" and is added to any
// pipeline that does not name it (Go's SSA: required passes run even
// without optimisation).
func TestRequiredPasses(t *testing.T) {
	if p, err := Parse("none"); err != nil || len(p) != 0 {
		t.Fatalf("none = %v, %v: no built-in pass is required", p, err)
	}
	// A registry of its own: the required pass stays out of every other
	// test's pipelines.
	r := NewRegistry()
	legal := Pass{Name: "legalise", Required: true, Doc: "test",
		Run: func(*ir.Graph, *Context) (bool, error) { return false, nil }}
	if err := r.Register(legal); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string][]string{
		"none":             {"legalise"},
		"cse":              {"cse", "legalise"},
		"legalise,cse":     {"legalise", "cse"},
		"default,legalise": append(slices.Clone(defaultNames), "legalise"),
	} {
		p, err := r.Parse(in)
		if err != nil || !slices.Equal(p.Names(), want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, p.Names(), err, want)
		}
	}
	if _, ok := Lookup("legalise"); ok {
		t.Error("the registration leaked into the default registry")
	}
}
