package ir

import (
	"fmt"
	"math"
)

// The rotary position embedding ops: rope, the RoPE cache (rope_cache and
// rope_apply), the K-cache writes that fuse rope with set_rows, and
// ggml-cann's table formulation (rope_theta, rope_cache_table).
const (
	OpRope Op = "rope"
	// OpRopeCache is the cos/sin table of the positions (the RoPE cache).
	OpRopeCache Op = "rope_cache"
	// OpRopeApply rotates x with a table made by rope_cache.
	OpRopeApply Op = "rope_apply"
	// OpRopeSetRows is rope, reshape to rows and set_rows into a KV cache.
	OpRopeSetRows Op = "rope_set_rows"
	// OpRopeApplySetRows is rope_apply, reshape to rows and set_rows.
	OpRopeApplySetRows Op = "rope_apply_set_rows"
	// OpRopeTheta is the inverse-frequency table of a RoPE: an op without
	// operands that constant folding turns into a constant.
	OpRopeTheta Op = "rope_theta"
	// OpRopeCacheTable computes the cos/sin table from positions and an
	// inverse-frequency table.
	OpRopeCacheTable Op = "rope_cache_table"
)

// The attributes of the rope ops: ggml_rope_ext's parameters.
const (
	AttrNDims      = "n_dims"      // rotated dims of each row (even, required)
	AttrMode       = "mode"        // RopeModeNorm or RopeModeNeox (required)
	AttrNCtxOrig   = "n_ctx_orig"  // YaRN's original context
	AttrFreqBase   = "freq_base"   // theta base
	AttrFreqScale  = "freq_scale"  // position scale (linear interpolation)
	AttrExtFactor  = "ext_factor"  // YaRN ramp mix (0: none)
	AttrAttnFactor = "attn_factor" // magnitude scale of cos and sin
	AttrBetaFast   = "beta_fast"   // YaRN ramp bounds
	AttrBetaSlow   = "beta_slow"
)

// RopeAttrs are a rope node's parameters, ggml_rope_ext's, with the
// defaults of Attrs.Rope filled in.
type RopeAttrs struct {
	NDims, Mode, NCtxOrig                      int64
	FreqBase, FreqScale, ExtFactor, AttnFactor float64
	BetaFast, BetaSlow                         float64
}

// Rope returns the rope attributes, each absent one at ggml's default:
// n_dims, mode and n_ctx_orig 0, freq_base 10000, freq_scale 1,
// ext_factor 0, attn_factor 1, beta_fast 32, beta_slow 1.
func (a Attrs) Rope() RopeAttrs {
	return RopeAttrs{
		NDims:      a.intOr(AttrNDims, 0),
		Mode:       a.intOr(AttrMode, 0),
		NCtxOrig:   a.intOr(AttrNCtxOrig, 0),
		FreqBase:   a.floatOr(AttrFreqBase, 10000),
		FreqScale:  a.floatOr(AttrFreqScale, 1),
		ExtFactor:  a.floatOr(AttrExtFactor, 0),
		AttnFactor: a.floatOr(AttrAttnFactor, 1),
		BetaFast:   a.floatOr(AttrBetaFast, 32),
		BetaSlow:   a.floatOr(AttrBetaSlow, 1),
	}
}

// RopeModeNorm and RopeModeNeox are the rope modes the rope ops accept
// (ggml's GGML_ROPE_TYPE_NORMAL and GGML_ROPE_TYPE_NEOX).
const (
	RopeModeNorm = 0
	RopeModeNeox = 2
)

