package passes_test

import (
	"fmt"
	"log"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/passes"
)

// An instrument that records how many ops each pass removed, and refuses
// a pass that grows the graph past a limit.
func Example_instrument() {
	g, err := ir.ParseString(`graph "tiny" {
  %0 = input() : f32[8,2] "x"
  %1 = scale(%0) {scale=1.0} : f32[8,2] "one"
  %2 = silu(%1) : f32[8,2] "y"
  outputs(%2)
}`)
	if err != nil {
		log.Fatal(err)
	}

	removed := map[string]int{}
	limit := passes.Instrument{Name: "op-budget",
		After: func(p passes.Pass, _ int, g *ir.Graph, st passes.PassStat) error {
			removed[p.Name] = st.NodesBefore - st.NodesAfter
			if st.NodesAfter > 100 {
				return fmt.Errorf("%d ops", st.NodesAfter)
			}
			return nil
		}}
	p, err := passes.Parse("noop,dce")
	if err != nil {
		log.Fatal(err)
	}
	out, _, err := passes.Run(g, p, passes.Options{Instruments: []passes.Instrument{limit}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.NumOps(), "ops; removed by noop:", removed["noop"], "by dce:", removed["dce"])
	// Output: 1 ops; removed by noop: 1 by dce: 0
}
