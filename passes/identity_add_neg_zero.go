package passes

import (
	"math"

	"github.com/irtool/irtool/ir"
)

// add-neg-zero: x + (-0) is x for every float x in round-to-nearest (the
// sum of -0 and -0 is -0, and x + (-0) = x otherwise), so add(x, c) with
// a constant of negative zeros, in either order, is x. Adding +0 is not
// folded: -0 + (+0) is +0 in IEEE 754 round-to-nearest, so add(x, zeros)
// would turn a -0 of x into +0, and the pass keeps every bit.
func addNegZeroRule() *Rule {
	return &Rule{Name: "add-neg-zero", Doc: "add(x, c) with c a constant of -0 (either order) -> x: x + (-0) is x bit for bit (x + (+0) is not: -0 + +0 = +0, so it stays)",
		Pattern: Op(ir.OpAdd, Any("x").Where(notState), Op(ir.OpConst).Where(splat(float32(math.Copysign(0, -1))))).Commutative(),
		Build:   identityBuild}
}
