package passes

import (
	"slices"

	"github.com/irtool/irtool/ir"
)

// introduced lists the ops the passes of this package introduce, in the
// order irtool passes lists them. Each is defined once in package ir (its
// typing, in the file of its op family) with its CPU kernel in package eval; a test checks
// that every one is registered in both.
var introduced = []ir.Op{
	ir.OpRMSNormMul,
	ir.OpAddRMSNormMul,
	ir.OpSwiGLU,
	ir.OpMulMatAdd,
	ir.OpRopeCache,
	ir.OpRopeApply,
	ir.OpRopeSetRows,
	ir.OpRopeApplySetRows,
	ir.OpAttention,
	ir.OpConcat,
	ir.OpRopeTheta,
	ir.OpRopeCacheTable,
}

// Ops returns the ops the passes introduce (the fused ops and concat).
func Ops() []ir.Op { return slices.Clone(introduced) }

func isFloat(dt ir.DType) bool { return dt == ir.F32 || dt == ir.F16 }

// dimMul returns d*k when the product is a Dim (a constant, or a plain or
// scaled symbol).
func dimMul(d ir.Dim, k int64) (ir.Dim, bool) {
	if d.IsConst() {
		return ir.C(d.Val * k), true
	}
	if d.Align > 1 {
		return ir.Dim{}, false
	}
	s := d.Scale
	if s == 0 {
		s = 1
	}
	return ir.Scaled(d.Sym, s*k), true
}
