package target_test

import (
	"fmt"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/target"
)

// Rules of its own for an op the package does not know: NPU support, cost
// and workspace, seen by the profiles of that rule set only.
func ExampleNewRules() {
	rules := target.NewRules()
	err := rules.Register(ir.OpSilu+"_approx", target.OpRule{
		NPU: func(n *ir.Node) target.Support { return target.Support{OK: true, Kernel: "aclnnSilu"} },
		Traffic: func(n *ir.Node, b ir.Bindings) (float64, float64, error) {
			size, err := n.Type.Bytes()
			return float64(size / 4), float64(2 * size), err
		},
		Workspace: target.NoWorkspace,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, _ := rules.Profile("ascend910b")
	q, _ := target.Get("ascend910b")
	fmt.Println(len(p.Ops())-len(q.Ops()), "more op claimed for the NPU")
	// Output:
	// 1 more op claimed for the NPU
}
