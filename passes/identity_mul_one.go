package passes

import "github.com/irtool/irtool/ir"

// mul-one: x * 1 is x for every float x (IEEE 754 multiplication by one
// is exact, signed zeros and infinities included), so mul(x, ones) with a
// constant of ones, in either operand order, is x when the result has x's
// type. One stray mul by 1 between silu and its multiply would otherwise
// hide the swiglu pattern (TestIdentityUnblocksSwiGLU).
func mulOneRule() *Rule {
	return &Rule{Name: "mul-one", Doc: "mul(x, c) with c a constant of ones (either order) -> x: x*1 is x bit for bit",
		Pattern: Op(ir.OpMul, Any("x").Where(notState), Op(ir.OpConst).Where(splat(1))).Commutative(),
		Build:   identityBuild}
}
