package passes_test

import (
	"fmt"
	"math"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/passes"
)

// A library user adds a rewrite rule without touching the engine: two
// scales by powers of two become one (the product of powers of two is
// exact, so the result is the same bits unless it overflows or goes
// subnormal). The rule runs as its own pass, after the default pipeline.
func Example() {
	g, err := ir.ParseString(`graph "user" {
  %0 = input() : f32[8,2] "x"
  %1 = scale(%0) {scale=0.5} : f32[8,2] "half"
  %2 = scale(%1) {scale=4.0} : f32[8,2] "twice"
  %3 = scale(%2) {scale=0.3} : f32[8,2] "not_pow2"
  outputs(%3)
}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	pow2 := func(n *ir.Node) bool {
		s, _ := n.Attrs.Float("scale")
		frac, _ := math.Frexp(s)
		return frac == 0.5
	}
	rule := &passes.Rule{
		Name:    "scale-scale",
		Doc:     "scale(scale(x){a}){b} -> scale(x){a*b} for powers of two a, b",
		Pattern: passes.Op(ir.OpScale, passes.Op(ir.OpScale, passes.Any("x")).As("inner").OneUse().Where(pow2)).Where(pow2),
		Build: func(b *passes.Builder, m *passes.Match) (*ir.Node, error) {
			a, _ := m.Get("inner").Attrs.Float("scale")
			c, _ := m.Root.Attrs.Float("scale")
			return b.Op(ir.OpScale, ir.Attrs{"scale": a * c}, m.Get("x"))
		},
	}
	pipeline := append(passes.Default(), passes.RulePass("scale-scale", rule.Doc, rule))
	out, res, err := passes.Run(g, pipeline, passes.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	last := res.Passes[len(res.Passes)-1]
	fmt.Println(last.Name, last.Changed, last.RuleHits)
	fmt.Print(out)
	// Output:
	// scale-scale true map[scale-scale:1]
	// graph "user" {
	//   %0 = input() : f32[8,2] "x"
	//   %1 = scale(%0) {scale=2.0} : f32[8,2] "twice"
	//   %2 = scale(%1) {scale=0.3} : f32[8,2] "not_pow2"
	//   outputs(%2)
	// }
}

// ExampleParse shows pipelines as data: parsed from text, checked against
// the ordering constraints, printed back.
func ExampleParse() {
	p, err := passes.Parse("noop,rope-cache,cse,dce")
	fmt.Println(p, err)
	_, err = passes.Parse("cse,rope-cache")
	fmt.Println(err)
	// Output:
	// noop,rope-cache,cse,dce <nil>
	// passes: pipeline cse,rope-cache: rope-cache must run before cse: CSE shares the rope_cache tables of the layers
}
