package passes_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/irtool/irtool/internal/floatbits"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/passes"
)

// A generator of random valid graphs built from the fragments of decoder
// layers (norms, projections with and without bias, SwiGLU, attention with
// and without a separate scale and mask, RoPE into a KV cache, shared
// projections) mixed with the things clean-up passes remove (no-op view
// chains, duplicated nodes, constant subgraphs, dead nodes). The property:
// after the default pipeline plus merge-qkv, every output and every state
// buffer is bit for bit what the original graph computes.

const (
	rgHD    = 4 // head dim
	rgHeads = 4 // heads
	rgD     = rgHD * rgHeads
	rgFF    = 24
	rgCells = 16 // KV cache rows
)

type graphGen struct {
	r    *rand.Rand
	g    *ir.Graph
	t    ir.Dim     // n_tokens: a constant or a symbol
	vals []*ir.Node // f32[D, T] values
	pos  *ir.Node
	idx  *ir.Node
	mask *ir.Node
	n    int // name counter
	err  error
}

func (b *graphGen) name(prefix string) string {
	b.n++
	return prefix + strconv.Itoa(b.n)
}

func (b *graphGen) add(op ir.Op, attrs ir.Attrs, args ...*ir.Node) *ir.Node {
	if b.err != nil {
		return nil
	}
	n, err := b.g.Add(op, args, attrs)
	if err != nil {
		b.err = fmt.Errorf("%s: %w", op, err)
		return nil
	}
	n.Name = b.name(string(op))
	return n
}

func (b *graphGen) typed(op ir.Op, t ir.Type, attrs ir.Attrs, args ...*ir.Node) *ir.Node {
	if b.err != nil {
		return nil
	}
	n, err := b.g.AddTyped(op, args, attrs, t)
	if err != nil {
		b.err = fmt.Errorf("%s: %w", op, err)
		return nil
	}
	if n.Name == "" {
		n.Name = b.name(string(op))
	}
	return n
}

func (b *graphGen) leaf(op ir.Op, t ir.Type) *ir.Node {
	if op != ir.OpConst {
		return b.typed(op, t, nil)
	}
	name := b.name("const")
	d, err := passes.LeafData(name, t, 0)
	if err != nil {
		b.err = err
		return nil
	}
	n := &ir.Node{ID: len(b.g.Nodes), Op: ir.OpConst, Type: t, Data: d, Name: name, Layer: -1}
	b.g.Nodes = append(b.g.Nodes, n)
	return n
}

// splat is an F32 constant of v everywhere.
func (b *graphGen) splat(v float32, dims ...any) *ir.Node {
	t := ir.T(ir.F32, dims...)
	ne, _ := t.Shape.Ne()
	vals := make([]float32, ne[0]*ne[1]*ne[2]*ne[3])
	for i := range vals {
		vals[i] = v
	}
	n := &ir.Node{ID: len(b.g.Nodes), Op: ir.OpConst, Type: t, Data: floatbits.Bytes(vals...), Name: b.name("splat"), Layer: -1}
	b.g.Nodes = append(b.g.Nodes, n)
	return n
}

func (b *graphGen) weight(dims ...any) *ir.Node { return b.leaf(ir.OpWeight, ir.T(ir.F32, dims...)) }

func (b *graphGen) pick() *ir.Node { return b.vals[b.r.IntN(len(b.vals))] }

func (b *graphGen) push(n *ir.Node) {
	if n != nil {
		b.vals = append(b.vals, n)
	}
}

func (b *graphGen) heads(x *ir.Node) *ir.Node {
	return b.typed(ir.OpReshape, ir.Type{DType: ir.F32, Shape: ir.Shape{ir.C(rgHD), ir.C(rgHeads), b.t, ir.C(1)}}, nil, x)
}

func (b *graphGen) rope(x *ir.Node) *ir.Node {
	attrs := ir.Attrs{"n_dims": int64(rgHD), "mode": int64(2 * b.r.IntN(2)), "freq_base": 10000.0, "freq_scale": 1.0,
		"ext_factor": 0.0, "attn_factor": 1.0, "beta_fast": 32.0, "beta_slow": 1.0, "n_ctx_orig": int64(64)}
	if b.r.IntN(3) == 0 {
		return b.add(ir.OpRope, attrs, x, b.pos, b.weight(rgHD/2))
	}
	return b.add(ir.OpRope, attrs, x, b.pos)
}

