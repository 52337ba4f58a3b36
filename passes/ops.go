package passes

import (
	"fmt"
	"math"
	"slices"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/runtime"
)

// The ops the passes introduce. Every one is registered in the ir registry
// (so graphs holding them verify, print and parse) and with the runtime's
// kernel table (so the reference executor runs them and a test can compare
// a rewritten graph with the original). Each kernel is bit for bit the
// unfused chain it replaces; the fused kernels themselves live in package
// kernels (docs/KERNELS.md).
const (
	// OpRMSNormMul is rms_norm(x){eps} * w.
	OpRMSNormMul ir.Op = "rms_norm_mul"
	// OpAddRMSNormMul is the residual add and the following norm: slot 0
	// of dim 3 holds rms_norm(a+b)*w, slot 1 holds a+b.
	OpAddRMSNormMul ir.Op = "add_rms_norm_mul"
	// OpSwiGLU is silu(gate) * up.
	OpSwiGLU ir.Op = "swiglu"
	// OpMulMatAdd is mul_mat(a, b) + bias.
	OpMulMatAdd ir.Op = "mul_mat_add"
	// OpRopeCache is the cos/sin table of the positions (the RoPE cache).
	OpRopeCache ir.Op = "rope_cache"
	// OpRopeApply rotates x with a table made by rope_cache.
	OpRopeApply ir.Op = "rope_apply"
	// OpRopeSetRows is rope, reshape to rows and set_rows into a KV cache.
	OpRopeSetRows ir.Op = "rope_set_rows"
	// OpRopeApplySetRows is rope_apply, reshape to rows and set_rows.
	OpRopeApplySetRows ir.Op = "rope_apply_set_rows"
	// OpAttention is kq = mul_mat(k, q), soft_max, mul_mat(v, kq), permute
	// and cont in one op.
	OpAttention ir.Op = "attention"
	// OpConcat joins tensors along one dim (used to merge weights).
	OpConcat ir.Op = "concat"
)

func isFloat(dt ir.DType) bool { return dt == ir.F32 || dt == ir.F16 }

func wantF32(n *ir.Node, idx ...int) error {
	for _, i := range idx {
		if dt := n.Args[i].Type.DType; dt != ir.F32 {
			return fmt.Errorf("operand %d must be f32, got %s", i, dt)
		}
	}
	return nil
}

func needAttrs(n *ir.Node, keys ...string) error {
	for _, k := range keys {
		if _, ok := n.Attrs[k]; !ok {
			return fmt.Errorf("missing attribute %q", k)
		}
	}
	return nil
}

// dimMul returns d*k when the product is a Dim (a constant, or a plain or
// scaled symbol).
func dimMul(d ir.Dim, k int64) (ir.Dim, bool) {
	if d.IsConst() {
		return ir.C(d.Val * k), true
	}
	if d.Align > 1 {
		return ir.Dim{}, false
	}
	s := d.Scale
	if s == 0 {
		s = 1
	}
	return ir.Scaled(d.Sym, s*k), true
}

// ropeCheck validates the rope attributes shared by the rope ops.
// The row length is that of the first operand when it is the rotated
// tensor (not the positions of rope_cache).
func ropeCheck(n *ir.Node, keys ...string) error {
	rowLen := int64(0)
	if len(n.Args) > 0 && n.Args[0].Type.DType != ir.I32 && n.Args[0].Type.Shape[0].IsConst() {
		rowLen = n.Args[0].Type.Shape[0].Val
	}
	return ir.CheckRopeAttrs(n, rowLen, keys...)
}

var ropeAngleAttrs = []string{"n_dims", "mode", "freq_base", "freq_scale"}

// introduced lists the ops this package registers, in registration order.
var introduced []ir.Op

// Ops returns the ops the passes introduce (the fused ops and concat),
// each registered in the ir registry and with a runtime kernel.
func Ops() []ir.Op { return slices.Clone(introduced) }

func mustRegister(info ir.OpInfo, k runtime.Kernel) {
	introduced = append(introduced, info.Name)
	ir.MustRegister(info)
	if err := runtime.RegisterKernel(info.Name, k); err != nil {
		panic(err)
	}
}

