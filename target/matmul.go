package target

import "github.com/irtool/irtool/ir"

// The rules of the matrix products (ir/matmul.go).
func init() {
	mustRule(ir.OpMulMat, OpRule{NPU: mulMat, Traffic: matmulTraffic, Workspace: matmulWorkspace})
	mustRule(ir.OpMulMatAdd, OpRule{NPU: npuMulMatAdd, Traffic: matmulTraffic, Workspace: matmulWorkspace})
}

// MatmulKernel names the aclnn matmul ggml-cann picks by operand rank:
// aclnnMm for 2-D, aclnnBatchMatMul for 3-D with equal batches, and
// aclnnMatmul, which broadcasts, for 4-D or for the repeated batches of
// grouped-query attention (ggml-cann's supports_op and compute_forward). A symbolic outer dim counts as more
// than one.
func MatmulKernel(a, b ir.Shape) string {
	one := func(d ir.Dim) bool { return d.IsConst() && d.Val == 1 }
	switch {
	case one(a[2]) && one(a[3]) && one(b[2]) && one(b[3]):
		return "aclnnMm"
	case one(a[3]) && one(b[3]) && a[2].Equal(b[2]):
		return "aclnnBatchMatMul"
	}
	return "aclnnMatmul"
}

func mulMat(n *ir.Node) Support {
	a, b := n.Args[0], n.Args[1]
	switch dt := a.Type.DType; dt {
	case ir.F32, ir.F16:
		k := MatmulKernel(a.Type.Shape, b.Type.Shape)
		if dt == ir.F16 && b.Type.DType == ir.F32 {
			// The activations cast to f16 first, as ggml-cpu converts them
			// to its vec_dot_type (runtime/acl's mul_mat recipe).
			return yes(k, "aclnnCast", k)
		}
		return yes(k)
	default:
		if _, why := wqRows(a); why != "" {
			return no("mul_mat: %s", why)
		}
		if !Contiguous(a) || !Contiguous(b) {
			return no("quantised matmul needs contiguous operands (ggml-cann's supports_op and compute_forward)")
		}
		// Input cast to f16, weight-quant matmul on the weight converted
		// at load (gguf/wqconv; one call per WQBMMMaxDim output columns),
		// output cast back to f32.
		return yes("aclnnWeightQuantBatchMatmulV2", wqbmmCalls(a)...)
	}
}

// The matmul ggml-cann would pick, then the bias added in place into its
// output (aclnnInplaceAdd, as runtime/acl's recipe does).
func npuMulMatAdd(n *ir.Node) Support {
	s := mulMat(n)
	if !s.OK {
		return s
	}
	if len(s.Calls) == 0 {
		s.Calls = []string{s.Kernel}
	}
	s.Calls = append(append([]string(nil), s.Calls...), "aclnnInplaceAdd")
	return s
}

// matmulTraffic: 2·k·m FLOPs per column of b (mul_mat, mul_mat_add).
func matmulTraffic(n *ir.Node, b ir.Bindings) (float64, float64, error) {
	in, out, _, err := ioBytes(n, b)
	if err != nil {
		return 0, 0, err
	}
	sa, err := n.Args[0].Type.Shape.Eval(b)
	if err != nil {
		return 0, 0, err
	}
	sb, err := n.Args[1].Type.Shape.Eval(b)
	if err != nil {
		return 0, 0, err
	}
	k := float64(sa[0].Val)
	m := float64(sa[1].Val)
	cols := float64(sb[1].Val * sb[2].Val * sb[3].Val)
	return 2 * k * m * cols, in + out, nil
}

// matmulWorkspace: the f16 staging of a weight-quant matmul's input and
// output; the f16 copy of the f32 activations an f16 weight multiplies.
func matmulWorkspace(n *ir.Node, s Support) int64 {
	if s.Kernel == "aclnnWeightQuantBatchMatmulV2" {
		a := n.Args[0].Type
		return 2*elems(n.Args[1].Type) + 2*elems(n.Type) +
			HighBitsScratch(a.DType, constOr1(a.Shape[0]), constOr1(a.Shape[1]), elems(n.Type)/max(constOr1(a.Shape[1]), 1))
	}
	if n.Args[0].Type.DType == ir.F16 && n.Args[1].Type.DType == ir.F32 {
		return align32(2*elems(n.Args[1].Type)) + 32
	}
	return 0
}