// step appends one random fragment.
func (b *graphGen) step() {
	x := b.pick()
	switch b.r.IntN(12) {
	case 0: // norm, maybe times a weight
		y := b.add(ir.OpRMSNorm, ir.Attrs{"eps": 1e-5}, x)
		if b.r.IntN(3) > 0 {
			y = b.add(ir.OpMul, nil, y, b.weight(rgD))
		}
		b.push(y)
	case 1: // residual add, norm, weight; the sum stays in use
		s := b.add(ir.OpAdd, nil, x, b.pick())
		b.push(b.add(ir.OpMul, nil, b.add(ir.OpRMSNorm, ir.Attrs{"eps": 1e-5}, s), b.weight(rgD)))
		b.push(s)
	case 2: // projection with or without bias
		y := b.add(ir.OpMulMat, nil, b.weight(rgD, rgD), x)
		if b.r.IntN(2) == 0 {
			y = b.add(ir.OpAdd, nil, y, b.weight(rgD))
		}
		b.push(y)
	case 3: // SwiGLU MLP
		g := b.add(ir.OpMulMat, nil, b.weight(rgD, rgFF), x)
		u := b.add(ir.OpMulMat, nil, b.weight(rgD, rgFF), x)
		b.push(b.add(ir.OpMulMat, nil, b.weight(rgFF, rgD), b.add(ir.OpMul, nil, b.add(ir.OpSilu, nil, g), u)))
	case 4: // attention
		q := b.add(ir.OpPermute, ir.Attrs{"axes": []int64{0, 2, 1, 3}}, b.rope(b.heads(b.add(ir.OpMulMat, nil, b.weight(rgD, rgD), x))))
		k := b.add(ir.OpPermute, ir.Attrs{"axes": []int64{0, 2, 1, 3}}, b.heads(b.add(ir.OpMulMat, nil, b.weight(rgD, rgD), x)))
		vt := b.add(ir.OpPermute, ir.Attrs{"axes": []int64{1, 2, 0, 3}}, b.heads(b.add(ir.OpMulMat, nil, b.weight(rgD, rgD), x)))
		v := b.typed(ir.OpCont, ir.Type{DType: ir.F32, Shape: ir.Shape{b.t, ir.C(rgHD), ir.C(rgHeads), ir.C(1)}}, nil, vt)
		kq := b.add(ir.OpMulMat, nil, k, q)
		var sm *ir.Node
		if b.r.IntN(2) == 0 {
			sm = b.add(ir.OpSoftMax, ir.Attrs{"scale": 0.5, "max_bias": 0.0}, kq, b.mask)
		} else {
			sm = b.add(ir.OpSoftMax, ir.Attrs{"scale": 1.0, "max_bias": 0.0}, b.add(ir.OpAdd, nil, b.add(ir.OpScale, ir.Attrs{"scale": 0.5}, kq), b.mask))
		}
		kqv := b.add(ir.OpMulMat, nil, v, sm)
		m := b.add(ir.OpPermute, ir.Attrs{"axes": []int64{0, 2, 1, 3}}, kqv)
		b.push(b.typed(ir.OpCont, ir.Type{DType: ir.F32, Shape: ir.Shape{ir.C(rgD), b.t, ir.C(1), ir.C(1)}}, nil, m))
	case 5: // RoPE'd K written into a cache by row index; read back
		cache := b.leaf(ir.OpState, ir.T(ir.F16, rgD, rgCells))
		k := b.rope(b.heads(b.add(ir.OpMulMat, nil, b.weight(rgD, rgD), x)))
		rows := b.typed(ir.OpReshape, ir.Type{DType: ir.F32, Shape: ir.Shape{ir.C(rgD), b.t, ir.C(1), ir.C(1)}}, nil, k)
		w := b.add(ir.OpSetRows, nil, cache, rows, b.idx)
		view := b.typed(ir.OpView, ir.T(ir.F16, rgD, rgCells), ir.Attrs{"offset": ir.C(0), "nb": []int64{2, 2 * rgD, 2 * rgD * rgCells, 2 * rgD * rgCells}}, w)
		y := b.add(ir.OpMulMat, nil, view, x)
		_ = y // written state is compared; the read is optional
		if b.r.IntN(2) == 0 {
			b.g.Outputs = append(b.g.Outputs, y)
		}
	case 6: // no-op chains
		var y *ir.Node
		switch b.r.IntN(12) {
		case 0:
			y = b.typed(ir.OpReshape, x.Type, nil, b.heads(x))
		case 9:
			y = b.add(ir.OpMul, nil, x, b.splat(1, rgD))
		case 10:
			y = b.add(ir.OpDiv, nil, x, b.splat(1, 1))
		case 11:
			y = b.add(ir.OpAdd, nil, x, b.splat(float32(math.Copysign(0, -1)), rgD))
		case 6:
			y = b.typed(ir.OpReshape, x.Type, nil, x)
		case 7:
			y = b.add(ir.OpPermute, ir.Attrs{"axes": []int64{0, 1, 2, 3}}, x)
		case 8:
			tr := b.add(ir.OpTransp, nil, x)
			y = b.add(ir.OpTransp, nil, b.typed(ir.OpCont, tr.Type, nil, b.typed(ir.OpCont, tr.Type, nil, tr)))
		case 1:
			y = b.add(ir.OpPermute, ir.Attrs{"axes": []int64{1, 0, 2, 3}}, b.add(ir.OpTransp, nil, x))
		case 2:
			y = b.typed(ir.OpCont, x.Type, nil, x)
		case 3:
			y = b.add(ir.OpScale, ir.Attrs{"scale": 1.0}, x)
		case 4:
			y = b.typed(ir.OpCast, x.Type, nil, x)
		default:
			y = b.typed(ir.OpCont, x.Type, nil, b.typed(ir.OpCont, x.Type, nil, x))
		}
		b.push(b.add(ir.OpSilu, nil, y))
	case 7: // a duplicate of an existing computation
		for tries := 0; tries < 8; tries++ {
			c := b.g.Nodes[b.r.IntN(len(b.g.Nodes))]
			info, _ := ir.Lookup(c.Op)
			if c.IsLeaf() || info.SideEffect || c.Type.DType != ir.F32 || !c.Type.Equal(x.Type) {
				continue
			}
			d := b.typed(c.Op, c.Type, c.Attrs.Clone(), c.Args...)
			b.push(b.add(ir.OpAdd, nil, d, c))
			break
		}
	case 8: // constants feeding the graph
		c := b.add(ir.OpScale, ir.Attrs{"scale": 0.25}, b.add(ir.OpAdd, nil, b.leaf(ir.OpConst, ir.T(ir.F32, rgD)), b.leaf(ir.OpConst, ir.T(ir.F32, rgD))))
		b.push(b.add(ir.OpMul, nil, x, c))
	case 9: // shared input of three projections (merge-qkv)
		for range 3 {
			b.push(b.add(ir.OpMulMat, nil, b.weight(rgD, rgD), x))
		}
	case 10: // something dead
		b.add(ir.OpSilu, nil, b.add(ir.OpMulMat, nil, b.weight(rgD, rgD), x))
	default: // elementwise
		y := b.pick()
		switch b.r.IntN(3) {
		case 0:
			b.push(b.add(ir.OpAdd, nil, x, y))
		case 1:
			b.push(b.add(ir.OpMul, nil, x, y))
		default:
			b.push(b.add(ir.OpScale, ir.Attrs{"scale": 0.75}, b.add(ir.OpSilu, nil, x)))
		}
	}
}

