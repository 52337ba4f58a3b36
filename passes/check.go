package passes

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// Translation validation: with Options.Check, Run executes the graph on
// the CPU reference executor (eval.Executor) before the first pass and
// after every pass that changed it, on the same fixed inputs each time,
// and compares every output and state buffer with those of the graph
// before the pass. A model's step graph (CheckOptions.Step says which
// graphs are one, e.g. a graph with models.InputTokens) runs
// a prefill of Prompt and Decode greedy decode steps over a zeroed KV
// cache, each step specialised as runtime/session does (n_tokens, n_kv,
// n_outputs = 1, kv_head); the decode tokens are the input graph's greedy
// choices, so every graph sees the same tokens. Any other graph is
// specialised with Bindings and run once on data derived from each leaf's
// name and type.

// CheckOptions configure translation validation (Options.Check).
type CheckOptions struct {
	// Weights supplies weight data (the model's GGUF file); nil: data
	// derived from each weight's name.
	Weights eval.WeightSource
	// Prompt is the prefill step's token ids (model graphs; default
	// 1, 2, 3, 4), Decode the greedy decode steps after it.
	Prompt []int32
	Decode int
	// NCtx is the model's KV cache size (n_ctx), needed for model graphs.
	NCtx int64
	// Bindings specialise a symbolic graph that is not a model step graph.
	Bindings ir.Bindings
	// Tol is the largest max|Δ| a pass may introduce; 0: every output
	// must keep its bits (the default pipeline's passes do).
	Tol float64
	// Exec is the executor options (kernel set, numeric modes).
	Exec eval.ExecOptions
	// Report, when set, is called with each pass's comparison as soon as
	// it is made.
	Report func(CheckStat)
	// Step describes a model's step graph (the caller gives models'
	// functions: passes sits below models); nil: every graph runs once
	// with Bindings.
	Step *ModelStep
}

// ModelStep tells Check how to run a model's step graph: IsStep says
// whether g is one (models.IsStepGraph), Bind binds a step of n tokens at
// position pos over an n_ctx-cell KV cache (models.StepBindings), Inputs
// fills its token and position inputs (models.Inputs).
type ModelStep struct {
	IsStep func(g *ir.Graph) bool
	Bind   func(n, pos, nCtx int64) ir.Bindings
	Inputs func(tokens []int32, pos int64, b ir.Bindings) map[string][]byte
}

// CheckStat is the comparison after one pass.
type CheckStat struct {
	Pass string
	// Unchanged: the pass changed nothing, so nothing ran.
	Unchanged bool
	// Identical: every output and state buffer kept its bits.
	Identical bool
	// MaxAbs is max|Δ| over the outputs and float state buffers (+Inf
	// when a shape, an integer buffer or a NaN pattern differs); Where
	// names the first largest difference ("step 2 output 0[17]").
	MaxAbs float64
	Where  string
	Steps  int // steps executed per graph
}

// String is one line: "fuse-norm: bit-identical (4 steps)".
func (s CheckStat) String() string {
	switch {
	case s.Unchanged:
		return s.Pass + ": unchanged"
	case s.Identical:
		return fmt.Sprintf("%s: bit-identical (%d steps)", s.Pass, s.Steps)
	}
	return fmt.Sprintf("%s: max|Δ| %.4g at %s (%d steps)", s.Pass, s.MaxAbs, s.Where, s.Steps)
}

// checkRun is everything one execution of a graph produced.
type checkRun struct {
	outputs [][][]float32 // [step][output]
	state   map[string][]byte
	types   map[string]ir.DType
}

// checker holds the run of the graph before the next pass.
type checker struct {
	opts   CheckOptions
	tokens []int32 // the decode tokens, fixed by the input graph's run
	prev   *checkRun
}

func (o *CheckOptions) instrument(res *Result) Instrument {
	c := &checker{opts: *o}
	return Instrument{Name: "check",
		Before: func(_ Pass, i int, g *ir.Graph) error {
			if i > 0 {
				return nil
			}
			r, err := c.run(g)
			if err != nil {
				return fmt.Errorf("the input graph: %w", err)
			}
			c.prev = r
			return nil
		},
		After: func(p Pass, _ int, g *ir.Graph, st PassStat) error {
			cs := CheckStat{Pass: p.Name, Unchanged: !st.Changed, Identical: !st.Changed, Steps: len(c.prev.outputs)}
			if st.Changed {
				r, err := c.run(g)
				if err != nil {
					return err
				}
				cs.MaxAbs, cs.Where, cs.Identical = compareRuns(c.prev, r)
				c.prev = r
			}
			res.Checks = append(res.Checks, cs)
			if c.opts.Report != nil {
				c.opts.Report(cs)
			}
			if !cs.Identical && !(cs.MaxAbs <= c.opts.Tol) {
				return fmt.Errorf("results differ from the graph before it: max|Δ| %.4g at %s exceeds the tolerance %g", cs.MaxAbs, cs.Where, c.opts.Tol)
			}
			return nil
		}}
}

