package ir

import (
	"fmt"
	"math"
)

// The fused ops: ops the rewrite passes of package passes introduce, each
// one the exact computation of the chain of core ops it replaces. Their
// typing lives here, next to the core ops, so that every graph that holds
// them verifies, prints and parses with package ir alone (no blank import);
// their CPU kernels are in package eval, their per-target rules in package
// target (docs/ARCHITECTURE.md, "One record per op").

const (
	// OpRMSNormMul is rms_norm(x){eps} * w.
	OpRMSNormMul Op = "rms_norm_mul"
	// OpAddRMSNormMul is the residual add and the following norm: slot 0
	// of dim 3 holds rms_norm(a+b)*w, slot 1 holds a+b.
	OpAddRMSNormMul Op = "add_rms_norm_mul"
	// OpSwiGLU is silu(gate) * up.
	OpSwiGLU Op = "swiglu"
	// OpMulMatAdd is mul_mat(a, b) + bias.
	OpMulMatAdd Op = "mul_mat_add"
	// OpRopeCache is the cos/sin table of the positions (the RoPE cache).
	OpRopeCache Op = "rope_cache"
	// OpRopeApply rotates x with a table made by rope_cache.
	OpRopeApply Op = "rope_apply"
	// OpRopeSetRows is rope, reshape to rows and set_rows into a KV cache.
	OpRopeSetRows Op = "rope_set_rows"
	// OpRopeApplySetRows is rope_apply, reshape to rows and set_rows.
	OpRopeApplySetRows Op = "rope_apply_set_rows"
	// OpAttention is kq = mul_mat(k, q), soft_max, mul_mat(v, kq), permute
	// and cont in one op.
	OpAttention Op = "attention"
	// OpConcat joins tensors along one dim (used to merge weights).
	OpConcat Op = "concat"
)

const (
	// OpRopeTheta is the inverse-frequency table of a RoPE: an op without
	// operands that constant folding turns into a constant.
	OpRopeTheta Op = "rope_theta"
	// OpRopeCacheTable computes the cos/sin table from positions and an
	// inverse-frequency table.
	OpRopeCacheTable Op = "rope_cache_table"
)

// OpTransfer is the op the partition pass inserts at a device boundary: a
// contiguous copy of its operand on the device named by attribute "to" (the
// source device is in "from", "cpu" or "npu" as package target names them).
const OpTransfer Op = "transfer"

func isFloat(dt DType) bool { return dt == F32 || dt == F16 }

func wantF32(n *Node, idx ...int) error {
	for _, i := range idx {
		if dt := n.Args[i].Type.DType; dt != F32 {
			return fmt.Errorf("operand %d must be f32, got %s", i, dt)
		}
	}
	return nil
}

// ropeCheck validates the rope attributes shared by the rope ops
// (CheckRopeAttrs); the row length is that of the first operand when it is
// the rotated tensor, not the i32 positions of rope_cache.
func ropeCheck(n *Node, keys ...string) error {
	rowLen := int64(0)
	if len(n.Args) > 0 && n.Args[0].Type.DType != I32 {
		rowLen = rowLength(n.Args[0].Type)
	}
	return CheckRopeAttrs(n, rowLen, keys...)
}

var ropeAngleAttrs = []string{"n_dims", "mode", "freq_base", "freq_scale"}

// checkRopeTable checks a rope_cache table against the tensor it rotates.
func checkRopeTable(n *Node, x, table Type) error {
	nd, ok := n.Attrs.Int("n_dims")
	if !ok {
		return fmt.Errorf("missing attribute %q", "n_dims")
	}
	if table.DType != F32 || !table.Shape[0].Equal(C(nd)) || !table.Shape[1].Equal(x.Shape[2]) {
		return fmt.Errorf("table %s must be f32[%d, %s] for %s", table, nd, x.Shape[2], x)
	}
	if x.Shape[0].IsConst() && x.Shape[0].Val < nd {
		return fmt.Errorf("n_dims %d exceeds the rows of %s", nd, x)
	}
	return nil
}

// checkRowWrite checks the dst, x and idx operands of the fused K-cache
// writes: x [hd, n_head, n_tokens] goes to rows of dst [hd*n_head, n_rows].
func checkRowWrite(n *Node) error {
	dst, x, idx := n.Args[0].Type, n.Args[1].Type, n.Args[3].Type
	if x.DType != F32 {
		return fmt.Errorf("operand 1 must be f32, got %s", x.DType)
	}
	if idx.DType != I32 && idx.DType != I64 {
		return fmt.Errorf("index must be i32 or i64, got %s", idx.DType)
	}
	row := Dim{}
	if x.Shape[0].IsConst() && x.Shape[1].IsConst() {
		row = C(x.Shape[0].Val * x.Shape[1].Val)
	}
	if row.IsConst() && row.Val == 0 || !dst.Shape[0].Equal(row) || !x.Shape[3].Equal(C(1)) {
		return fmt.Errorf("dst %s must hold rows of ne0*ne1 of %s", dst, x)
	}
	if !dst.Shape[2].Equal(C(1)) || !dst.Shape[3].Equal(C(1)) {
		return fmt.Errorf("dst %s must be two-dimensional", dst)
	}
	if !idx.Shape[0].Equal(x.Shape[2]) {
		return fmt.Errorf("%s indices for %s tokens", idx.Shape[0], x.Shape[2])
	}
	return nil
}

