package passes

import (
	"github.com/irtool/irtool/ir"
)

// The fusion rules. Each replaces a chain of ops by one fused op whose
// kernel computes the same bits (docs/KERNELS.md); interior nodes of a
// chain must have no other user (OneUse), so nothing is computed twice.

func f32(n *ir.Node) bool { return n.Type.DType == ir.F32 }

// normRules fuse RMSNorm with its weight, then the residual add before it.
func normRules() []*Rule {
	return []*Rule{
		{Name: "rms-norm-mul", Doc: "mul(rms_norm(x), w) -> rms_norm_mul(x, w)",
			Pattern: Op(ir.OpMul, Op(ir.OpRMSNorm, Any("x")).As("norm").OneUse(), Any("w")).Commutative().DType(ir.F32),
			Cond: func(m *Match) bool {
				x, w := m.Get("x"), m.Get("w")
				return f32(x) && isFloat(w.Type.DType) && ir.CanRepeat(w.Type.Shape, x.Type.Shape)
			},
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				return b.Op(ir.OpRMSNormMul, ir.Attrs{ir.AttrEps: m.Get("norm").Attrs.Eps()}, m.Get("x"), m.Get("w"))
			}},
		{Name: "add-rms-norm-mul", Doc: "rms_norm_mul(add(a, b), w) -> add_rms_norm_mul(a, b, w), with views for the norm and (when still used) the sum",
			Pattern: Op(ir.OpRMSNormMul, Op(ir.OpAdd, Any("a"), Any("b")).As("sum"), Any("w")),
			Cond: func(m *Match) bool {
				a, b, w, sum := m.Get("a"), m.Get("b"), m.Get("w"), m.Get("sum")
				if !f32(a) || !f32(b) || !f32(w) || !f32(sum) || !m.UsedAfterRoot(sum) {
					return false
				}
				_, _, ok := slotViews(a.Type.Shape)
				return ok
			},
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				sum := m.Get("sum")
				fused, err := b.Op(ir.OpAddRMSNormMul, ir.Attrs{ir.AttrEps: m.Root.Attrs.Eps()}, m.Get("a"), m.Get("b"), m.Get("w"))
				if err != nil {
					return nil, err
				}
				nb, off, _ := slotViews(sum.Type.Shape)
				norm, err := b.Typed(ir.OpView, m.Root.Type, ir.Attrs{ir.AttrOffset: ir.C(0), ir.AttrNB: nb}, fused)
				if err != nil {
					return nil, err
				}
				if m.Uses(sum) > 1 {
					b.Name, b.Layer = sum.Name, sum.Layer
					sv, err := b.Typed(ir.OpView, sum.Type, ir.Attrs{ir.AttrOffset: off, ir.AttrNB: nb}, fused)
					if err != nil {
						return nil, err
					}
					if err := b.Replace(sum, sv); err != nil {
						return nil, err
					}
				}
				return norm, nil
			}},
	}
}

// slotViews returns the byte strides of one slot of an add_rms_norm_mul
// result of shape s (f32) and the byte offset of slot 1. Outer strides of
// size-1 dims that would depend on a symbol are 0 (only strides of dims
// larger than 1 are ever used).
func slotViews(s ir.Shape) (nb []int64, off ir.Dim, ok bool) {
	if !s[0].IsConst() || !s[3].Equal(ir.C(1)) {
		return nil, ir.Dim{}, false
	}
	nb = make([]int64, ir.MaxDims)
	nb[0], nb[1] = 4, 4*s[0].Val
	coef, sym := int64(4), ir.Dim{}
	for i := 0; i < 3; i++ {
		d := s[i]
		if d.IsConst() {
			coef *= d.Val
		} else {
			if sym.Sym != "" || d.Align > 1 {
				return nil, ir.Dim{}, false
			}
			sym = d
		}
		if i+1 < ir.MaxDims && i >= 1 {
			switch {
			case sym.Sym == "":
				nb[i+1] = coef
			case s[i+1].IsConst() && s[i+1].Val == 1:
				nb[i+1] = 0
			default:
				return nil, ir.Dim{}, false // a stride of a dim > 1 would be symbolic
			}
		}
	}
	if sym.Sym == "" {
		return nb, ir.C(coef), true
	}
	off, ok = dimMul(sym, coef)
	return nb, off, ok
}