// run executes g on the fixed inputs.
func (c *checker) run(g *ir.Graph) (*checkRun, error) {
	r := &checkRun{state: map[string][]byte{}, types: map[string]ir.DType{}}
	if st := c.opts.Step; st == nil || !st.IsStep(g) {
		sg := g
		if !g.IsStatic() || c.opts.Bindings != nil {
			var err error
			if sg, err = g.Specialize(c.opts.Bindings); err != nil {
				return nil, err
			}
		}
		outs, err := c.step(sg, r, false, func(n *ir.Node) ([]byte, error) { return leafData(n.Name, n.Type, 16) })
		if err != nil {
			return nil, err
		}
		r.outputs = append(r.outputs, outs)
		return r, nil
	}
	if c.opts.NCtx <= 0 {
		return nil, fmt.Errorf("a model step graph needs CheckOptions.NCtx")
	}
	prompt := c.opts.Prompt
	if len(prompt) == 0 {
		prompt = []int32{1, 2, 3, 4}
	}
	if int64(len(prompt)+c.opts.Decode) > c.opts.NCtx {
		return nil, fmt.Errorf("%d prompt tokens and %d decode steps exceed n_ctx %d", len(prompt), c.opts.Decode, c.opts.NCtx)
	}
	first := c.tokens == nil
	pos := int64(0)
	step := prompt
	for s := 0; s <= c.opts.Decode; s++ {
		n := int64(len(step))
		b := c.opts.Step.Bind(n, pos, c.opts.NCtx)
		sg, err := g.Specialize(b)
		if err != nil {
			return nil, fmt.Errorf("step %d: %w", s, err)
		}
		in := c.opts.Step.Inputs(step, pos, b)
		outs, err := c.step(sg, r, true, func(n *ir.Node) ([]byte, error) {
			if d, ok := in[n.Name]; ok {
				return d, nil
			}
			return leafData(n.Name, n.Type, 16)
		})
		if err != nil {
			return nil, fmt.Errorf("step %d (%s): %w", s, b, err)
		}
		r.outputs = append(r.outputs, outs)
		pos += n
		if s == c.opts.Decode {
			break
		}
		if first {
			if len(outs) == 0 || len(outs[0]) == 0 {
				return nil, fmt.Errorf("step %d: no logits to choose the next token from", s)
			}
			c.tokens = append(c.tokens, argmaxLast(outs[0], sg.Outputs[0].Type))
		}
		step = []int32{c.tokens[s]}
	}
	return r, nil
}

// argmaxLast is the greedy choice from the last row of a logits output.
func argmaxLast(v []float32, t ir.Type) int32 {
	row := t.Shape[0].Val
	if row <= 0 || row > int64(len(v)) {
		row = int64(len(v))
	}
	last := v[int64(len(v))-row:]
	best := 0
	for i, x := range last {
		if x > last[best] {
			best = i
		}
	}
	return int32(best)
}

