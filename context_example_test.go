package irtool_test

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/target"
)

// Two experiments in one process: context a defines an op "double" (its
// typing, CPU kernel and target rule, in one record), parses and runs a
// graph that uses it and asks a target about it; context b and the package
// defaults never see the op.
func ExampleNewContext() {
	a, b := irtool.NewContext(), irtool.NewContext()
	err := a.RegisterOp(irtool.Op{
		Info: ir.OpInfo{Name: "double", MinArgs: 1, ElementWise: true, Doc: "double(x): 2x",
			Infer: func(n *ir.Node) (ir.Type, error) { return n.Args[0].Type, nil }},
		Kernel: func(n *ir.Node, dst kernels.Tensor, args []kernels.Tensor, _ kernels.Options) error {
			return kernels.Scale(dst, args[0], 2)
		},
		Rule: target.OpRule{
			NPU: func(*ir.Node) target.Support { return target.Support{OK: true, Kernel: "aclnnMuls"} },
			Traffic: func(n *ir.Node, _ ir.Bindings) (float64, float64, error) {
				size, err := n.Type.Bytes() // one FLOP per f32, read once and written once
				return float64(size / 4), float64(2 * size), err
			},
			Workspace: target.NoWorkspace,
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	const src = `graph "twice" {
  %0 = input() : f32[4] "x"
  %1 = double(%0) : f32[4] "y"
  outputs(%1)
}
`
	g, err := a.Ops.ParseString(src)
	if err != nil {
		fmt.Println(err)
		return
	}
	ex, err := eval.NewExecutor(g, nil, eval.ExecOptions{KernelSet: a.Kernels})
	if err != nil {
		fmt.Println(err)
		return
	}
	in := make([]byte, 16)
	for i, v := range []float32{1, 2, 3, 4} {
		binary.LittleEndian.PutUint32(in[4*i:], math.Float32bits(v))
	}
	ex.SetInput("x", in)
	if err := ex.Run(); err != nil {
		fmt.Println(err)
		return
	}
	y, _, _ := ex.Output(0)
	fmt.Println("a runs it:", y)
	npu, _ := a.Rules.Profile("ascend910b")
	fmt.Println("a's 910B runs it with", npu.Supports(g.Nodes[1]).Kernel)

	_, err = b.Ops.ParseString(src)
	fmt.Println("b:", err)
	_, err = ir.ParseString(src)
	fmt.Println("defaults:", err)
	// Output:
	// a runs it: [2 4 6 8]
	// a's 910B runs it with aclnnMuls
	// b: ir: parse line 3 col 8: unknown op "double"
	// defaults: ir: parse line 3 col 8: unknown op "double"
}
