package ir

import "fmt"

// The matrix products: mul_mat and the fused bias add (mul_mat_id, the
// expert product, is in moe.go).
const (
	OpMulMat Op = "mul_mat"
	// OpMulMatAdd is mul_mat(a, b) + bias.
	OpMulMatAdd Op = "mul_mat_add"
)

func init() {
	MustRegister(OpInfo{Name: OpMulMat, Attrs: noAttrs, MinArgs: 2, Doc: "mul_mat(a, b): out[i1][i0] = dot(a row i0, b row i1), a broadcast over dims 2,3; result f32[a.ne1, b.ne1, b.ne2, b.ne3]",
		Infer: func(n *Node) (Type, error) {
			a, b := n.Args[0].Type, n.Args[1].Type
			if !a.Shape[0].Equal(b.Shape[0]) {
				return Type{}, fmt.Errorf("inner dims differ: %s vs %s", a, b)
			}
			if b.DType != F32 {
				return Type{}, fmt.Errorf("operand 1 must be f32, got %s", b.DType)
			}
			for _, i := range []int{2, 3} {
				if !a.Shape[i].Equal(b.Shape[i]) && !CanRepeat(Shape{C(1), C(1), a.Shape[i], C(1)}, Shape{C(1), C(1), b.Shape[i], C(1)}) {
					return Type{}, fmt.Errorf("dim %d of %s does not broadcast to %s", i, a, b)
				}
			}
			return Type{DType: F32, Shape: Shape{a.Shape[1], b.Shape[1], b.Shape[2], b.Shape[3]}}, nil
		}})
	MustRegister(OpInfo{Name: OpMulMatAdd, Attrs: noAttrs, Fused: true, MinArgs: 3,
		Doc: "mul_mat_add(a, b, bias): mul_mat(a, b) + bias, bias broadcast over the product (fuses mul_mat and add)",
		Infer: func(n *Node) (Type, error) {
			mm, _ := Lookup(OpMulMat)
			t, err := mm.Infer(&Node{Op: OpMulMat, Args: n.Args[:2]})
			if err != nil {
				return Type{}, err
			}
			bias := n.Args[2].Type
			if !isFloat(bias.DType) {
				return Type{}, fmt.Errorf("bias must be f32 or f16, got %s", bias.DType)
			}
			if !CanRepeat(bias.Shape, t.Shape) {
				return Type{}, fmt.Errorf("cannot broadcast bias %s over %s", bias, t)
			}
			return t, nil
		},
	})
}
