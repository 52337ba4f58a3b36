package target

import "github.com/irtool/irtool/ir"

// The rules of the element-wise ops (ir/elementwise.go).
func init() {
	mustRule(ir.OpAdd, OpRule{NPU: binary("aclnnAdd"), Traffic: streamTraffic(1), Workspace: NoWorkspace})
	mustRule(ir.OpMul, OpRule{NPU: binary("aclnnMul"), Traffic: streamTraffic(1), Workspace: NoWorkspace})
	mustRule(ir.OpScale, OpRule{NPU: unary("aclnnMuls"), Traffic: streamTraffic(1), Workspace: NoWorkspace})
	mustRule(ir.OpSilu, OpRule{NPU: unary("aclnnSilu"), Traffic: streamTraffic(1), Workspace: NoWorkspace})
	mustRule(ir.OpGelu, OpRule{NPU: npuGelu, Traffic: streamTraffic(1), Workspace: geluWorkspace})
	mustRule(ir.OpDiv, OpRule{NPU: binary("aclnnDiv"), Traffic: streamTraffic(1), Workspace: NoWorkspace})
	mustRule(ir.OpSwiGLU, OpRule{NPU: npuSwiGLU, Traffic: streamTraffic(1), Workspace: NoWorkspace})
}

func binary(kernel string) rule {
	return func(n *ir.Node) Support {
		for _, a := range n.Args {
			if !isFloat(a.Type.DType) {
				return no("%s of %s", n.Op, a.Type.DType)
			}
		}
		return yes(kernel)
	}
}

func unary(kernel string) rule {
	return func(n *ir.Node) Support {
		if dt := n.Args[0].Type.DType; !isFloat(dt) {
			return no("%s of %s", n.Op, dt)
		}
		if b := n.Attrs.Bias(); b != 0 {
			return no("%s with a bias: the CANN backend supports bias 0 only", n.Op)
		}
		return yes(kernel)
	}
}

// gelu: x cast to f16, aclnnGelu on f16, the f16 result cast back: the
// device then computes what ggml-cpu's F16 GELU table holds.
func npuGelu(n *ir.Node) Support {
	if x, y := n.Args[0].Type.DType, n.Type.DType; x != ir.F32 || y != ir.F32 {
		return no("gelu of %s into %s: the recipe stages f32 through f16", x, y)
	}
	return yes("aclnnGelu", "aclnnCast", "aclnnGelu", "aclnnCast")
}

// geluWorkspace: the f16 input and the f16 result.
func geluWorkspace(n *ir.Node, _ Support) int64 { return 2 * align32(2*elems(n.Type)) }

// ggml-cann's SwiGlu operator takes one tensor split in halves; with
// gate and up apart it falls back to Silu and an in-place Mul
// (ggml-cann's supports_op and compute_forward, GLU).
func npuSwiGLU(n *ir.Node) Support {
	return yes("aclnnSilu", "aclnnSilu", "aclnnInplaceMul")
}
