package cann_test

import (
	"context"
	"fmt"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/ir"
)

// Partition a small graph for the 910B, lower its decode step (the
// compile driver plans the step and calls Lower) and look at the kernels,
// their addresses and the cost model's prediction (Predict).
func Example() {
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
	r, err := compiler.Compile(context.Background(), g, compiler.Options{Target: "ascend910b", Passes: "none", Strategy: "greedy-size", NoMemory: true})
	if err != nil {
		panic(err)
	}
	for _, s := range r.Program.Segments {
		fmt.Printf("segment %s capturable=%v\n", s.Key, s.Capturable)
		for _, k := range s.Kernels {
			fmt.Printf("  %-14s out %-12s shape %v strides %v\n", k.Name, k.Output.Addr, k.Output.Shape, k.Output.Strides)
		}
	}
	pr := r.Prediction
	fmt.Printf("eager %.0f us, graph %.0f us\n", pr.EagerUS, pr.GraphUS)
	// Output:
	// segment s0@n_tokens=1 capturable=true
	//   aclnnRmsNorm   out arena+0      shape [1 1 1 64] strides [64 64 64 1]
	//   aclnnMm        out arena+256    shape [1 1 1 64] strides [64 64 64 1]
	//   aclnnSilu      out outputs+0    shape [1 1 1 64] strides [64 64 64 1]
	// eager 86 us, graph 83 us
}
