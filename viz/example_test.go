package viz_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/viz"
)

// Draw a two-node graph as DOT. Pipe the text into Graphviz (dot -Tsvg), or
// call viz.RenderSVG, to get a picture. Node n1 draws IR node %1.
func ExampleGraphDOT() {
	g, err := ir.ParseString(`graph "tiny" {
  %0 = input() : f32[64,n_tokens] "x"
  %1 = rms_norm(%0) {eps=1e-05} : f32[64,n_tokens] "norm-0" layer=0
  outputs(%1)
}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	d, err := viz.GraphDOT(g, viz.GraphOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(d.String(), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			fmt.Println(line)
		}
	}
	// Output:
	// digraph {
	// graph [label="tiny", labelloc="t", fontname="Helvetica", fontsize="16", rankdir="TB", nodesep="0.25", ranksep="0.35", newrank="true"];
	// node [shape="box", fontname="Helvetica", fontsize="10", color="#1f2937", fontcolor="#1f2937"];
	// edge [fontname="Helvetica", fontsize="8", color="#6b7280", fontcolor="#6b7280", arrowsize="0.6"];
	// subgraph cluster_layer_0 {
	// graph [label="layer 0", fontname="Helvetica", fontsize="11", labeljust="l", style="rounded", color="#9ca3af"];
	// n1 [label="%1 rms_norm\nf32[64,n_tokens]\nnorm-0", style="rounded", tooltip="eps=1e-05", peripheries="2", group="main"];
	// }
	// n0 [label="%0 input\nf32[64,n_tokens]\nx", style="filled", fillcolor="#dbeafe"];
	// n0 -> n1 [label="256·n_tokens B"];
	// }
}

// Plan a small memory-planning instance and chart it: x is the execution
// step, y the arena offset, with a line at the lower bound.
func ExampleChartFromProblem() {
	p := &planner.Problem{Buffers: []planner.Buffer{
		{ID: 0, Start: 0, End: 2, Size: 1024},
		{ID: 1, Start: 1, End: 3, Size: 2048},
		{ID: 2, Start: 2, End: 4, Size: 1024},
	}}
	a, _, err := planner.Solve(context.Background(), p, planner.StrategyGreedySize, planner.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := viz.ChartFromProblem(p, a)
	if err != nil {
		fmt.Println(err)
		return
	}
	c.Title = "three buffers"
	f, err := os.CreateTemp("", "liveness-*.svg")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := c.WriteSVG(f); err != nil {
		fmt.Println(err)
		return
	}
	for _, b := range c.Buffers {
		fmt.Printf("%s: steps [%d,%d), bytes [%d,%d)\n", b.Label, b.Start, b.End, b.Offset, b.Offset+b.Size)
	}
	fmt.Println("arena", c.Arena, "lower bound", c.LowerBound)
	// Output:
	// buffer 0: steps [0,2), bytes [2048,3072)
	// buffer 1: steps [1,3), bytes [0,2048)
	// buffer 2: steps [2,4), bytes [2048,3072)
	// arena 3072 lower bound 3072
}
