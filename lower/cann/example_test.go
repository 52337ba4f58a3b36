package cann_test

import (
	"fmt"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/lower/cann"
	"github.com/irtool/irtool/partition"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/target"
)

// Partition a small graph for the 910B, lower one step shape and look at
// the kernels, their addresses and the cost model's prediction.
func ExampleCompile() {
	g, err := ir.ParseString(`graph "g" {
  %0 = input() : f32[64,n_tokens] "x"
  %1 = weight() : f16[64,64] "w"
  %2 = rms_norm(%0) {eps=1e-05} : f32[64,n_tokens] "norm"
  %3 = mul_mat(%1, %2) : f32[64,n_tokens] "proj"
  %4 = silu(%3) : f32[64,n_tokens] "act"
  outputs(%4)
}`)
	if err != nil {
		panic(err)
	}
	p, _ := target.Get("ascend910b")
	pg, part, err := partition.Run(g, p, nil)
	if err != nil {
		panic(err)
	}
	prog, _, err := cann.Compile(pg, part, p, ir.Bindings{"n_tokens": 1}, planner.MemoryOptions{Strategy: "greedy-size"}, cann.Options{})
	if err != nil {
		panic(err)
	}
	for _, s := range prog.Segments {
		fmt.Printf("segment %s capturable=%v\n", s.Key, s.Capturable)
		for _, k := range s.Kernels {
			fmt.Printf("  %-14s out %-12s shape %v strides %v\n", k.Name, k.Output.Addr, k.Output.Shape, k.Output.Strides)
		}
	}
	pr, _ := cann.Predict(prog, p)
	fmt.Printf("eager %.0f us, graph %.0f us\n", pr.EagerUS, pr.GraphUS)
	// Output:
	// segment s0@n_tokens=1 capturable=true
	//   aclnnRmsNorm   out arena+0      shape [1 1 1 64] strides [64 64 64 1]
	//   aclnnMm        out arena+256    shape [1 1 1 64] strides [64 64 64 1]
	//   aclnnSilu      out outputs+0    shape [1 1 1 64] strides [64 64 64 1]
	// eager 86 us, graph 84 us
}
