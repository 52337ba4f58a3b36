package models

import (
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