// randomGraph builds a graph of about steps fragments. With symbolic, the
// token count is the symbol n_tokens.
func randomGraph(seed uint64, steps int, symbolic bool) (*ir.Graph, error) {
	b := &graphGen{r: rand.New(rand.NewPCG(seed, 7)), g: ir.New(fmt.Sprintf("random-%d", seed)), t: ir.C(3)}
	if symbolic {
		b.t = ir.S("n_tokens")
	}
	tt := ir.Shape{b.t, ir.C(1), ir.C(1), ir.C(1)}
	b.pos = b.typed(ir.OpInput, ir.Type{DType: ir.I32, Shape: tt}, nil)
	b.idx = b.typed(ir.OpInput, ir.Type{DType: ir.I64, Shape: tt}, nil)
	b.mask = b.typed(ir.OpInput, ir.Type{DType: ir.F32, Shape: ir.Shape{b.t, b.t, ir.C(1), ir.C(1)}}, nil)
	b.push(b.typed(ir.OpInput, ir.Type{DType: ir.F32, Shape: ir.Shape{ir.C(rgD), b.t, ir.C(1), ir.C(1)}}, nil))
	for range steps {
		b.step()
	}
	if b.err != nil {
		return nil, b.err
	}
	// Every value nothing else uses is an output, so only the fragments
	// meant to be dead are.
	used := map[*ir.Node]bool{}
	for _, n := range b.g.Nodes {
		for _, a := range n.Args {
			used[a] = true
		}
	}
	for _, v := range b.vals {
		if !used[v] && !slices.Contains(b.g.Outputs, v) {
			b.g.Outputs = append(b.g.Outputs, v)
		}
	}
	return b.g, ir.Verify(b.g)
}

