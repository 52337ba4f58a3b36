package passes

import "github.com/irtool/irtool/ir"

// div-one: x / 1 is x for every float x (IEEE 754 division by one is
// exact). Only the divisor: 1 / x is not x.
func divOneRule() *Rule {
	return &Rule{Name: "div-one", Doc: "div(x, c) with c a constant of ones -> x: x/1 is x bit for bit",
		Pattern: Op(ir.OpDiv, Any("x").Where(notState), Op(ir.OpConst).Where(splat(1))),
		Build:   identityBuild}
}
