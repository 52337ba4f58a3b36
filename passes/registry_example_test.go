package passes_test

import (
	"fmt"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/passes"
)

// A registry of its own: a required pass registered there runs in every
// pipeline that registry parses, and in no other.
func ExampleNewRegistry() {
	r := passes.NewRegistry()
	err := r.Register(passes.Pass{Name: "legalise", Required: true, Doc: "make the graph lowerable",
		Run: func(g *ir.Graph, c *passes.Context) (bool, error) { return false, nil }})
	if err != nil {
		fmt.Println(err)
		return
	}
	mine, _ := r.Parse("cse,dce")
	theirs, _ := passes.Parse("cse,dce")
	fmt.Println(mine)
	fmt.Println(theirs)
	// Output:
	// cse,dce,legalise
	// cse,dce
}
