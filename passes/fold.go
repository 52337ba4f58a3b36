package passes

import (
	"fmt"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/ir"
)

// FoldOptions are the guards of constant folding (XLA's, adapted).
type FoldOptions struct {
	// MaxBytes caps a folded result (default 64 KiB). Beyond it a constant
	// costs more to store and load than to compute, and no weight-sized
	// tensor is ever copied into the program as a constant.
	MaxBytes int64
	// MaxGeneratorBytes caps the result of an op without operands (default
	// 4 KiB): such an op (an iota-like table) is cheap to compute on the
	// device, so only small ones are worth turning into constants.
	MaxGeneratorBytes int64
	// Kernels is the kernel set folding evaluates with (nil:
	// eval.DefaultKernels); an experiment's irtool.Context passes its own
	// so that its ops fold too.
	Kernels *eval.KernelSet
}

func (o FoldOptions) kernels() *eval.KernelSet {
	if o.Kernels == nil {
		return eval.DefaultKernels()
	}
	return o.Kernels
}

func (o FoldOptions) limits() (int64, int64) {
	maxB, maxG := o.MaxBytes, o.MaxGeneratorBytes
	if maxB <= 0 {
		maxB = 64 << 10
	}
	if maxG <= 0 {
		maxG = 4 << 10
	}
	return maxB, maxG
}

// foldable reports whether n can be folded and, if not, why (for the
// statistics).
func foldable(n *ir.Node, o FoldOptions) (bool, string) {
	info, ok := n.Info()
	if !ok || info.Kind == ir.KindLeaf {
		return false, ""
	}
	for _, a := range n.Args {
		if a.Op != ir.OpConst {
			return false, ""
		}
	}
	if info.SideEffect {
		return false, "skipped_side_effect"
	}
	if !n.Type.Shape.IsStatic() {
		return false, "skipped_symbolic"
	}
	if _, ok := o.kernels().Lookup(n.Op); !ok && info.Kind != ir.KindView {
		return false, "skipped_no_kernel"
	}
	size, err := n.Type.Bytes()
	if err != nil {
		return false, "skipped_size"
	}
	maxB, maxG := o.limits()
	if size > maxB {
		return false, "skipped_too_big"
	}
	if len(n.Args) == 0 {
		if size > maxG {
			return false, "skipped_expansion"
		}
		return true, ""
	}
	var in int64
	for _, a := range n.Args {
		in += int64(len(a.Data))
	}
	if size > in {
		// A broadcast or gather that makes more data than it reads: the
		// result is cheaper to compute than to store.
		return false, "skipped_expansion"
	}
	return true, ""
}

// evalConst computes n from its constant operands with the reference
// executor and returns the result's bytes, densely packed.
func evalConst(n *ir.Node, ks *eval.KernelSet) ([]byte, error) {
	g := ir.New("fold")
	if info, ok := n.Info(); ok {
		if def, _ := ir.Lookup(n.Op); def != info {
			// An op of an experiment's own op set: fold it in a graph
			// that knows it.
			g.OpSet = ir.NewOpSet()
			if err := g.OpSet.Register(*info); err != nil {
				return nil, err
			}
		}
	}
	args := make([]*ir.Node, len(n.Args))
	made := map[*ir.Node]*ir.Node{}
	for i, a := range n.Args {
		if c, ok := made[a]; ok {
			args[i] = c
			continue
		}
		c, err := addConst(g, a)
		if err != nil {
			return nil, err
		}
		made[a] = c
		args[i] = c
	}
	x, err := g.AddTyped(n.Op, args, n.Attrs.Clone(), n.Type)
	if err != nil {
		return nil, err
	}
	g.Outputs = []*ir.Node{x}
	ex, err := eval.NewExecutor(g, nil, eval.ExecOptions{KernelSet: ks})
	if err != nil {
		return nil, err
	}
	if err := ex.Run(); err != nil {
		return nil, err
	}
	t, err := ex.Tensor(x)
	if err != nil {
		return nil, err
	}
	if t, err = t.Contiguous(); err != nil {
		return nil, err
	}
	size, _ := n.Type.Bytes()
	if int64(len(t.Data)) < size {
		return nil, fmt.Errorf("result holds %d bytes, want %d", len(t.Data), size)
	}
	return t.Data[:size:size], nil
}

func addConst(g *ir.Graph, a *ir.Node) (*ir.Node, error) {
	c := &ir.Node{Op: ir.OpConst, Type: a.Type, Data: a.Data, Layer: -1}
	if err := ir.CheckNode(c); err != nil {
		return nil, err
	}
	c.ID = len(g.Nodes)
	g.Nodes = append(g.Nodes, c)
	return c, nil
}

func foldPass() Pass {
	return Pass{Name: "fold", Doc: "constant folding: a node whose operands are all constants is run on the reference kernels and becomes a constant (never a broadcast, gather or large generator; results capped at 64 KiB)",
		Run: func(g *ir.Graph, c *Context) (bool, error) {
			changed := false
			for i, n := range g.Nodes {
				ok, why := foldable(n, c.Options.Fold)
				if !ok {
					if why != "" {
						c.Count(why, 1)
					}
					continue
				}
				data, err := evalConst(n, c.Options.Fold.kernels())
				if err != nil {
					return changed, fmt.Errorf("%s (%s %q): %w", n, n.Op, n.Name, err)
				}
				k := &ir.Node{ID: i, Op: ir.OpConst, Type: n.Type, Data: data, Name: n.Name, Layer: n.Layer}
				g.Nodes[i] = k
				g.ReplaceUses(n, k)
				c.Count("folded", 1)
				changed = true
			}
			if changed {
				c.Count("removed", g.Compact())
			}
			return changed, nil
		}}
}
