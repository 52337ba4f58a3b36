package ir

import "fmt"

// The mixture-of-experts ops (llama.cpp's build_moe_ffn): the router's
// top-k choice, the renormalising row sum and the expert product.
const (
	// OpSumRows sums each row (dim 0) of x (ggml_sum_rows).
	OpSumRows Op = "sum_rows"
	// OpTopK gives the indices of the k largest values of each row, in
	// descending order of value (ggml_argsort_top_k).
	OpTopK Op = "top_k"
	// OpMulMatID is ggml_mul_mat_id: per token and slot, the product of
	// the expert matrix the index picks with the token's activation row.
	OpMulMatID Op = "mul_mat_id"
)

// AttrK is top_k's k: the number of indices kept per row (required,
// positive, at most the row length).
const AttrK = "k"

// K returns attribute k, 0 when absent.
func (a Attrs) K() int64 { return a.intOr(AttrK, 0) }

func init() {
	MustRegister(OpInfo{Name: OpSumRows, Attrs: noAttrs, MinArgs: 1, Doc: "sum_rows(x): f32[1, x.ne1, x.ne2, x.ne3], the sum of each row (accumulated in double, as ggml)",
		Infer: func(n *Node) (Type, error) {
			if err := floatArg(n, 0); err != nil {
				return Type{}, err
			}
			s := n.Args[0].Type.Shape
			return Type{DType: F32, Shape: Shape{C(1), s[1], s[2], s[3]}}, nil
		}})
	MustRegister(OpInfo{Name: OpTopK, Attrs: []string{"k"}, MinArgs: 1, Doc: "top_k(x){k}: i32[k, x.ne1, x.ne2, x.ne3], the indices of the k largest values of each row, largest first (lower index first on ties)",
		Infer: func(n *Node) (Type, error) {
			if err := floatArg(n, 0); err != nil {
				return Type{}, err
			}
			k, ok := n.Attrs.Int(AttrK)
			if !ok || k < 1 {
				return Type{}, fmt.Errorf("needs a positive attribute k")
			}
			s := n.Args[0].Type.Shape
			if s[0].IsConst() && k > s[0].Val {
				return Type{}, fmt.Errorf("k %d exceeds the row length %s", k, s[0])
			}
			return Type{DType: I32, Shape: Shape{C(k), s[1], s[2], s[3]}}, nil
		}})
	MustRegister(OpInfo{Name: OpMulMatID, Attrs: noAttrs, MinArgs: 3, Doc: "mul_mat_id(as, b, ids): as [k, n, n_expert], b f32[k, 1 or n_used, n_tokens], ids i32[n_used, n_tokens]; out[:, e, t] = as[:, :, ids[e,t]] · b[:, e % b.ne1, t], f32[n, n_used, n_tokens]",
		Infer: func(n *Node) (Type, error) {
			as, b, ids := n.Args[0].Type, n.Args[1].Type, n.Args[2].Type
			if b.DType != F32 {
				return Type{}, fmt.Errorf("operand 1 must be f32, got %s", b.DType)
			}
			if ids.DType != I32 {
				return Type{}, fmt.Errorf("ids must be i32, got %s", ids.DType)
			}
			one := func(d Dim) bool { return d.IsConst() && d.Val == 1 }
			if !one(as.Shape[3]) || !one(b.Shape[3]) || !one(ids.Shape[2]) || !one(ids.Shape[3]) {
				return Type{}, fmt.Errorf("4-D operands are not supported: %s, %s, %s", as, b, ids)
			}
			if !as.Shape[0].Equal(b.Shape[0]) {
				return Type{}, fmt.Errorf("inner dims differ: %s vs %s", as, b)
			}
			if !b.Shape[2].Equal(ids.Shape[1]) {
				return Type{}, fmt.Errorf("tokens differ: b %s, ids %s", b, ids)
			}
			if !one(b.Shape[1]) && !b.Shape[1].Equal(ids.Shape[0]) {
				return Type{}, fmt.Errorf("dim 1 of b %s is neither 1 nor the %s chosen experts", b, ids.Shape[0])
			}
			return Type{DType: F32, Shape: Shape{as.Shape[1], ids.Shape[0], ids.Shape[1], C(1)}}, nil
		}})
}
