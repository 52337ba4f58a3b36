package ir

import (
	"fmt"
	"math"
)

// The attention ops: the masked softmax, the sliding-window mask and the
// fused attention.
const (
	OpSoftMax Op = "soft_max"
	// OpAttention is kq = mul_mat(k, q), soft_max, mul_mat(v, kq), permute
	// and cont in one op.
	OpAttention Op = "attention"
	// OpSWAMask hides the KV cells outside a sliding window in an
	// attention mask (llama.cpp's LLAMA_SWA_TYPE_STANDARD).
	OpSWAMask Op = "swa_mask"
)

// The attributes of the attention ops (the logit scale is AttrScale).
const (
	// AttrMaxBias is soft_max's and attention's ALiBi max_bias (0: none).
	AttrMaxBias = "max_bias"
	// AttrWindow is swa_mask's window: a KV cell window or more positions
	// behind a token is hidden (required, positive).
	AttrWindow = "window"
)

// MaxBias returns attribute max_bias, 0 (no ALiBi) when absent.
func (a Attrs) MaxBias() float64 { return a.floatOr(AttrMaxBias, 0) }

// Window returns attribute window, 0 when absent.
func (a Attrs) Window() int64 { return a.intOr(AttrWindow, 0) }

func init() {
	MustRegister(OpInfo{Name: OpSoftMax, Attrs: []string{"scale", "max_bias"}, MinArgs: 1, MaxArgs: 2, Inplace: true, InplaceAny: true, Infer: unaryFloat,
		Doc: "soft_max(x, mask?){scale, max_bias}: softmax over dim 0 of x*scale + mask",
		Check: func(n *Node) error {
			if err := CheckAttrRanges(n, AttrRange{Key: AttrScale, Min: -math.MaxFloat32, Max: math.MaxFloat32},
				AttrRange{Key: AttrMaxBias, Min: 0, Max: math.MaxFloat32, Optional: true}); err != nil {
				return err
			}
			if len(n.Args) == 2 {
				x, m := n.Args[0].Type.Shape, n.Args[1].Type.Shape
				if !x[0].Equal(m[0]) {
					return fmt.Errorf("mask rows of %s for rows of %s", m[0], x[0])
				}
			}
			return nil
		}})
	MustRegister(OpInfo{Name: OpAttention, Attrs: []string{"scale", "max_bias"}, Fused: true, MinArgs: 3, MaxArgs: 4,
		Doc: "attention(q, k, v, mask?){scale, max_bias}: f32[hd_v*n_head, n_tokens, ne3]; softmax(k·q*scale + mask)·v per head, permuted and made contiguous (fuses mul_mat, soft_max, mul_mat, permute and cont)",
		Infer: func(n *Node) (Type, error) {
			q, k, v := n.Args[0].Type, n.Args[1].Type, n.Args[2].Type
			for i, t := range []Type{q, k, v} {
				if !isFloat(t.DType) {
					return Type{}, fmt.Errorf("operand %d must be f32 or f16, got %s", i, t.DType)
				}
			}
			if !k.Shape[0].Equal(q.Shape[0]) || !v.Shape[0].Equal(k.Shape[1]) || !v.Shape[2].Equal(k.Shape[2]) {
				return Type{}, fmt.Errorf("q %s, k %s, v %s do not fit [hd,T,H], [hd,n_kv,H_kv], [n_kv,hd_v,H_kv]", q, k, v)
			}
			dv, h := v.Shape[1], q.Shape[2]
			if !dv.IsConst() || !h.IsConst() {
				return Type{}, fmt.Errorf("head dims of v %s and heads of q %s must be static", v, q)
			}
			return Type{DType: F32, Shape: Shape{C(dv.Val * h.Val), q.Shape[1], q.Shape[3], C(1)}}, nil
		},
		Check: func(n *Node) error {
			return CheckAttrRanges(n, AttrRange{Key: AttrScale, Min: -math.MaxFloat32, Max: math.MaxFloat32})
		},
	})
	MustRegister(OpInfo{Name: OpSWAMask, Attrs: []string{"window"}, MinArgs: 2, Doc: "swa_mask(mask, pos){window}: mask with -inf where token r (at position pos[r]) and KV cell c (holding position c) are window or more apart",
		Infer: func(n *Node) (Type, error) {
			m, p := n.Args[0].Type, n.Args[1].Type
			if m.DType != F32 {
				return Type{}, fmt.Errorf("mask must be f32, got %s", m.DType)
			}
			if p.DType != I32 {
				return Type{}, fmt.Errorf("positions must be i32, got %s", p.DType)
			}
			if w, ok := n.Attrs.Int(AttrWindow); !ok || w < 1 {
				return Type{}, fmt.Errorf("needs a positive attribute window")
			}
			return m, nil
		}})
}