// TestRandomGraphs optimises random graphs (static and symbolic) with every
// pass and compares the executions bit for bit.
func TestRandomGraphs(t *testing.T) {
	n := 120
	if testing.Short() {
		n = 30
	}
	// The default pipeline with merge-qkv, and (every third graph) one
	// without the RoPE cache, so the rope fused with its K-cache write
	// without a table is exercised too.
	var pipes []passes.Pipeline
	for _, s := range []string{"default,merge-qkv", "noop,fold,cse,fuse-norm,fuse-matmul-bias,fuse-swiglu,fuse-softmax,fuse-attention,fuse-rope-set-rows,merge-qkv,dce"} {
		p, err := passes.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		pipes = append(pipes, p)
	}
	hits := map[string]int{}
	for seed := range uint64(n) {
		symbolic := seed%2 == 1
		p := pipes[min(seed%3, 1)]
		g, err := randomGraph(seed, 14, symbolic)
		if err != nil {
			t.Fatalf("seed %d: generator: %v", seed, err)
		}
		opt, res, err := passes.Run(g, p, passes.Options{})
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, g)
		}
		for _, ps := range res.Passes {
			for k, v := range ps.RuleHits {
				hits[k] += v
			}
			for k, v := range ps.Stats {
				hits[ps.Name+"."+k] += v
			}
		}
		run := func(g *ir.Graph) (*execResult, error) {
			if symbolic {
				if g, err = g.Specialize(ir.Bindings{"n_tokens": 3}); err != nil {
					return nil, err
				}
			}
			return execute(g, rgCells)
		}
		want, err := run(g)
		if err != nil {
			t.Fatalf("seed %d: original: %v", seed, err)
		}
		got, err := run(opt)
		if err != nil {
			t.Fatalf("seed %d: optimised: %v\n%s", seed, err, opt)
		}
		if err := sameBits(want, got); err != nil {
			t.Fatalf("seed %d: %v\noriginal:\n%s\noptimised:\n%s", seed, err, g, opt)
		}
	}
	t.Logf("rule hits over %d graphs: %v", n, hits)
	// Every rule and every pass that changes graphs must have been
	// exercised, or the property says nothing about it. rope-table is not
	// bit-exact by design (TestRopeTable measures it).
	for _, ps := range passes.All() {
		for _, r := range ps.Rules {
			if hits[r.Name] == 0 && r.Name != "rope-table" {
				t.Errorf("rule %s never fired on %d random graphs", r.Name, n)
			}
		}
	}
	for _, k := range []string{"cse.merged", "fold.folded", "merge-qkv.groups"} {
		if hits[k] == 0 {
			t.Errorf("%s is 0 over %d random graphs", k, n)
		}
	}
}