// step runs one specialised graph: weights from the options (or derived
// data), inputs from input, state carried in r (zeroed on first use, or
// derived data outside model graphs).
func (c *checker) step(g *ir.Graph, r *checkRun, model bool, input func(*ir.Node) ([]byte, error)) ([][]float32, error) {
	w := c.opts.Weights
	if w == nil {
		wm := weightData{}
		for _, n := range g.Leaves(ir.OpWeight) {
			d, err := leafData(n.Name, n.Type, 16)
			if err != nil {
				return nil, fmt.Errorf("weight %q: %w", n.Name, err)
			}
			wm[n.Name] = d
		}
		w = wm
	}
	ex, err := eval.NewExecutor(g, w, c.opts.Exec)
	if err != nil {
		return nil, err
	}
	for _, n := range g.Leaves(ir.OpInput) {
		d, err := input(n)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", n.Name, err)
		}
		if err := ex.SetInput(n.Name, d); err != nil {
			return nil, err
		}
	}
	for _, n := range g.Leaves(ir.OpState) {
		if _, ok := r.state[n.Name]; !ok {
			size, err := n.Type.Bytes()
			if err != nil {
				return nil, fmt.Errorf("state %q: %w", n.Name, err)
			}
			d := make([]byte, size) // a model's KV cache starts empty
			if !model {
				if d, err = leafData(n.Name, n.Type, 16); err != nil {
					return nil, fmt.Errorf("state %q: %w", n.Name, err)
				}
			}
			r.state[n.Name], r.types[n.Name] = d, n.Type.DType
		}
		if err := ex.BindState(n.Name, r.state[n.Name]); err != nil {
			return nil, err
		}
	}
	if err := ex.Run(); err != nil {
		return nil, err
	}
	outs := make([][]float32, len(g.Outputs))
	for i := range g.Outputs {
		v, _, err := ex.Output(i)
		if err != nil {
			return nil, err
		}
		outs[i] = slices.Clone(v)
	}
	return outs, nil
}

// compareRuns returns max|Δ| between two runs, where it is, and whether
// every output and state buffer has the same bits.
func compareRuns(a, b *checkRun) (float64, string, bool) {
	worst, where, same := 0.0, "", true
	note := func(d float64, at string) {
		same = false
		if where == "" || d > worst || math.IsNaN(d) && !math.IsInf(worst, 1) {
			worst, where = d, at
			if math.IsNaN(d) {
				worst = math.Inf(1)
			}
		}
	}
	for s := range a.outputs {
		for o := range a.outputs[s] {
			x, y := a.outputs[s][o], b.outputs[s][o]
			at := fmt.Sprintf("step %d output %d", s, o)
			if len(x) != len(y) {
				note(math.Inf(1), fmt.Sprintf("%s (%d values, was %d)", at, len(y), len(x)))
				continue
			}
			diffFloats(x, y, at, note)
		}
	}
	names := make([]string, 0, len(a.state))
	for k := range a.state {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		x, y := a.state[k], b.state[k]
		if slices.Equal(x, y) {
			continue
		}
		at := fmt.Sprintf("state %q", k)
		fx, okx := stateFloats(x, a.types[k])
		fy, oky := stateFloats(y, b.types[k])
		if !okx || !oky || len(fx) != len(fy) {
			note(math.Inf(1), at)
			continue
		}
		diffFloats(fx, fy, at, note)
	}
	return worst, where, same
}

// diffFloats reports every element whose bits differ.
func diffFloats(x, y []float32, at string, note func(float64, string)) {
	for i := range x {
		if math.Float32bits(x[i]) == math.Float32bits(y[i]) {
			continue
		}
		note(math.Abs(float64(x[i])-float64(y[i])), fmt.Sprintf("%s[%d]", at, i))
	}
}

// stateFloats decodes an f32 or f16 state buffer.
func stateFloats(b []byte, t ir.DType) ([]float32, bool) {
	switch t {
	case ir.F32:
		out := make([]float32, len(b)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		return out, true
	case ir.F16:
		out := make([]float32, len(b)/2)
		for i := range out {
			out[i] = gguf.F16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
		}
		return out, true
	}
	return nil, false
}

// weightData is an eval.WeightSource of derived data.
type weightData map[string][]byte

func (w weightData) TensorData(name string) ([]byte, error) {
	b, ok := w[name]
	if !ok {
		return nil, fmt.Errorf("no weight %q", name)
	}
	return b, nil
}

// seedOf hashes a name (FNV-1a), so a leaf's data depends only on its
// name and type: the same before and after a pass.
func seedOf(name string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h = (h ^ uint64(name[i])) * 1099511628211
	}
	return h
}

// leafData makes deterministic contents for a leaf of type t: floats in
// [-1, 1), rounded to F16 or quantised to t's block type; integers a
// permutation of the first rows, each below bound when bound > 0 (valid
// row indices, and scattered writes never collide).
func leafData(name string, t ir.Type, bound int64) ([]byte, error) {
	ne, err := t.Shape.Ne()
	if err != nil {
		return nil, err
	}
	n := ne[0] * ne[1] * ne[2] * ne[3]
	r := rand.New(rand.NewPCG(seedOf(name), uint64(t.DType)))
	switch t.DType {
	case ir.I32, ir.I64:
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
