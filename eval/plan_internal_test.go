package eval

import (
	"testing"
	"unsafe"

	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
)

// TestPlanWeightsAreTheFile checks that a compiled plan binds every weight
// to the bytes the GGUF file holds (its memory mapping), not to a copy, so
// that the process's memory counts the mapping once.
func TestPlanWeightsAreTheFile(t *testing.T) {
	for _, name := range []string{"synth-llama-Q4_0", "synth-llama-Q8_0", "synth-llama-F16"} {
		f, m := testmodel.Build(t, testref.Testdata(name+".gguf"), models.Options{NCtx: 64})
		b := ir.Bindings{models.SymTokens: 3, models.SymKV: 32, models.SymOutputs: 1, models.SymKVHead: 0}
		g, err := m.Graph.Specialize(b)
		if err != nil {
			t.Fatal(err)
		}
		w := NewWorkers(2)
		defer w.Close()
		p, err := NewExecutable(g, f, ExecOptions{}, w)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range g.Leaves(ir.OpState) {
			size, _ := n.Type.Bytes()
			if err := p.BindState(n.Name, make([]byte, size)); err != nil {
				t.Fatal(err)
			}
		}
		for name, data := range models.Inputs([]int32{1, 2, 3}, 0, b) {
			if p.HasInput(name) {
				if err := p.SetInput(name, data); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := p.Run(); err != nil {
			t.Fatal(err)
		}
		weights := 0
		for _, n := range g.Leaves(ir.OpWeight) {
			data, err := f.TensorData(n.Name)
			if err != nil {
				t.Fatal(err)
			}
			got := p.ex.bufs[n.ID]
			if len(got) == 0 || unsafe.SliceData(got) != unsafe.SliceData(data) {
				t.Errorf("%s: weight %q is not the file's bytes", name, n.Name)
			}
			weights++
		}
		if weights == 0 {
			t.Fatalf("%s: no weights", name)
		}
	}
}
