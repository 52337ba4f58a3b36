package passes_test

import (
	"fmt"
	"slices"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/internal/floatbits"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/passes"
)

// Helpers that execute small static graphs on the reference executor with
// deterministic data, so a test can run a graph before and after a pass and
// compare every output and every state buffer bit for bit.

// execResult is everything a run produced: outputs and state buffers.
type execResult struct {
	outputs [][]float32
	state   map[string][]byte
}

// execute runs a static graph with data derived from leaf names. bound
// limits integer inputs (row indices into a cache of bound rows).
func execute(g *ir.Graph, bound int64) (*execResult, error) {
	w := passes.WeightData{}
	for _, n := range g.Leaves(ir.OpWeight) {
		d, err := passes.LeafData(n.Name, n.Type, bound)
		if err != nil {
			return nil, err
		}
		w[n.Name] = d
	}
	ex, err := eval.NewExecutor(g, w, eval.ExecOptions{})
	if err != nil {
		return nil, err
	}
	for _, n := range g.Leaves(ir.OpInput) {
		d, err := passes.LeafData(n.Name, n.Type, bound)
		if err != nil {
			return nil, err
		}
		if err := ex.SetInput(n.Name, d); err != nil {
			return nil, err
		}
	}
	res := &execResult{state: map[string][]byte{}}
	for _, n := range g.Leaves(ir.OpState) {
		d, err := passes.LeafData(n.Name, n.Type, bound)
		if err != nil {
			return nil, err
		}
		res.state[n.Name] = d
		if err := ex.BindState(n.Name, d); err != nil {
			return nil, err
		}
	}
	if err := ex.Run(); err != nil {
		return nil, err
	}
	for i := range g.Outputs {
		v, _, err := ex.Output(i)
		if err != nil {
			return nil, err
		}
		res.outputs = append(res.outputs, v)
	}
	return res, nil
}

// sameBits compares two runs bit for bit and describes the first
// difference.
func sameBits(a, b *execResult) error {
	if len(a.outputs) != len(b.outputs) {
		return fmt.Errorf("%d outputs, want %d", len(b.outputs), len(a.outputs))
	}
	for i := range a.outputs {
		x, y := a.outputs[i], b.outputs[i]
		if len(x) != len(y) {
			return fmt.Errorf("output %d: %d values, want %d", i, len(y), len(x))
		}
		if j := floatbits.Mismatch(x, y); j >= 0 {
			return fmt.Errorf("output %d[%d] = %v, want %v", i, j, y[j], x[j])
		}
	}
	keys := make([]string, 0, len(a.state))
	for k := range a.state {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Equal(a.state[k], b.state[k]) {
			return fmt.Errorf("state %q differs", k)
		}
	}
	return nil
}
