package ir_test

import (
	"fmt"
	"os"

	"github.com/irtool/irtool/ir"
)

// Build a small graph: a normalised, scaled projection of a batch of
// n_tokens activations. Add infers result types from the op registry;
// AddTyped declares them (leaves, reshapes, views) and checks them.
func Example() {
	g := ir.New("tiny")
	x, _ := g.AddTyped(ir.OpInput, nil, nil, ir.T(ir.F32, 8, "n_tokens"))
	x.Name = "x"
	w, _ := g.AddTyped(ir.OpWeight, nil, nil, ir.T(ir.F16, 8, 4))
	w.Name = "proj.weight"
	h, _ := g.Add(ir.OpRMSNorm, []*ir.Node{x}, ir.Attrs{"eps": 1e-5})
	y, _ := g.Add(ir.OpMulMat, []*ir.Node{w, h}, nil)
	y, _ = g.Add(ir.OpScale, []*ir.Node{y}, ir.Attrs{"scale": 0.5})
	y.Name = "y"
	g.Outputs = []*ir.Node{y}
	if err := ir.Verify(g); err != nil {
		fmt.Println(err)
		return
	}
	ir.Print(os.Stdout, g)
	// Output:
	// graph "tiny" {
	//   %0 = input() : f32[8,n_tokens] "x"
	//   %1 = weight() : f16[8,4] "proj.weight"
	//   %2 = rms_norm(%0) {eps=1e-05} : f32[8,n_tokens]
	//   %3 = mul_mat(%1, %2) : f32[4,n_tokens]
	//   %4 = scale(%3) {scale=0.5} : f32[4,n_tokens] "y"
	//   outputs(%4)
	// }
}

// Shape inference rejects operands that do not fit, naming the op.
func ExampleGraph_Add() {
	g := ir.New("bad")
	a, _ := g.AddTyped(ir.OpInput, nil, nil, ir.T(ir.F32, 8, "n"))
	b, _ := g.AddTyped(ir.OpInput, nil, nil, ir.T(ir.F32, 6, "n"))
	_, err := g.Add(ir.OpMulMat, []*ir.Node{a, b}, nil)
	fmt.Println(err)
	// Output:
	// ir: mul_mat: inner dims differ: f32[8,n] vs f32[6,n]
}

// Specialize binds the shape symbols, including pad() rounding and
// Dim-valued attributes, and returns a static, verified copy.
func ExampleGraph_Specialize() {
	g, err := ir.ParseString(`graph "mask" {
  %0 = input() : f32[n_kv,pad(n_tokens,64)] "KQ_mask"
  %1 = state() : f16[256] "cache"
  %2 = view(%1) {nb=[2,2,2,2], offset=kv_head*2} : f16[n_tokens] "slot"
  outputs(%0, %2)
}
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(g.Symbols())
	s, err := g.Specialize(ir.Bindings{"n_kv": 32, "n_tokens": 5, "kv_head": 7})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(s)
	_, err = g.Specialize(ir.Bindings{"n_kv": 32, "n_tokens": 5})
	fmt.Println(err)
	// Output:
	// [kv_head n_kv n_tokens]
	// graph "mask" {
	//   %0 = input() : f32[32,64] "KQ_mask"
	//   %1 = state() : f16[256] "cache"
	//   %2 = view(%1) {nb=[2,2,2,2], offset=dim(14)} : f16[5] "slot"
	//   outputs(%0, %2)
	// }
	// ir: specialize %2 (view "slot") attribute offset: symbol "kv_head" is not bound
}

// Parse reads the text format back; errors name the line.
func ExampleParse() {
	_, err := ir.ParseString(`graph "g" {
  %0 = input() : f32[4,n]
  %1 = add(%0, %2) : f32[4,n]
}
`)
	fmt.Println(err)
	// Output:
	// ir: parse line 3 col 16: "%2" is not defined
}

// PrintTable gives an FX-style listing.
func ExamplePrintTable() {
	g, _ := ir.ParseString(`graph "g" {
  %0 = input() : f32[4,n] "x"
  %1 = weight() : f32[4] "w"
  %2 = mul(%0, %1) : f32[4,n] "y"
  %3 = transpose(%2) : f32[n,4] "yT"
  outputs(%3)
}
`)
	ir.PrintTable(os.Stdout, g)
	// Output:
	// id  opcode         name    target     args      attrs  type
	// 0   placeholder    x       input      ()               f32[4,n]
	// 1   get_attr       w       weight     ()               f32[4]
	// 2   call_function  y       mul        (%0, %1)         f32[4,n]
	// 3   call_view      yT      transpose  (%2)             f32[n,4]
	//     output         output  output     (%3)
}

// Two ranks' graphs whose collectives do not match: rank 1 gathers what
// rank 0 reduces.
func ExampleVerifyCollectives() {
	rank := func(op, typ string) *ir.Graph {
		g, err := ir.ParseString(`graph "rank" {
  %0 = input() : f32[8] "x"
  %1 = ` + op + `(%0) {ranks=2} : ` + typ + ` "y"
  outputs(%1)
}`)
		if err != nil {
			panic(err)
		}
		return g
	}
	fmt.Println(ir.VerifyCollectives([]*ir.Graph{rank("all_reduce", "f32[8]"), rank("all_reduce", "f32[8]")}))
	fmt.Println(ir.VerifyCollectives([]*ir.Graph{rank("all_reduce", "f32[8]"), rank("all_gather", "f32[16]")}))
	// Output:
	// <nil>
	// ir: verify collectives of 2 ranks: group tp: collective 0: rank 0 issues %1 all_reduce(f32[8]) group tp, rank 1 issues %1 all_gather(f32[8]) group tp dim 0
}
