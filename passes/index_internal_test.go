package passes

import (
	"fmt"
	"slices"

	"github.com/irtool/irtool/ir"
)

// Every test of the package runs the rewrite driver with its index checked
// after every rewrite against one built from scratch: the incremental
// updates must leave what a rebuild would, and the graph what Compact
// would.
func init() { checkIndex = verifyIndex }

func verifyIndex(x *graphIndex, g *ir.Graph) {
	if err := indexDiff(x, g); err != nil {
		panic("passes: rewrite index: " + err.Error())
	}
}

func indexDiff(x *graphIndex, g *ir.Graph) error {
	if len(x.nodes) != len(g.Nodes) || len(g.Nodes) > 0 && &x.nodes[0] != &g.Nodes[0] {
		return fmt.Errorf("indexes %d nodes, the graph has %d", len(x.nodes), len(g.Nodes))
	}
	for i, n := range g.Nodes {
		if n.ID != i {
			return fmt.Errorf("%s %q has id %d at position %d", n.Op, n.Name, n.ID, i)
		}
	}
	fresh := indexGraph(&ir.Graph{Nodes: slices.Clone(g.Nodes), Outputs: g.Outputs}, nil)
	for i, n := range g.Nodes {
		if x.uses[i] != fresh.uses[i] || x.outs[i] != fresh.outs[i] || !slices.Equal(x.users[i], fresh.users[i]) {
			return fmt.Errorf("%s %s %q: uses %d out %v users %v, rebuilt %d %v %v", n, n.Op, n.Name,
				x.uses[i], x.outs[i], x.users[i], fresh.uses[i], fresh.outs[i], fresh.users[i])
		}
	}
	if x.live && !fresh.live {
		return fmt.Errorf("the index calls the graph live, it holds dead nodes")
	}
	return nil
}
