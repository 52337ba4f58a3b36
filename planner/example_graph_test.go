package planner_test

import (
	"fmt"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/planner"
)

// Plan a small static graph: rms_norm and mul run in place over the
// projection (ggml's rule on the CPU), so three intermediates share one
// buffer; the input and the output are persistent and not planned.
func ExamplePlanMemory() {
	g, err := ir.ParseString(`graph "chain" {
  %0 = input() : f32[64,4] "x"
  %1 = weight() : f32[64,64] "w1"
  %2 = weight() : f32[64] "g"
  %3 = weight() : f32[64,16] "w2"
  %4 = mul_mat(%1, %0) : f32[64,4] "a"
  %5 = rms_norm(%4) {eps=1e-05} : f32[64,4] "b"
  %6 = mul(%5, %2) : f32[64,4] "c"
  %7 = mul_mat(%3, %6) : f32[16,4] "d"
  outputs(%7)
}`)
	if err != nil {
		panic(err)
	}
	for _, pol := range []planner.InPlacePolicy{planner.CPUPolicy(), planner.NPUPolicy()} {
		p, err := planner.PlanMemory(g, planner.MemoryOptions{Policy: pol, Align: 32})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: arena %d B, lower bound %d B, naive %d B, %d in place, offsets a=%d b=%d c=%d\n",
			pol.Name, p.ArenaBytes, p.LowerBound, p.NaiveBytes, p.InPlace, p.Offsets[4], p.Offsets[5], p.Offsets[6])
	}
	// Output:
	// cpu: arena 1024 B, lower bound 1024 B, naive 1024 B, 2 in place, offsets a=0 b=0 c=0
	// npu: arena 2048 B, lower bound 2048 B, naive 2048 B, 1 in place, offsets a=0 b=1024 c=1024
}