func init() {
	mustRegister(ir.OpInfo{Name: OpRMSNormMul, Fused: true, MinArgs: 2, Inplace: true,
		Doc: "rms_norm_mul(x, w){eps}: rms_norm(x) * w, w broadcast over x (fuses rms_norm and mul)",
		Infer: func(n *ir.Node) (ir.Type, error) {
			x, w := n.Args[0].Type, n.Args[1].Type
			if !isFloat(x.DType) || !isFloat(w.DType) {
				return ir.Type{}, fmt.Errorf("operands must be f32 or f16, got %s and %s", x.DType, w.DType)
			}
			if !ir.CanRepeat(w.Shape, x.Shape) {
				return ir.Type{}, fmt.Errorf("cannot broadcast %s over %s", w, x)
			}
			return x, nil
		},
		Check: func(n *ir.Node) error { return ir.CheckAttrRanges(n, ir.AttrRange{Key: "eps", Min: 0, Max: 1}) },
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.RMSNormMul(dst, a[0], a[1], f32Attr(n, "eps"))
	})

	mustRegister(ir.OpInfo{Name: OpAddRMSNormMul, Fused: true, MinArgs: 3,
		Doc: "add_rms_norm_mul(a, b, w){eps}: f32[a0,a1,a2,2]; slot 0 of dim 3 is rms_norm(a+b)*w, slot 1 is a+b (fuses the residual add, rms_norm and mul; views pick the slots)",
		Infer: func(n *ir.Node) (ir.Type, error) {
			if err := wantF32(n, 0, 1, 2); err != nil {
				return ir.Type{}, err
			}
			a, b, w := n.Args[0].Type.Shape, n.Args[1].Type.Shape, n.Args[2].Type.Shape
			if !a[3].IsConst() || a[3].Val != 1 {
				return ir.Type{}, fmt.Errorf("operand 0 %s must have dim 3 = 1", n.Args[0].Type)
			}
			if !ir.CanRepeat(b, a) || !ir.CanRepeat(w, a) {
				return ir.Type{}, fmt.Errorf("cannot broadcast %s and %s over %s", n.Args[1].Type, n.Args[2].Type, n.Args[0].Type)
			}
			return ir.Type{DType: ir.F32, Shape: ir.Shape{a[0], a[1], a[2], ir.C(2)}}, nil
		},
		Check: func(n *ir.Node) error { return ir.CheckAttrRanges(n, ir.AttrRange{Key: "eps", Min: 0, Max: 1}) },
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		ne := dst.Ne
		ne[3] = 1
		norm, err := dst.View(ne, dst.Nb, 0)
		if err != nil {
			return err
		}
		sum, err := dst.View(ne, dst.Nb, dst.Nb[3])
		if err != nil {
			return err
		}
		return kernels.AddRMSNormMul(norm, sum, a[0], a[1], a[2], f32Attr(n, "eps"))
	})

	mustRegister(ir.OpInfo{Name: OpSwiGLU, Fused: true, MinArgs: 2, Inplace: true, ElementWise: true,
		Doc: "swiglu(gate, up): silu(gate) * up, equal shapes (fuses silu and mul)",
		Infer: func(n *ir.Node) (ir.Type, error) {
			if err := wantF32(n, 0, 1); err != nil {
				return ir.Type{}, err
			}
			if !n.Args[0].Type.Equal(n.Args[1].Type) {
				return ir.Type{}, fmt.Errorf("gate %s and up %s differ", n.Args[0].Type, n.Args[1].Type)
			}
			return n.Args[0].Type, nil
		},
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.SwiGLU(dst, a[0], a[1])
	})

	mustRegister(ir.OpInfo{Name: OpMulMatAdd, Fused: true, MinArgs: 3,
		Doc: "mul_mat_add(a, b, bias): mul_mat(a, b) + bias, bias broadcast over the product (fuses mul_mat and add)",
		Infer: func(n *ir.Node) (ir.Type, error) {
			mm, _ := ir.Lookup(ir.OpMulMat)
			t, err := mm.Infer(&ir.Node{Op: ir.OpMulMat, Args: n.Args[:2]})
			if err != nil {
				return ir.Type{}, err
			}
			bias := n.Args[2].Type
			if !isFloat(bias.DType) {
				return ir.Type{}, fmt.Errorf("bias must be f32 or f16, got %s", bias.DType)
			}
			if !ir.CanRepeat(bias.Shape, t.Shape) {
				return ir.Type{}, fmt.Errorf("cannot broadcast bias %s over %s", bias, t)
			}
			return t, nil
		},
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.MulMatAdd(dst, a[0], a[1], a[2])
	})

	mustRegister(ir.OpInfo{Name: OpRopeCache, Fused: true, MinArgs: 1, MaxArgs: 2,
		Doc: "rope_cache(pos, freq_factors?){n_dims, mode, freq_base, freq_scale, ...}: f32[n_dims, n_pos], cos and sin of every rotation angle (the RoPE cache: computed once per step, shared by every layer)",
		Infer: func(n *ir.Node) (ir.Type, error) {
			return ropeTableType(n, func(_ int, t ir.Type) string { return fmt.Sprintf("freq factors %s", t) })
		},
		Check: func(n *ir.Node) error { return ropeCheck(n, ropeAngleAttrs...) },
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		if len(a) > 1 {
			return kernels.RopeCacheWithFactors(dst, a[0], a[1], runtime.RopeParams(n))
		}
		return kernels.RopeCache(dst, a[0], runtime.RopeParams(n))
	})

	mustRegister(ir.OpInfo{Name: OpRopeApply, Fused: true, MinArgs: 2, Inplace: true,
		Doc: "rope_apply(x, cache){n_dims, mode}: rope of x with a table from rope_cache (token i2 uses column i2)",
		Infer: func(n *ir.Node) (ir.Type, error) {
			if !isFloat(n.Args[0].Type.DType) {
				return ir.Type{}, fmt.Errorf("operand 0 must be f32 or f16, got %s", n.Args[0].Type.DType)
			}
			if err := checkRopeTable(n, n.Args[0].Type, n.Args[1].Type); err != nil {
				return ir.Type{}, err
			}
			return n.Args[0].Type, nil
		},
		Check: func(n *ir.Node) error { return ropeCheck(n, "n_dims", "mode") },
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.RopeApply(dst, a[0], a[1], runtime.RopeParams(n))
	})

	mustRegister(ir.OpInfo{Name: OpRopeSetRows, Fused: true, Kind: ir.KindView, AliasArg: 0, MinArgs: 4, SideEffect: true,
		Doc: "rope_set_rows(dst, x, pos, idx){n_dims, mode, freq_base, ...}: dst row idx[t] = rope(x) of token t, heads laid end to end; the result aliases dst (fuses rope, reshape and set_rows: the K-cache write)",
		Infer: func(n *ir.Node) (ir.Type, error) {
			if err := checkRowWrite(n); err != nil {
				return ir.Type{}, err
			}
			p := n.Args[2].Type
			if p.DType != ir.I32 || !p.Shape[0].Equal(n.Args[1].Type.Shape[2]) {
				return ir.Type{}, fmt.Errorf("positions %s must be i32 with one value per token of %s", p, n.Args[1].Type)
			}
			return n.Args[0].Type, nil
		},
		Check: func(n *ir.Node) error { return ropeCheck(n, ropeAngleAttrs...) },
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.RopeSetRows(dst, a[1], a[2], a[3], runtime.RopeParams(n))
	})

	mustRegister(ir.OpInfo{Name: OpRopeApplySetRows, Fused: true, Kind: ir.KindView, AliasArg: 0, MinArgs: 4, SideEffect: true,
		Doc: "rope_apply_set_rows(dst, x, cache, idx){n_dims, mode}: dst row idx[t] = rope_apply(x, cache) of token t; the result aliases dst (fuses rope_apply, reshape and set_rows)",
		Infer: func(n *ir.Node) (ir.Type, error) {
			if err := checkRowWrite(n); err != nil {
				return ir.Type{}, err
			}
			if err := checkRopeTable(n, n.Args[1].Type, n.Args[2].Type); err != nil {
				return ir.Type{}, err
			}
			return n.Args[0].Type, nil
		},
		Check: func(n *ir.Node) error { return ropeCheck(n, "n_dims", "mode") },
	}, ropeApplySetRowsKernel)

	mustRegister(ir.OpInfo{Name: OpAttention, Fused: true, MinArgs: 3, MaxArgs: 4,
		Doc: "attention(q, k, v, mask?){scale, max_bias}: f32[hd_v*n_head, n_tokens, ne3]; softmax(k·q*scale + mask)·v per head, permuted and made contiguous (fuses mul_mat, soft_max, mul_mat, permute and cont)",
		Infer: func(n *ir.Node) (ir.Type, error) {
			q, k, v := n.Args[0].Type, n.Args[1].Type, n.Args[2].Type
			for i, t := range []ir.Type{q, k, v} {
				if !isFloat(t.DType) {
					return ir.Type{}, fmt.Errorf("operand %d must be f32 or f16, got %s", i, t.DType)
				}
			}
			if !k.Shape[0].Equal(q.Shape[0]) || !v.Shape[0].Equal(k.Shape[1]) || !v.Shape[2].Equal(k.Shape[2]) {
				return ir.Type{}, fmt.Errorf("q %s, k %s, v %s do not fit [hd,T,H], [hd,n_kv,H_kv], [n_kv,hd_v,H_kv]", q, k, v)
			}
			dv, h := v.Shape[1], q.Shape[2]
			if !dv.IsConst() || !h.IsConst() {
				return ir.Type{}, fmt.Errorf("head dims of v %s and heads of q %s must be static", v, q)
			}
			return ir.Type{DType: ir.F32, Shape: ir.Shape{ir.C(dv.Val * h.Val), q.Shape[1], q.Shape[3], ir.C(1)}}, nil
		},
		Check: func(n *ir.Node) error {
			return ir.CheckAttrRanges(n, ir.AttrRange{Key: "scale", Min: -math.MaxFloat32, Max: math.MaxFloat32})
		},
	}, attentionKernel)

	mustRegister(ir.OpInfo{Name: OpConcat, MinArgs: 1, MaxArgs: 64,
		Doc: "concat(a, b, ...){dim}: the operands joined along dim (same dtype, other dims equal); used to merge weights, whose rows it copies unchanged",
		Infer: func(n *ir.Node) (ir.Type, error) {
			d, ok := n.Attrs.Int("dim")
			if !ok || d < 0 || d >= ir.MaxDims {
				return ir.Type{}, fmt.Errorf("needs attribute dim in [0, %d)", ir.MaxDims)
			}
			t := n.Args[0].Type
			if t.DType.Quantized() && d == 0 {
				return ir.Type{}, fmt.Errorf("cannot join %s along dim 0", t.DType)
			}
			sum := int64(0)
			for i, a := range n.Args {
				if a.Type.DType != t.DType {
					return ir.Type{}, fmt.Errorf("operand %d is %s, operand 0 %s", i, a.Type.DType, t.DType)
				}
				for j := range ir.MaxDims {
					if int64(j) != d && !a.Type.Shape[j].Equal(t.Shape[j]) {
						return ir.Type{}, fmt.Errorf("operand %d %s differs from %s outside dim %d", i, a.Type, t, d)
					}
				}
				if !a.Type.Shape[d].IsConst() {
					return ir.Type{}, fmt.Errorf("operand %d %s: dim %d must be static", i, a.Type, d)
				}
				sum += a.Type.Shape[d].Val
			}
			t.Shape[d] = ir.C(sum)
			return t, nil
		},
	}, concatKernel)
}

