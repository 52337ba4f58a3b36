package planner_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/irtool/irtool/planner"
)

// firstFit is a custom offset strategy: buffers in order of their first
// step, each at the lowest offset where it overlaps no live buffer placed
// before it.
func firstFit(_ context.Context, p *planner.Problem, _ planner.Options) (*planner.Assignment, error) {
	order := make([]int, len(p.Buffers))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return p.Buffers[i].Start - p.Buffers[j].Start })
	a := &planner.Assignment{Offsets: make([]int64, len(p.Buffers))}
	var placed []int
	for _, i := range order {
		b, size := p.Buffers[i], p.AlignedSize(i)
		var off int64
		for moved := true; moved; {
			moved = false
			for _, j := range placed {
				c := p.Buffers[j]
				live := b.Start < c.End && c.Start < b.End
				if live && off < a.Offsets[j]+p.AlignedSize(j) && a.Offsets[j] < off+size {
					off, moved = a.Offsets[j]+p.AlignedSize(j), true
				}
			}
		}
		a.Offsets[i] = off
		a.Arena = max(a.Arena, off+size)
		placed = append(placed, i)
	}
	return a, nil
}

// A custom planner strategy, registered by name in a strategy set of its
// own and selected by that name like a built-in one; the result is
// validated and reported alike (the lower bound, the ratio). Registered in
// the default set (planner.DefaultStrategies), a strategy is what
// "irtool plan --strategy NAME" runs (docs/PLANNER.md, "Adding a
// strategy").
func ExampleStrategySet_Register() {
	set := planner.NewStrategySet()
	if err := set.Register("first-fit", firstFit); err != nil {
		fmt.Println(err)
		return
	}
	p, err := planner.ReadCSV(strings.NewReader(example))
	if err != nil {
		fmt.Println(err)
		return
	}
	a, rep, err := set.Solve(context.Background(), p, "first-fit", planner.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("strategy:", rep.Winner, "arena:", rep.Arena, "lower bound:", rep.LowerBound)
	fmt.Println("offsets:", a.Offsets)
	fmt.Println("names:", strings.Join(set.Names()[len(planner.Strategies()):], ", "))
	_, _, err = planner.NewStrategySet().Solve(context.Background(), p, "first-fit", planner.Options{})
	fmt.Println("another set:", err != nil)
	// Output:
	// strategy: first-fit arena: 160 lower bound: 124
	// offsets: [0 32 60 0 16 96 0 10]
	// names: first-fit
	// another set: true
}
