package planner_test

import (
	"context"
	"fmt"

	"github.com/irtool/irtool/planner"
)

// A custom offset strategy in a set of its own: Solve validates its
// assignment and reports it like a built-in one.
func ExampleStrategySet() {
	set := planner.NewStrategySet()
	// "stack" gives every buffer its own range, in problem order.
	err := set.Register("stack", func(_ context.Context, p *planner.Problem, _ planner.Options) (*planner.Assignment, error) {
		a := &planner.Assignment{}
		for _, b := range p.Buffers {
			a.Offsets = append(a.Offsets, a.Arena)
			a.Arena += b.Size
		}
		return a, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	p := &planner.Problem{Buffers: []planner.Buffer{
		{ID: 0, Start: 0, End: 2, Size: 64},
		{ID: 1, Start: 1, End: 3, Size: 32},
		{ID: 2, Start: 2, End: 4, Size: 64},
	}}
	_, rep, err := set.Solve(context.Background(), p, "stack", planner.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: arena %d, lower bound %d\n", rep.Winner, rep.Arena, rep.LowerBound)
	_, _, err = planner.Solve(context.Background(), p, "stack", planner.Options{})
	fmt.Println(err != nil)
	// Output:
	// stack: arena 160, lower bound 96
	// true
}
