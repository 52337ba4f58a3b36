package ir

import (
	"fmt"
	"math"
)

// The element-wise ops: out[i] depends on the operands' element i only
// (after broadcast).
const (
	OpMul   Op = "mul"
	OpAdd   Op = "add"
	OpScale Op = "scale"
	OpSilu  Op = "silu"
	// OpGelu is ggml_gelu with ggml's CPU numerics (an F16 table of the
	// tanh approximation).
	OpGelu Op = "gelu"
	// OpDiv is a / b with b broadcast over a (ggml_div).
	OpDiv Op = "div"
	// OpSwiGLU is silu(gate) * up.
	OpSwiGLU Op = "swiglu"
)

// The attributes of the element-wise ops.
const (
	// AttrScale is the factor of scale (and the logit scale of soft_max
	// and attention): required, finite.
	AttrScale = "scale"
	// AttrBias names ggml_scale_bias's additive term; the graphs irtool
	// builds never set it, and the NPU rules of the unary ops refuse a
	// non-zero one.
	AttrBias = "bias"
)

// Scale returns attribute scale, 1 (no scaling) when absent.
func (a Attrs) Scale() float64 { return a.floatOr(AttrScale, 1) }

// Bias returns attribute bias, 0 when absent.
func (a Attrs) Bias() float64 { return a.floatOr(AttrBias, 0) }

func init() {
	MustRegister(OpInfo{Name: OpMul, Attrs: noAttrs, MinArgs: 2, Inplace: true, InplaceAny: true, ElementWise: true, Commutative: false, Infer: elementwiseBinary,
		Doc: "mul(a, b): a * b, b broadcast over a"})
	MustRegister(OpInfo{Name: OpAdd, Attrs: noAttrs, MinArgs: 2, Inplace: true, InplaceAny: true, ElementWise: true, Infer: elementwiseBinary,
		Doc: "add(a, b): a + b, b broadcast over a"})
	MustRegister(OpInfo{Name: OpScale, Attrs: []string{"scale"}, MinArgs: 1, Inplace: true, InplaceAny: true, ElementWise: true, Infer: unaryFloat,
		Check: func(n *Node) error {
			return CheckAttrRanges(n, AttrRange{Key: AttrScale, Min: -math.MaxFloat32, Max: math.MaxFloat32})
		},
		Doc: "scale(x){scale}: x * scale"})
	MustRegister(OpInfo{Name: OpSilu, Attrs: noAttrs, MinArgs: 1, Inplace: true, InplaceAny: true, ElementWise: true, Infer: unaryFloat,
		Doc: "silu(x): x * sigmoid(x)"})
	MustRegister(OpInfo{Name: OpGelu, Attrs: noAttrs, MinArgs: 1, Inplace: true, ElementWise: true, Infer: unaryFloat,
		Doc: "gelu(x): tanh-approximated GELU read from ggml's F16 table (x rounded to f16; x <= -10 gives 0, x >= 10 gives x)"})
	MustRegister(OpInfo{Name: OpDiv, Attrs: noAttrs, MinArgs: 2, Inplace: true, ElementWise: true, Infer: elementwiseBinary,
		Doc: "div(a, b): a / b, b broadcast over a"})
	MustRegister(OpInfo{Name: OpSwiGLU, Attrs: noAttrs, Fused: true, MinArgs: 2, Inplace: true, ElementWise: true,
		Doc: "swiglu(gate, up): silu(gate) * up, equal shapes (fuses silu and mul)",
		Infer: func(n *Node) (Type, error) {
			if err := wantF32(n, 0, 1); err != nil {
				return Type{}, err
			}
			if !n.Args[0].Type.Equal(n.Args[1].Type) {
				return Type{}, fmt.Errorf("gate %s and up %s differ", n.Args[0].Type, n.Args[1].Type)
			}
			return n.Args[0].Type, nil
		},
	})
}
