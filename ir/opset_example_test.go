package ir_test

import (
	"fmt"

	"github.com/irtool/irtool/ir"
)

// An op set of its own: the op it defines parses in graphs of that set
// only, and every node keeps its definition (Node.Info), so the passes,
// the planner and the executor resolve it as the set does.
func ExampleNewOpSet() {
	set := ir.NewOpSet()
	err := set.Register(ir.OpInfo{Name: "negate", MinArgs: 1, ElementWise: true, Doc: "negate(x): -x",
		Infer: func(n *ir.Node) (ir.Type, error) { return n.Args[0].Type, nil }})
	if err != nil {
		fmt.Println(err)
		return
	}
	const src = `graph "g" {
  %0 = input() : f32[8] "x"
  %1 = negate(%0) : f32[8]
  outputs(%1)
}
`
	g, err := set.ParseString(src)
	if err != nil {
		fmt.Println(err)
		return
	}
	info, _ := g.Nodes[1].Info()
	fmt.Println(info.Doc)
	_, err = ir.ParseString(src) // the default set does not know it
	fmt.Println(err)
	// Output:
	// negate(x): -x
	// ir: parse line 3 col 8: unknown op "negate"
}

// A graph holding fused ops parses with package ir alone: their typing is
// defined here, not registered by the passes that make them.
func ExampleParseString_fused() {
	g, err := ir.ParseString(`graph "fused" {
  %0 = input() : f32[64,n_tokens] "x"
  %1 = weight() : f32[64] "norm.weight"
  %2 = rms_norm_mul(%0, %1) {eps=1e-05} : f32[64,n_tokens]
  %3 = swiglu(%2, %2) : f32[64,n_tokens]
  outputs(%3)
}
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range g.Nodes[2:] {
		info, _ := n.Info()
		fmt.Println(n.Op, info.Fused)
	}
	// Output:
	// rms_norm_mul true
	// swiglu true
}
