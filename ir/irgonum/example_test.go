package irgonum_test

import (
	"fmt"

	"gonum.org/v1/gonum/graph/topo"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/ir/irgonum"
)

// A gonum algorithm runs on the IR directly: here, which nodes the output
// of a tiny graph depends on.
func Example() {
	g, err := ir.ParseString(`graph "tiny" {
  %0 = input() : f32[4] "x"
  %1 = input() : f32[4] "y"
  %2 = silu(%0) : f32[4] "a"
  %3 = mul(%2, %0) : f32[4] "b"
  outputs(%3)
}
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	view := irgonum.New(g)
	order, err := irgonum.TopoSort(g)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("nodes in order:", len(order))
	for _, id := range []int64{0, 1, 2} {
		fmt.Printf("%s reaches the output: %v\n", g.Nodes[id].Name, topo.PathExistsIn(view, view.Node(id), view.Node(3)))
	}
	// Output:
	// nodes in order: 4
	// x reaches the output: true
	// y reaches the output: false
	// a reaches the output: true
}