// CheckRopeAttrs checks the attributes of a rope-like node rotating the
// first n_dims of rows of length rowLen (0: unknown, not checked): n_dims
// even and in (0, rowLen], mode norm or neox, and, where present, a
// positive freq_base and freq_scale, ext_factor in [0, 1], finite
// attn_factor and beta values and n_ctx_orig >= 0. keys lists the
// attributes that must be present.
func CheckRopeAttrs(n *Node, rowLen int64, keys ...string) error {
	if err := needAttrs(n, keys...); err != nil {
		return err
	}
	maxDims := float64(1 << 20)
	if rowLen > 0 {
		maxDims = float64(rowLen)
	}
	if err := CheckAttrRanges(n,
		AttrRange{Key: AttrNDims, Int: true, Min: 0, MinOpen: true, Max: maxDims},
		AttrRange{Key: AttrMode, Int: true, Min: 0, Max: RopeModeNeox},
		AttrRange{Key: AttrFreqBase, Min: 0, MinOpen: true, Max: math.MaxFloat32, Optional: true},
		AttrRange{Key: AttrFreqScale, Min: 0, MinOpen: true, Max: math.MaxFloat32, Optional: true},
		AttrRange{Key: AttrExtFactor, Min: 0, Max: 1, Optional: true},
		AttrRange{Key: AttrAttnFactor, Min: -math.MaxFloat32, Max: math.MaxFloat32, Optional: true},
		AttrRange{Key: AttrBetaFast, Min: -math.MaxFloat32, Max: math.MaxFloat32, Optional: true},
		AttrRange{Key: AttrBetaSlow, Min: -math.MaxFloat32, Max: math.MaxFloat32, Optional: true},
		AttrRange{Key: AttrNCtxOrig, Int: true, Min: 0, Max: math.MaxInt32, Optional: true},
	); err != nil {
		return err
	}
	if nd, _ := n.Attrs.Int(AttrNDims); nd%2 != 0 {
		return fmt.Errorf("attribute n_dims = %d must be even", nd)
	}
	if m, _ := n.Attrs.Int(AttrMode); m != RopeModeNorm && m != RopeModeNeox {
		return fmt.Errorf("attribute mode = %d: want %d (norm) or %d (neox)", m, RopeModeNorm, RopeModeNeox)
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

var ropeAngleAttrs = []string{AttrNDims, AttrMode, AttrFreqBase, AttrFreqScale}

// checkRopeTable checks a rope_cache table against the tensor it rotates.
func checkRopeTable(n *Node, x, table Type) error {
	nd, ok := n.Attrs.Int(AttrNDims)
	if !ok {
		return fmt.Errorf("missing attribute %q", AttrNDims)
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
	nd, ok := n.Attrs.Int(AttrNDims)
	if !ok {
		return Type{}, fmt.Errorf("missing attribute %q", AttrNDims)
	}
	for i := 1; i < len(n.Args); i++ {
		if t := n.Args[i].Type; t.DType != F32 || !t.Shape[0].IsConst() || t.Shape[0].Val < nd/2 {
			return Type{}, fmt.Errorf("%s must be f32 with at least n_dims/2 = %d values", name(i, t), nd/2)
		}
	}
	return Type{DType: F32, Shape: Sh(nd, p.Shape[0])}, nil
}

func init() {
	MustRegister(OpInfo{Name: OpRope, Attrs: ropeAttrNames, MinArgs: 2, MaxArgs: 3, Inplace: true, InplaceAny: true, Infer: unaryFloat,
		Doc: "rope(x, pos, freq_factors?){n_dims, mode, freq_base, freq_scale, ...}: rotary position embedding (ggml_rope_ext)",
		Check: func(n *Node) error {
			if err := CheckRopeAttrs(n, rowLength(n.Args[0].Type), ropeAngleAttrs...); err != nil {
				return err
			}
			p := n.Args[1].Type
			if p.DType != I32 {
				return fmt.Errorf("positions must be i32, got %s", p.DType)
			}
			if !p.Shape[0].Equal(n.Args[0].Type.Shape[2]) {
				return fmt.Errorf("%s positions for %s rows", p.Shape[0], n.Args[0].Type.Shape[2])
			}
			return nil
		}})
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
		Check: func(n *Node) error { return ropeCheck(n, AttrNDims, AttrMode) },
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
		Check: func(n *Node) error { return ropeCheck(n, AttrNDims, AttrMode) },
	})
	MustRegister(OpInfo{Name: OpRopeTheta, Attrs: []string{"n_dims", "freq_base"}, Fused: true,
		Doc: "rope_theta(){n_dims, freq_base}: f32[n_dims/2], theta_scale^i with theta_scale = freq_base^(-2/n_dims), each power the float32 product of the previous one and theta_scale (a constant once folded)",
		Infer: func(n *Node) (Type, error) {
			nd, ok := n.Attrs.Int(AttrNDims)
			if !ok || nd <= 0 || nd%2 != 0 {
				return Type{}, fmt.Errorf("n_dims must be a positive even integer")
			}
			return T(F32, nd/2), nil
		},
		Check: func(n *Node) error {
			if b, ok := n.Attrs.Float(AttrFreqBase); !ok || !(b > 0) {
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
		Check: func(n *Node) error { return ropeCheck(n, AttrNDims, AttrMode) },
	})
}
