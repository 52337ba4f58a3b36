package target

import "github.com/irtool/irtool/ir"

// The rules of the normalisation ops (ir/norm.go).
func init() {
	mustRule(ir.OpRMSNorm, OpRule{NPU: npuRMSNorm, Traffic: streamTraffic(5), Workspace: rstdWorkspace})
	mustRule(ir.OpRMSNormMul, OpRule{NPU: npuRMSNormMul, Traffic: streamTraffic(5), Workspace: rstdWorkspace})
	mustRule(ir.OpAddRMSNormMul, OpRule{NPU: npuAddRMSNormMul, Traffic: streamTraffic(5), Workspace: rstdWorkspace})
}

func npuRMSNorm(n *ir.Node) Support {
	if dt := n.Args[0].Type.DType; dt != ir.F32 {
		return no("rms_norm of %s: the gamma table of ones runtime/acl passes aclnnRmsNorm is f32, so x must be", dt)
	}
	// gamma is a table of ones built at load time (llama.cpp PR #20747).
	return yes("aclnnRmsNorm")
}

// aclnnRmsNorm with the weight as gamma.
func npuRMSNormMul(n *ir.Node) Support {
	x, w := n.Args[0].Type, n.Args[1].Type
	if !isFloat(x.DType) || !isFloat(w.DType) {
		return no("rms_norm_mul of %s by %s", x.DType, w.DType)
	}
	if !gammaRow(x, w) {
		return no("rms_norm_mul weight %s is not one row of %s: aclnnRmsNorm takes gamma = x_shape[n:]", w, x)
	}
	return yes("aclnnRmsNorm")
}

// aclnnAddRmsNorm: the residual add and the norm in one operator
// (ggml-cann's optional ADD+RMS_NORM fusion; same shapes, no
// broadcast; ggml-cann's supports_op and compute_forward).
func npuAddRMSNormMul(n *ir.Node) Support {
	a, b, w := n.Args[0].Type, n.Args[1].Type, n.Args[2].Type
	if !a.Shape.Equal(b.Shape) {
		return no("add_rms_norm_mul of %s and %s: aclnnAddRmsNorm needs equal shapes", a, b)
	}
	if !gammaRow(a, w) {
		return no("add_rms_norm_mul weight %s is not one row of %s", w, a)
	}
	return yes("aclnnAddRmsNorm")
}

// gammaRow reports whether w is a 1-D table as long as x's rows, the only
// gamma shape aclnnRmsNorm and aclnnAddRmsNorm take (gamma_shape =
// x_shape[n:], CANN aclnnRmsNorm reference).
func gammaRow(x, w ir.Type) bool {
	one := func(d ir.Dim) bool { return d.IsConst() && d.Val == 1 }
	return w.Shape[0].Equal(x.Shape[0]) && one(w.Shape[1]) && one(w.Shape[2]) && one(w.Shape[3])
}

// rstdWorkspace: aclnnRmsNorm's rstd output, one f32 per row of the
// normalised input.
func rstdWorkspace(n *ir.Node, _ Support) int64 {
	x := n.Args[0].Type
	ne, err := x.Shape.Ne()
	if err == nil && ne[0] > 0 {
		return 4 * elems(x) / ne[0]
	}
	return 0
}
