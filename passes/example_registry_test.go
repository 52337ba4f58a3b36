package passes_test

import (
	"fmt"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/passes"
)

// A custom pass, written as a plain function and registered by name in a
// registry of its own: pipelines of that registry name it like a built-in
// pass ("default,drop-scale-one"); the package's default registry, and
// so every other experiment, does not see it.
func ExampleRegistry_Register() {
	reg := passes.NewRegistry()
	err := reg.Register(passes.Pass{
		Name: "drop-scale-one",
		Doc:  "scale(x){scale=1} -> x",
		Run: func(g *ir.Graph, c *passes.Context) (bool, error) {
			changed := false
			for _, n := range g.Nodes {
				if s, ok := n.Attrs.Float("scale"); n.Op == ir.OpScale && ok && s == 1 {
					g.ReplaceUses(n, n.Args[0])
					c.Count("dropped", 1)
					changed = true
				}
			}
			if changed {
				g.Compact()
			}
			return changed, nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	g, err := ir.ParseString(`graph "g" {
  %0 = input() : f32[8] "x"
  %1 = scale(%0) {scale=1.0} : f32[8] "same"
  %2 = silu(%1) : f32[8] "act"
  outputs(%2)
}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := reg.Parse("drop-scale-one")
	if err != nil {
		fmt.Println(err)
		return
	}
	out, res, err := passes.Run(g, p, passes.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Passes[0].Name, res.Passes[0].Changed, res.Passes[0].Stats)
	fmt.Print(out)
	_, err = passes.Parse("drop-scale-one")
	fmt.Println("default registry:", err != nil)
	// Output:
	// drop-scale-one true map[dropped:1]
	// graph "g" {
	//   %0 = input() : f32[8] "x"
	//   %1 = silu(%0) : f32[8] "act"
	//   outputs(%1)
	// }
	// default registry: true
}
