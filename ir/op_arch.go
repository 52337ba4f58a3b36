package ir

import "fmt"

// Ops of the newer architectures (docs/MODELS.md): GELU for gemma3's
// GEGLU, the sliding-window mask, and the mixture-of-experts routing and
// expert product of qwen3moe. Semantics are ggml's; their CPU kernels are
// in package eval, their per-target rules in package target.
const (
	// OpGelu is ggml_gelu with ggml's CPU numerics (an F16 table of the
	// tanh approximation).
	OpGelu Op = "gelu"
	// OpDiv is a / b with b broadcast over a (ggml_div).
	OpDiv Op = "div"
	// OpSumRows sums each row (dim 0) of x (ggml_sum_rows).
	OpSumRows Op = "sum_rows"
	// OpTopK gives the indices of the k largest values of each row, in
	// descending order of value (ggml_argsort_top_k).
	OpTopK Op = "top_k"
	// OpMulMatID is ggml_mul_mat_id: per token and slot, the product of
	// the expert matrix the index picks with the token's activation row.
	OpMulMatID Op = "mul_mat_id"
	// OpSWAMask hides the KV cells outside a sliding window in an
	// attention mask (llama.cpp's LLAMA_SWA_TYPE_STANDARD).
	OpSWAMask Op = "swa_mask"
)

func init() {
	MustRegister(OpInfo{Name: OpGelu, Attrs: noAttrs, MinArgs: 1, Inplace: true, ElementWise: true, Infer: unaryFloat,
		Doc: "gelu(x): tanh-approximated GELU read from ggml's F16 table (x rounded to f16; x <= -10 gives 0, x >= 10 gives x)"})
	MustRegister(OpInfo{Name: OpDiv, Attrs: noAttrs, MinArgs: 2, Inplace: true, ElementWise: true, Infer: elementwiseBinary,
		Doc: "div(a, b): a / b, b broadcast over a"})
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
			k, ok := n.Attrs.Int("k")
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
	MustRegister(OpInfo{Name: OpSWAMask, Attrs: []string{"window"}, MinArgs: 2, Doc: "swa_mask(mask, pos){window}: mask with -inf where token r (at position pos[r]) and KV cell c (holding position c) are window or more apart",
		Infer: func(n *Node) (Type, error) {
			m, p := n.Args[0].Type, n.Args[1].Type
			if m.DType != F32 {
				return Type{}, fmt.Errorf("mask must be f32, got %s", m.DType)
			}
			if p.DType != I32 {
				return Type{}, fmt.Errorf("positions must be i32, got %s", p.DType)
			}
			if w, ok := n.Attrs.Int("window"); !ok || w < 1 {
				return Type{}, fmt.Errorf("needs a positive attribute window")
			}
			return m, nil
		}})
}