func matmulBiasRules() []*Rule {
	return []*Rule{
		{Name: "mul-mat-add", Doc: "add(mul_mat(a, b), bias) -> mul_mat_add(a, b, bias)",
			Pattern: Op(ir.OpAdd, Op(ir.OpMulMat, Any("a"), Any("b")).As("mm").OneUse(), Any("bias")).Commutative(),
			Cond: func(m *Match) bool {
				bias := m.Get("bias")
				return isFloat(bias.Type.DType) && ir.CanRepeat(bias.Type.Shape, m.Get("mm").Type.Shape)
			},
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				return b.Op(ir.OpMulMatAdd, nil, m.Get("a"), m.Get("b"), m.Get("bias"))
			}},
	}
}

func swigluRules() []*Rule {
	return []*Rule{
		{Name: "swiglu", Doc: "mul(silu(gate), up) -> swiglu(gate, up)",
			Pattern: Op(ir.OpMul, Op(ir.OpSilu, Any("gate")).As("act").OneUse(), Any("up")).Commutative().DType(ir.F32),
			Cond: func(m *Match) bool {
				g, u := m.Get("gate"), m.Get("up")
				return f32(g) && g.Type.Equal(u.Type)
			},
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				return b.Op(ir.OpSwiGLU, nil, m.Get("gate"), m.Get("up"))
			}},
	}
}

// softmaxRules fold a mask add and a scale into soft_max (ggml's
// soft_max_ext): w = x*scale + mask, computed in the same float32 steps.
func softmaxRules() []*Rule {
	plain := func(n *ir.Node) bool { return n.Attrs.Scale() == 1 }
	return []*Rule{
		{Name: "softmax-mask", Doc: "soft_max(add(x, mask)){scale=1, max_bias=0} -> soft_max(x, mask)",
			Pattern: Op(ir.OpSoftMax, Op(ir.OpAdd, Any("x"), Any("mask")).As("sum").OneUse()).
				Where(func(n *ir.Node) bool { return plain(n) && n.Attrs.MaxBias() == 0 }),
			Cond: func(m *Match) bool {
				x, mask := m.Get("x").Type, m.Get("mask").Type
				if !isFloat(mask.DType) || !mask.Shape[0].Equal(x.Shape[0]) || !mask.Shape[1].Equal(x.Shape[1]) {
					return false
				}
				return ir.CanRepeat(ir.Shape{ir.C(1), ir.C(1), mask.Shape[2], mask.Shape[3]}, ir.Shape{ir.C(1), ir.C(1), x.Shape[2], x.Shape[3]})
			},
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				return b.Op(ir.OpSoftMax, m.Root.Attrs.Clone(), m.Get("x"), m.Get("mask"))
			}},
		{Name: "softmax-scale", Doc: "soft_max(scale(x){s}, mask?){scale=1} -> soft_max(x, mask?){scale=s}",
			Pattern: Op(ir.OpSoftMax, Op(ir.OpScale, Any("x")).As("sc").OneUse()).AllowMore().Where(plain),
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				attrs := m.Root.Attrs.Clone()
				attrs[ir.AttrScale] = m.Get("sc").Attrs.Scale()
				args := append([]*ir.Node{m.Get("x")}, m.Root.Args[1:]...)
				return b.Op(ir.OpSoftMax, attrs, args...)
			}},
	}
}

// attentionRules fuse the attention block of a llama/qwen2 layer.
func attentionRules() []*Rule {
	kq := Op(ir.OpMulMat, Any("k"), Any("q")).As("kq").OneUse()
	sm := Op(ir.OpSoftMax, kq).AllowMore().As("sm").OneUse()
	kqv := Op(ir.OpMulMat, Any("v"), sm).As("kqv").OneUse()
	perm := Op(ir.OpPermute, kqv).As("perm").OneUse().Attr(ir.AttrAxes, []int64{0, 2, 1, 3})
	return []*Rule{
		{Name: "attention", Doc: "cont(permute(mul_mat(v, soft_max(mul_mat(k, q), mask)))) -> attention(q, k, v, mask)",
			Pattern: Op(ir.OpCont, perm),
			Cond: func(m *Match) bool {
				for _, k := range []string{"q", "k", "v"} {
					if !isFloat(m.Get(k).Type.DType) {
						return false
					}
				}
				return true
			},
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				sm := m.Get("sm")
				args := []*ir.Node{m.Get("q"), m.Get("k"), m.Get("v")}
				args = append(args, sm.Args[1:]...)
				attrs := ir.Attrs{ir.AttrScale: sm.Attrs.Scale(), ir.AttrMaxBias: sm.Attrs.MaxBias()}
				n, err := b.Op(ir.OpAttention, attrs, args...)
				if err != nil || !n.Type.Equal(m.Root.Type) {
					return nil, nil // not the layout this fusion absorbs
				}
				return n, nil
			}},
	}
}