func f32Attr(n *ir.Node, key string) float32 {
	v, _ := n.Attrs.Float(key)
	return float32(v)
}

// checkRopeTable checks a rope_cache table against the tensor it rotates.
func checkRopeTable(n *ir.Node, x, table ir.Type) error {
	nd, ok := n.Attrs.Int("n_dims")
	if !ok {
		return fmt.Errorf("missing attribute %q", "n_dims")
	}
	if table.DType != ir.F32 || !table.Shape[0].Equal(ir.C(nd)) || !table.Shape[1].Equal(x.Shape[2]) {
		return fmt.Errorf("table %s must be f32[%d, %s] for %s", table, nd, x.Shape[2], x)
	}
	if x.Shape[0].IsConst() && x.Shape[0].Val < nd {
		return fmt.Errorf("n_dims %d exceeds the rows of %s", nd, x)
	}
	return nil
}

// checkRowWrite checks the dst, x and idx operands of the fused K-cache
// writes: x [hd, n_head, n_tokens] goes to rows of dst [hd*n_head, n_rows].
func checkRowWrite(n *ir.Node) error {
	dst, x, idx := n.Args[0].Type, n.Args[1].Type, n.Args[3].Type
	if x.DType != ir.F32 {
		return fmt.Errorf("operand 1 must be f32, got %s", x.DType)
	}
	if idx.DType != ir.I32 && idx.DType != ir.I64 {
		return fmt.Errorf("index must be i32 or i64, got %s", idx.DType)
	}
	row := ir.Dim{}
	if x.Shape[0].IsConst() && x.Shape[1].IsConst() {
		row = ir.C(x.Shape[0].Val * x.Shape[1].Val)
	}
	if row.IsConst() && row.Val == 0 || !dst.Shape[0].Equal(row) || !x.Shape[3].Equal(ir.C(1)) {
		return fmt.Errorf("dst %s must hold rows of ne0*ne1 of %s", dst, x)
	}
	if !dst.Shape[2].Equal(ir.C(1)) || !dst.Shape[3].Equal(ir.C(1)) {
		return fmt.Errorf("dst %s must be two-dimensional", dst)
	}
	if !idx.Shape[0].Equal(x.Shape[2]) {
		return fmt.Errorf("%s indices for %s tokens", idx.Shape[0], x.Shape[2])
	}
	return nil
}

