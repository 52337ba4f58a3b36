package models_test

import (
	"fmt"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
)

// Build turns a GGUF file into the graph of one forward step; Specialize
// fixes its symbolic dims for one step shape (here a 5-token prefill into
// a 32-cell window of the KV cache).
func Example() {
	f, err := gguf.Parse(irtool.EmbeddedModel, irtool.EmbeddedModelName)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	m, err := models.Build(f, models.Options{NCtx: 256})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.HParams.Arch, m.HParams.NLayer, "layers,", m.Graph.NumOps(), "ops")
	g, err := m.Graph.Specialize(ir.Bindings{models.SymTokens: 5, models.SymKV: 32, models.SymOutputs: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("logits:", g.Outputs[0].Type)
	// Output:
	// llama 5 layers, 156 ops
	// logits: f32[512]
}