// ropeTableType infers the type of the ops that make a RoPE table,
// f32[n_dims, n_pos], from i32 positions (operand 0); every further operand
// is a per-pair f32 vector of at least n_dims/2 values, which name(i, type)
// names in errors.
func ropeTableType(n *Node, name func(i int, t Type) string) (Type, error) {
	p := n.Args[0].Type
	if p.DType != I32 {
		return Type{}, fmt.Errorf("positions must be i32, got %s", p.DType)
	}
	nd, ok := n.Attrs.Int("n_dims")
	if !ok {
		return Type{}, fmt.Errorf("missing attribute %q", "n_dims")
	}
	for i := 1; i < len(n.Args); i++ {
		if t := n.Args[i].Type; t.DType != F32 || !t.Shape[0].IsConst() || t.Shape[0].Val < nd/2 {
			return Type{}, fmt.Errorf("%s must be f32 with at least n_dims/2 = %d values", name(i, t), nd/2)
		}
	}
	return Type{DType: F32, Shape: Sh(nd, p.Shape[0])}, nil
}

// RopeModeNorm and RopeModeNeox are the rope modes the rope ops accept
// (ggml's GGML_ROPE_TYPE_NORMAL and GGML_ROPE_TYPE_NEOX).
const (
	RopeModeNorm = 0
	RopeModeNeox = 2
)