// ropeApplySetRowsKernel is rope_apply into a contiguous f32 scratch tensor,
// a reshape to rows and set_rows: exactly the unfused chain, so the result
// is bit for bit the same. A device kernel does it in one pass.
func ropeApplySetRowsKernel(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
	x := a[1]
	tmp, err := kernels.NewTensor(gguf.TypeF32, x.Ne[:]...)
	if err != nil {
		return err
	}
	if err := kernels.RopeApply(tmp, x, a[2], runtime.RopeParams(n)); err != nil {
		return err
	}
	rows, err := tmp.Reshape(x.Ne[0]*x.Ne[1], x.Ne[2], x.Ne[3])
	if err != nil {
		return err
	}
	return kernels.SetRows(dst, rows, a[3])
}

// attentionKernel runs kernels.Attention with dst seen as the permuted view
// [hd_v, n_tokens, n_head, ne3] of the contiguous [hd_v, n_head, n_tokens,
// ne3] result, which absorbs the graph's permute and cont.
func attentionKernel(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
	q, v := a[0], a[2]
	dv, t, h, b := v.Ne[1], q.Ne[1], q.Ne[2], q.Ne[3]
	e := dst.Nb[0]
	view, err := dst.View([4]int64{dv, t, h, b}, [4]int64{e, e * dv * h, e * dv, e * dv * h * t}, 0)
	if err != nil {
		return err
	}
	var mask *kernels.Tensor
	if len(a) > 3 {
		mask = &a[3]
	}
	return o.Attention(view, q, a[1], v, mask, f32Attr(n, "scale"), f32Attr(n, "max_bias"))
}

