package models

import (
	"strings"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
)

func TestBuildStories(t *testing.T) {
	f, err := gguf.Open(testref.Testdata("stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, mode := range []KVWrite{KVSetRows, KVCpy} {
		m, err := Build(f, Options{KVWrite: mode})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d ops %v", mode, m.Graph.NumOps(), m.Graph.OpCounts())
		if _, err := m.Graph.Specialize(ir.Bindings{"n_tokens": 5, "n_kv": 32, "n_outputs": 1, "kv_head": 0}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIRRoundTripEveryModel prints the graph of every reference model (both
// KV-write modes, symbolic and specialised), parses the text back, and
// requires the verifier to pass and the second print to equal the first.
func TestIRRoundTripEveryModel(t *testing.T) {
	for _, path := range testref.Models(t) {
		f, err := gguf.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []KVWrite{KVSetRows, KVCpy} {
			m, err := Build(f, Options{KVWrite: mode})
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			static, err := m.Graph.Specialize(ir.Bindings{"n_tokens": 7, "n_kv": 32, "n_outputs": 1, "kv_head": 3})
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			for _, g := range []*ir.Graph{m.Graph, static} {
				if err := ir.Verify(g); err != nil {
					t.Fatalf("%s (%s): verify: %v", path, mode, err)
				}
				var first strings.Builder
				if err := ir.Print(&first, g); err != nil {
					t.Fatal(err)
				}
				back, err := ir.ParseString(first.String())
				if err != nil {
					t.Fatalf("%s (%s): parse of printed IR: %v", path, mode, err)
				}
				if err := ir.Verify(back); err != nil {
					t.Fatalf("%s (%s): verify after parse: %v", path, mode, err)
				}
				var second strings.Builder
				if err := ir.Print(&second, back); err != nil {
					t.Fatal(err)
				}
				if first.String() != second.String() {
					t.Errorf("%s (%s): IR does not round-trip", path, mode)
				}
			}
		}
		f.Close()
	}
}