func init() {
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
		Check: func(n *Node) error { return CheckAttrRanges(n, AttrRange{Key: "eps", Min: 0, Max: 1}) },
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
		Check: func(n *Node) error { return CheckAttrRanges(n, AttrRange{Key: "eps", Min: 0, Max: 1}) },
	})
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
	MustRegister(OpInfo{Name: OpRopeCache, Attrs: ropeAttrNames, Fused: true, MinArgs: 1, MaxArgs: 2,
		Doc: "rope_cache(pos, freq_factors?){n_dims, mode, freq_base, freq_scale, ...}: f32[n_dims, n_pos], cos and sin of every rotation angle (the RoPE cache: computed once per step, shared by every layer)",
		Infer: func(n *Node) (Type, error) {
			return ropeTableType(n, func(_ int, t Type) string { return fmt.Sprintf("freq factors %s", t) })
		},
		Check: func(n *Node) error { return ropeCheck(n, ropeAngleAttrs...) },
	})
	MustRegister(OpInfo{Name: OpRopeApply, Attrs: ropeAttrNames, Fused: true, MinArgs: 2, Inplace: true,
		Doc: "rope_apply(x, cache){n_dims, mode}: rope of x with a table from rope_cache (token i2 uses column i2)",
		Infer: func(n *Node) (Type, error) {
			if !isFloat(n.Args[0].Type.DType) {
				return Type{}, fmt.Errorf("operand 0 must be f32 or f16, got %s", n.Args[0].Type.DType)
			}
			if err := checkRopeTable(n, n.Args[0].Type, n.Args[1].Type); err != nil {
				return Type{}, err
			}
			return n.Args[0].Type, nil
		},
		Check: func(n *Node) error { return ropeCheck(n, "n_dims", "mode") },
	})
	MustRegister(OpInfo{Name: OpRopeSetRows, Attrs: ropeAttrNames, Fused: true, Kind: KindView, AliasArg: 0, MinArgs: 4, SideEffect: true,
		Doc: "rope_set_rows(dst, x, pos, idx){n_dims, mode, freq_base, ...}: dst row idx[t] = rope(x) of token t, heads laid end to end; the result aliases dst (fuses rope, reshape and set_rows: the K-cache write)",
		Infer: func(n *Node) (Type, error) {
			if err := checkRowWrite(n); err != nil {
				return Type{}, err
			}
			p := n.Args[2].Type
			if p.DType != I32 || !p.Shape[0].Equal(n.Args[1].Type.Shape[2]) {
				return Type{}, fmt.Errorf("positions %s must be i32 with one value per token of %s", p, n.Args[1].Type)
			}
			return n.Args[0].Type, nil
		},
		Check: func(n *Node) error { return ropeCheck(n, ropeAngleAttrs...) },
	})
	MustRegister(OpInfo{Name: OpRopeApplySetRows, Attrs: ropeAttrNames, Fused: true, Kind: KindView, AliasArg: 0, MinArgs: 4, SideEffect: true,
		Doc: "rope_apply_set_rows(dst, x, cache, idx){n_dims, mode}: dst row idx[t] = rope_apply(x, cache) of token t; the result aliases dst (fuses rope_apply, reshape and set_rows)",
		Infer: func(n *Node) (Type, error) {
			if err := checkRowWrite(n); err != nil {
				return Type{}, err
			}
			if err := checkRopeTable(n, n.Args[1].Type, n.Args[2].Type); err != nil {
				return Type{}, err
			}
			return n.Args[0].Type, nil
		},
		Check: func(n *Node) error { return ropeCheck(n, "n_dims", "mode") },
	})
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
			return CheckAttrRanges(n, AttrRange{Key: "scale", Min: -math.MaxFloat32, Max: math.MaxFloat32})
		},
	})
	MustRegister(OpInfo{Name: OpConcat, Attrs: []string{"dim"}, MinArgs: 1, MaxArgs: 64,
		Doc: "concat(a, b, ...){dim}: the operands joined along dim (same dtype, other dims equal); used to merge weights, whose rows it copies unchanged",
		Infer: func(n *Node) (Type, error) {
			d, ok := n.Attrs.Int("dim")
			if !ok || d < 0 || d >= MaxDims {
				return Type{}, fmt.Errorf("needs attribute dim in [0, %d)", MaxDims)
			}
			t := n.Args[0].Type
			if t.DType.Quantized() && d == 0 {
				return Type{}, fmt.Errorf("cannot join %s along dim 0", t.DType)
			}
			sum := int64(0)
			for i, a := range n.Args {
				if a.Type.DType != t.DType {
					return Type{}, fmt.Errorf("operand %d is %s, operand 0 %s", i, a.Type.DType, t.DType)
				}
				for j := range MaxDims {
					if int64(j) != d && !a.Type.Shape[j].Equal(t.Shape[j]) {
						return Type{}, fmt.Errorf("operand %d %s differs from %s outside dim %d", i, a.Type, t, d)
					}
				}
				if !a.Type.Shape[d].IsConst() {
					return Type{}, fmt.Errorf("operand %d %s: dim %d must be static", i, a.Type, d)
				}
				sum += a.Type.Shape[d].Val
			}
			t.Shape[d] = C(sum)
			return t, nil
		},
	})
	MustRegister(OpInfo{Name: OpRopeTheta, Attrs: []string{"n_dims", "freq_base"}, Fused: true,
		Doc: "rope_theta(){n_dims, freq_base}: f32[n_dims/2], theta_scale^i with theta_scale = freq_base^(-2/n_dims), each power the float32 product of the previous one and theta_scale (a constant once folded)",
		Infer: func(n *Node) (Type, error) {
			nd, ok := n.Attrs.Int("n_dims")
			if !ok || nd <= 0 || nd%2 != 0 {
				return Type{}, fmt.Errorf("n_dims must be a positive even integer")
			}
			return T(F32, nd/2), nil
		},
		Check: func(n *Node) error {
			if b, ok := n.Attrs.Float("freq_base"); !ok || !(b > 0) {
				return fmt.Errorf("freq_base must be positive")
			}
			return nil
		},
	})
	MustRegister(OpInfo{Name: OpRopeCacheTable, Attrs: ropeAttrNames, Fused: true, MinArgs: 2, MaxArgs: 3,
		Doc: "rope_cache_table(pos, inv_freq, freq_factors?){n_dims, mode, freq_scale, attn_factor}: the table rope_cache makes, from angles pos*inv_freq[i]/ff[i]*freq_scale (ggml-cann's formulation; ext_factor 0 only)",
		Infer: func(n *Node) (Type, error) {
			return ropeTableType(n, func(i int, t Type) string { return fmt.Sprintf("operand %d %s", i, t) })
		},
		Check: func(n *Node) error { return ropeCheck(n, "n_dims", "mode") },
	})
	MustRegister(OpInfo{Name: OpTransfer, Attrs: []string{"from", "to"}, MinArgs: 1,
		Doc:   "transfer(x){from, to}: a contiguous copy of x on device `to` (inserted by the partition pass at device boundaries)",
		Infer: func(n *Node) (Type, error) { return n.Args[0].Type, nil },
		Check: func(n *Node) error {
			for _, k := range []string{"from", "to"} {
				d, ok := n.Attrs.Str(k)
				if !ok || d != "cpu" && d != "npu" {
					return fmt.Errorf("attribute %s must be \"cpu\" or \"npu\", got %v", k, n.Attrs[k])
				}
			}
			return nil
		}})
}
