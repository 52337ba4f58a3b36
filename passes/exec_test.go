package passes_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/floatbits"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// Helpers that execute small static graphs on the reference executor with
// deterministic data, so a test can run a graph before and after a pass and
// compare every output and every state buffer bit for bit.

// weightMap is a eval.WeightSource backed by a map.
type weightMap map[string][]byte

func (w weightMap) TensorData(name string) ([]byte, error) {
	b, ok := w[name]
	if !ok {
		return nil, fmt.Errorf("no weight %q", name)
	}
	return b, nil
}

// seedOf hashes a name into a seed, so the data of a leaf depends only on
// its name and type (the same before and after a pass).
func seedOf(name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	return h
}

// leafData makes deterministic contents for a leaf of type t: floats in
// [-1, 1), F16 rounded, quantised through gguf's quantiser; integer leaves
// named like positions or row indices hold valid indices (bound is the
// number of rows they may address).
func leafData(name string, t ir.Type, bound int64) ([]byte, error) {
	ne, err := t.Shape.Ne()
	if err != nil {
		return nil, err
	}
	n := ne[0] * ne[1] * ne[2] * ne[3]
	r := rand.New(rand.NewPCG(seedOf(name), uint64(t.DType)))
	switch t.DType {
	case ir.I32, ir.I64:
		// A permutation of the first n rows, so scattered writes never
		// collide (ggml leaves the order of duplicate writes unspecified).
		perm := r.Perm(int(max(n, bound)))
		out := make([]byte, n*int64(t.DType.TypeSize()))
		for i := range n {
			v := int64(perm[i])
			if bound > 0 {
				v %= bound
			}
			if t.DType == ir.I32 {
				binary.LittleEndian.PutUint32(out[4*i:], uint32(v))
			} else {
				binary.LittleEndian.PutUint64(out[8*i:], uint64(v))
			}
		}
		return out, nil
	}
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = float32(r.Float64()*2 - 1)
	}
	var tt kernels.Tensor
	switch t.DType {
	case ir.F32:
		tt, err = kernels.FromF32(vals, ne[:]...)
	case ir.F16:
		tt, err = kernels.FromF16(vals, ne[:]...)
	default:
		src, e := kernels.FromF32(vals, ne[:]...)
		if e != nil {
			return nil, e
		}
		if tt, err = kernels.NewTensor(gguf.GGMLType(t.DType), ne[:]...); err == nil {
			err = kernels.Cpy(tt, src)
		}
	}
	if err != nil {
		return nil, err
	}
	return tt.Data, nil
}

// execResult is everything a run produced: outputs and state buffers.
type execResult struct {
	outputs [][]float32
	state   map[string][]byte
}

// execute runs a static graph with data derived from leaf names. bound
// limits integer inputs (row indices into a cache of bound rows).
func execute(g *ir.Graph, bound int64) (*execResult, error) {
	w := weightMap{}
	for _, n := range g.Leaves(ir.OpWeight) {
		d, err := leafData(n.Name, n.Type, bound)
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
		d, err := leafData(n.Name, n.Type, bound)
		if err != nil {
			return nil, err
		}
		if err := ex.SetInput(n.Name, d); err != nil {
			return nil, err
		}
	}
	res := &execResult{state: map[string][]byte{}}
	for _, n := range g.Leaves(ir.OpState) {
		d, err := leafData(n.Name, n.Type, bound)
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
