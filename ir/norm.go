package ir

import "fmt"

// The normalisation ops: rms_norm and the fused forms that fold the
// weight product and the residual add into it.
const (
	OpRMSNorm Op = "rms_norm"
	// OpRMSNormMul is rms_norm(x){eps} * w.
	OpRMSNormMul Op = "rms_norm_mul"
	// OpAddRMSNormMul is the residual add and the following norm: slot 0
	// of dim 3 holds rms_norm(a+b)*w, slot 1 holds a+b.
	OpAddRMSNormMul Op = "add_rms_norm_mul"
)

// AttrEps names the epsilon of the norm ops: rms_norm, rms_norm_mul and
// add_rms_norm_mul (ggml_rms_norm's eps; required, in [0, 1]).
const AttrEps = "eps"

// Eps returns attribute eps, 0 when absent.
func (a Attrs) Eps() float64 { return a.floatOr(AttrEps, 0) }

func init() {
	MustRegister(OpInfo{Name: OpRMSNorm, Attrs: []string{"eps"}, MinArgs: 1, Inplace: true, InplaceAny: true, Infer: unaryFloat,
		Check: func(n *Node) error { return CheckAttrRanges(n, AttrRange{Key: AttrEps, Min: 0, Max: 1}) },
		Doc:   "rms_norm(x){eps}: x / sqrt(mean(x^2 over dim 0) + eps)"})
	MustRegister(OpInfo{Name: OpRMSNormMul, Attrs: []string{"eps"}, Fused: true, MinArgs: 2, Inplace: true,
		Doc: "rms_norm_mul(x, w){eps}: rms_norm(x) * w, w broadcast over x (fuses rms_norm and mul)",
		Infer: func(n *Node) (Type, error) {
			x, w := n.Args[0].Type, n.Args[1].Type
			if !isFloat(x.DType) || !isFloat(w.DType) {
				return Type{}, fmt.Errorf("operands must be f32 or f16, got %s and %s", x.DType, w.DType)
			}
			if !CanRepeat(w.Shape, x.Shape) {
				return Type{}, fmt.Errorf("cannot broadcast %s over %s", w, x)
			}
			return x, nil
		},
		Check: func(n *Node) error { return CheckAttrRanges(n, AttrRange{Key: AttrEps, Min: 0, Max: 1}) },
	})
	MustRegister(OpInfo{Name: OpAddRMSNormMul, Attrs: []string{"eps"}, Fused: true, MinArgs: 3,
		Doc: "add_rms_norm_mul(a, b, w){eps}: f32[a0,a1,a2,2]; slot 0 of dim 3 is rms_norm(a+b)*w, slot 1 is a+b (fuses the residual add, rms_norm and mul; views pick the slots)",
		Infer: func(n *Node) (Type, error) {
			if err := wantF32(n, 0, 1, 2); err != nil {
				return Type{}, err
			}
			a, b, w := n.Args[0].Type.Shape, n.Args[1].Type.Shape, n.Args[2].Type.Shape
			if !a[3].IsConst() || a[3].Val != 1 {
				return Type{}, fmt.Errorf("operand 0 %s must have dim 3 = 1", n.Args[0].Type)
			}
			if !CanRepeat(b, a) || !CanRepeat(w, a) {
				return Type{}, fmt.Errorf("cannot broadcast %s and %s over %s", n.Args[1].Type, n.Args[2].Type, n.Args[0].Type)
			}
			return Type{DType: F32, Shape: Shape{a[0], a[1], a[2], C(2)}}, nil
		},
		Check: func(n *Node) error { return CheckAttrRanges(n, AttrRange{Key: AttrEps, Min: 0, Max: 1}) },
	})
}