// concatKernel copies each operand into its slice of dst.
func concatKernel(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
	d, _ := n.Attrs.Int("dim")
	off := int64(0)
	for i, x := range a {
		part, err := dst.View(x.Ne, dst.Nb, off*dst.Nb[d])
		if err != nil {
			return fmt.Errorf("operand %d: %w", i, err)
		}
		if err := kernels.Cpy(part, x); err != nil {
			return fmt.Errorf("operand %d: %w", i, err)
		}
		off += x.Ne[d]
	}
	return nil
}

// ropeTableType infers the type of the ops that make a RoPE table,
// f32[n_dims, n_pos], from i32 positions (operand 0); every further operand
// is a per-pair f32 vector of at least n_dims/2 values, which name(i, type)
// names in errors.
func ropeTableType(n *ir.Node, name func(i int, t ir.Type) string) (ir.Type, error) {
	p := n.Args[0].Type
	if p.DType != ir.I32 {
		return ir.Type{}, fmt.Errorf("positions must be i32, got %s", p.DType)
	}
	nd, ok := n.Attrs.Int("n_dims")
	if !ok {
		return ir.Type{}, fmt.Errorf("missing attribute %q", "n_dims")
	}
	for i := 1; i < len(n.Args); i++ {
		if t := n.Args[i].Type; t.DType != ir.F32 || !t.Shape[0].IsConst() || t.Shape[0].Val < nd/2 {
			return ir.Type{}, fmt.Errorf("%s must be f32 with at least n_dims/2 = %d values", name(i, t), nd/2)
		}
	}
	return ir.Type{DType: ir.F32, Shape: ir.Sh(nd, p.Shape[0])}, nil
}
