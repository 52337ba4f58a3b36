package planner_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/irtool/irtool/planner"
)

// Pisarchyk & Lee's example: eight tensors, live over [Start, End) steps.
const example = `id,lower,upper,size
0,0,2,32
1,1,5,28
2,2,6,36
3,3,6,16
4,4,6,8
5,5,8,64
6,6,9,10
7,7,9,40
`

func ExampleSolve() {
	p, err := planner.ReadCSV(strings.NewReader(example))
	if err != nil {
		panic(err)
	}
	a, rep, err := planner.Solve(context.Background(), p, planner.StrategyGreedySize, planner.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println("lower bound:", rep.LowerBound, "arena:", rep.Arena, "naive:", rep.Naive)
	fmt.Println("offsets:", a.Offsets)
	// Output:
	// lower bound: 124 arena: 124 naive: 234
	// offsets: [0 32 64 100 116 0 104 64]
}

func ExampleLowerBound() {
	p := &planner.Problem{Alignment: 32, Buffers: []planner.Buffer{
		{ID: 0, Start: 0, End: 2, Size: 100}, // 128 bytes once aligned
		{ID: 1, Start: 1, End: 3, Size: 64},
		{ID: 2, Start: 2, End: 4, Size: 10}, // starts as buffer 0 ends
	}}
	fmt.Println(planner.LowerBound(p), planner.NaiveSize(p))
	// Output: 192 224
}

// ExampleGallocr replays allocations and frees in ggml's order, as
// ggml-alloc does when it measures a graph's compute buffer.
func ExampleGallocr() {
	g := planner.NewGallocr(32)
	a, _ := g.Alloc(100) // padded to 128
	b, _ := g.Alloc(64)
	_ = g.Free(a, 100)
	c, _ := g.Alloc(64) // best fit: the freed hole at 0
	fmt.Println(a, b, c, g.MaxSize())
	// Output: 0 128 0 192
}
