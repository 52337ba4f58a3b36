package cann_test

import (
	"context"
	"fmt"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/target"
)

// A custom op from its definition to a CANN program: the op "double" is
// defined once (typing, CPU kernel, target rule with its aclnn recipe) in a
// Context; the context's 910B profile places it on the NPU and the lowering
// emits the recipe's aclnn call, with descriptors at planned addresses.
func Example_customOp() {
	ctx := irtool.NewContext()
	err := ctx.RegisterOp(irtool.Op{
		Info: ir.OpInfo{Name: "double", MinArgs: 1, ElementWise: true, Doc: "double(x): 2x",
			Infer: func(n *ir.Node) (ir.Type, error) { return n.Args[0].Type, nil }},
		// The reference CPU kernel: what a CPU fallback runs, and the oracle.
		Kernel: func(n *ir.Node, dst kernels.Tensor, args []kernels.Tensor, _ kernels.Options) error {
			return kernels.Scale(dst, args[0], 2)
		},
		Rule: target.OpRule{
			// The CANN recipe: f32 only, one aclnnMuls call.
			NPU: func(n *ir.Node) target.Support {
				if n.Type.DType != ir.F32 {
					return target.Support{Reason: "double: f32 only"}
				}
				return target.Support{OK: true, Kernel: "aclnnMuls", Calls: []string{"aclnnMuls"}}
			},
			// The cost model's view: one FLOP per element, read and written once.
			Traffic: func(n *ir.Node, b ir.Bindings) (float64, float64, error) {
				t := n.Type
				if b != nil {
					s, err := t.Shape.Eval(b)
					if err != nil {
						return 0, 0, err
					}
					t.Shape = s
				}
				size, err := t.Bytes()
				return float64(size / 4), float64(2 * size), err
			},
			Workspace: target.NoWorkspace,
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := ctx.Ops.ParseString(`graph "g" {
  %0 = input() : f32[64,n_tokens] "x"
  %1 = rms_norm(%0) {eps=1e-05} : f32[64,n_tokens] "norm"
  %2 = double(%1) : f32[64,n_tokens] "twice"
  outputs(%2)
}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := ctx.Compile(context.Background(), g, compiler.Options{Target: "ascend910b", Passes: "none", Strategy: "greedy-size", NoMemory: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range r.Program.Segments {
		for _, k := range s.Kernels {
			fmt.Printf("%s on node %%%d, output %s\n", k.Name, k.Node, k.Output.Addr)
		}
	}
	// Output:
	// aclnnRmsNorm on node %1, output arena+0
	// aclnnMuls on node %2, output outputs+0
}