// ropeRowsOK checks that the reshape between a rope and the K-cache write
// lays the heads of each token end to end: [hd, n_head, T] -> [hd*n_head, T].
func ropeRowsOK(m *Match) bool {
	x, rows := m.Get("x").Type, m.Get("rows").Type
	if !f32(m.Get("x")) || !f32(m.Get("rope")) || !x.Shape[0].IsConst() || !x.Shape[1].IsConst() {
		return false
	}
	want := ir.Shape{ir.C(x.Shape[0].Val * x.Shape[1].Val), x.Shape[2], ir.C(1), ir.C(1)}
	return rows.Shape.Equal(want) && x.Shape[3].Equal(ir.C(1))
}

func ropeSetRowsRules() []*Rule {
	return []*Rule{
		{Name: "rope-apply-set-rows", Doc: "set_rows(cache, reshape(rope_apply(x, table)), idx) -> rope_apply_set_rows(cache, x, table, idx)",
			Pattern: Op(ir.OpSetRows, Any("dst"),
				Op(ir.OpReshape, Op(ir.OpRopeApply, Any("x"), Any("table")).As("rope").OneUse()).As("rows").OneUse(), Any("idx")),
			Cond: ropeRowsOK,
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				r := m.Get("rope")
				return b.Op(ir.OpRopeApplySetRows, r.Attrs.Clone(), m.Get("dst"), m.Get("x"), m.Get("table"), m.Get("idx"))
			}},
		{Name: "rope-set-rows", Doc: "set_rows(cache, reshape(rope(x, pos)), idx) -> rope_set_rows(cache, x, pos, idx) (no freq factors)",
			Pattern: Op(ir.OpSetRows, Any("dst"),
				Op(ir.OpReshape, Op(ir.OpRope, Any("x"), Any("pos")).As("rope").OneUse()).As("rows").OneUse(), Any("idx")),
			Cond: ropeRowsOK,
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				r := m.Get("rope")
				return b.Op(ir.OpRopeSetRows, r.Attrs.Clone(), m.Get("dst"), m.Get("x"), m.Get("pos"), m.Get("idx"))
			}},
	}
}

// ropeCacheRules split every rope into the table of its angles (rope_cache,
// a function of the positions and the attributes only) and its application
// (rope_apply). CSE then leaves one table per step for all layers.
func ropeCacheRules() []*Rule {
	return []*Rule{
		{Name: "rope-cache", Doc: "rope(x, pos, ff?) -> rope_apply(x, rope_cache(pos, ff?))",
			Pattern: Op(ir.OpRope, Any("x"), Any("pos")).AllowMore(),
			Cond: func(m *Match) bool {
				mode, _ := m.Root.Attrs.Int(ir.AttrMode)
				nd, _ := m.Root.Attrs.Int(ir.AttrNDims)
				return (mode == 0 || mode == 2) && nd > 0 && nd%2 == 0
			},
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				r := m.Root
				b.Name, b.Layer = "rope_cache", -1
				cache, err := b.Op(ir.OpRopeCache, r.Attrs.Clone(), r.Args[1:]...)
				if err != nil {
					return nil, err
				}
				b.Name, b.Layer = r.Name, r.Layer
				return b.Op(ir.OpRopeApply, ir.Attrs{ir.AttrNDims: r.Attrs[ir.AttrNDims], ir.AttrMode: r.Attrs[ir.AttrMode]}, r.Args[0], cache)
			}},
	}
}
