package eval_test

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/ir"
)

func f32Bytes(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// The executor runs any static graph, core and fused ops alike, with the
// CPU kernels of the table: here swiglu(gate, up) = silu(gate) * up, a
// fused op defined in package ir with no import of package passes.
func ExampleExecutor() {
	g := ir.New("swiglu")
	gate, _ := g.AddTyped(ir.OpInput, nil, nil, ir.T(ir.F32, 4))
	gate.Name = "gate"
	up, _ := g.AddTyped(ir.OpInput, nil, nil, ir.T(ir.F32, 4))
	up.Name = "up"
	y, err := g.Add(ir.OpSwiGLU, []*ir.Node{gate, up}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	g.Outputs = []*ir.Node{y}
	ex, err := eval.NewExecutor(g, nil, eval.ExecOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ex.SetInput("gate", f32Bytes(0, 1, -1, 2))
	ex.SetInput("up", f32Bytes(1, 1, 1, 0.5))
	if err := ex.Run(); err != nil {
		fmt.Println(err)
		return
	}
	v, _, _ := ex.Output(0)
	fmt.Printf("%.4f\n", v)
	// Output:
	// [0.0000 0.7311 -0.2689 0.8808]
}
