package eval_test

import (
	"fmt"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// A custom op's reference CPU kernel: the op "double" is defined in an
// OpSet of its own, its kernel in a KernelSet of its own, and the executor
// runs a graph of it with that kernel set; the default kernel set never
// sees it.
func ExampleKernelSet_Register() {
	ops := ir.NewOpSet()
	err := ops.Register(ir.OpInfo{Name: "double", MinArgs: 1, ElementWise: true, Doc: "double(x): 2x",
		Infer: func(n *ir.Node) (ir.Type, error) { return n.Args[0].Type, nil }})
	if err != nil {
		fmt.Println(err)
		return
	}
	ks := eval.NewKernelSet()
	err = ks.Register("double", func(n *ir.Node, dst kernels.Tensor, args []kernels.Tensor, _ kernels.Options) error {
		return kernels.Scale(dst, args[0], 2)
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := ops.ParseString(`graph "g" {
  %0 = input() : f32[3] "x"
  %1 = double(%0) : f32[3] "y"
  outputs(%1)
}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	ex, err := eval.NewExecutor(g, nil, eval.ExecOptions{KernelSet: ks})
	if err != nil {
		fmt.Println(err)
		return
	}
	ex.SetInput("x", f32Bytes(1, -2, 0.5))
	if err := ex.Run(); err != nil {
		fmt.Println(err)
		return
	}
	y, _, _ := ex.Output(0)
	fmt.Println(y)
	// Without the kernel set, the executor has no kernel for the op.
	plain, err := eval.NewExecutor(g, nil, eval.ExecOptions{})
	if err == nil {
		plain.SetInput("x", f32Bytes(1, -2, 0.5))
		err = plain.Run()
	}
	fmt.Println("default kernels:", err != nil)
	// Output:
	// [2 -4 1]
	// default kernels: true
}
