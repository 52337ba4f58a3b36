package target

import "github.com/irtool/irtool/ir"

// The rules of the rotary position embedding ops (ir/rope.go).
func init() {
	mustRule(ir.OpRope, OpRule{NPU: npuRope, Traffic: streamTraffic(6), Workspace: NoWorkspace})
	mustRule(ir.OpRopeCache, OpRule{NPU: npuRopeCache, Traffic: streamTraffic(6), Workspace: NoWorkspace})
	mustRule(ir.OpRopeCacheTable, OpRule{NPU: npuRopeCacheTable, Traffic: streamTraffic(6), Workspace: NoWorkspace})
	// ggml-cann computes the theta-scale powers on the host and copies
	// them once (llama.cpp PRs #15912, #20747); here the fold pass
	// makes them a constant.
	mustRule(ir.OpRopeTheta, OpRule{CPUOnly: "rope_theta is computed on the host, as ggml-cann does (llama.cpp PRs #15912, #20747); the fold pass makes it a constant",
		Traffic: streamTraffic(1)})
	mustRule(ir.OpRopeApply, OpRule{NPU: npuRopeApply, Traffic: streamTraffic(6), Workspace: NoWorkspace})
	mustRule(ir.OpRopeSetRows, OpRule{NPU: ropeWrite("aclnnRotaryPositionEmbedding", true), Traffic: writeTraffic(6), Workspace: ropeWriteWorkspace})
	mustRule(ir.OpRopeApplySetRows, OpRule{NPU: ropeWrite("aclnnRotaryPositionEmbedding", false), Traffic: writeTraffic(6), Workspace: ropeWriteWorkspace})
}

// ropeHead checks the rope limits shared by the rope ops.
func ropeHead(x ir.Type) (Support, bool) {
	if x.DType != ir.F32 {
		// runtime/acl builds f32 cos/sin tables.
		return no("rope of %s: the cos/sin tables aclnnRotaryPositionEmbedding is given are f32, so x must be", x.DType), false
	}
	if d := x.Shape[0]; !d.IsConst() || d.Val > 896 {
		return no("rope head dim %s: the CANN backend takes at most 896", d), false
	}
	return Support{}, true
}

// ropeAttrs refuses the RoPE variants runtime/acl does not bind: a partial
// rotation (aclnnRotaryPositionEmbedding rotates the whole last dim),
// YaRN's ramp (ext_factor != 0) and a scaled magnitude (attn_factor != 1);
// x is the rotated tensor, or the table when its width is n_dims.
func ropeAttrs(n *ir.Node, x ir.Type) (Support, bool) {
	r := n.Attrs.Rope()
	nd := r.NDims
	if d := x.Shape[0]; d.IsConst() && d.Val != nd {
		return no("partial rope (n_dims %d of %d): aclnnRotaryPositionEmbedding rotates the whole head; the rest would need a split and a copy, not bound", nd, d.Val), false
	}
	if e := r.ExtFactor; e != 0 {
		return no("YaRN rope (ext_factor %g) is not bound: the ramp between interpolated and extrapolated angles has no aclnn operator here", e), false
	}
	if a := r.AttnFactor; a != 1 {
		return no("rope with attn_factor %g is not bound", a), false
	}
	return Support{}, true
}

// ropeWrite lowers rope + set_rows into the K cache: the rotation, then the
// row scatter (after a cast to an f16 cache).
func ropeWrite(rope string, angles bool) rule {
	return func(n *ir.Node) Support {
		if s, ok := ropeHead(n.Args[1].Type); !ok {
			return s
		}
		if s, ok := ropeAttrs(n, n.Args[1].Type); !ok {
			return s
		}
		var calls []string
		if angles {
			// rope_set_rows makes its cos and sin tables from the positions.
			calls = ropeAngleCalls(n, false)
		}
		switch dt := n.Args[0].Type.DType; dt {
		case ir.F32:
			return yes("aclnnInplaceIndexCopy", append(calls, rope, "aclnnInplaceIndexCopy")...)
		case ir.F16:
			return yes("aclnnInplaceIndexCopy", append(calls, rope, "aclnnCast", "aclnnInplaceIndexCopy")...)
		default:
			return no("KV write into %s: f32 and f16 only", dt)
		}
	}
}

func npuRope(n *ir.Node) Support {
	if s, ok := ropeHead(n.Args[0].Type); !ok {
		return s
	}
	if s, ok := ropeAttrs(n, n.Args[0].Type); !ok {
		return s
	}
	switch m := n.Attrs.Rope().Mode; m {
	case 0, 2: // normal (interleaved) and neox (half)
	default:
		return no("rope mode %d is not lowered", m)
	}
	// The cos and sin tables from the positions, then the rotation.
	return yes("aclnnRotaryPositionEmbedding", append(ropeAngleCalls(n, len(n.Args) > 2), "aclnnRotaryPositionEmbedding")...)
}

// ropeAngleCalls are the aclnn calls runtime/acl makes for the RoPE angles
// of a step from its positions, as ggml_rope_cache_init computes them:
// ggml's angle chain is precomputed on the host for every position below
// n_ctx as a constant table (lower/cann passes n_ctx to the kernel) and the
// step's rows are gathered (aclnnGatherV2, the i32 positions as its
// index), divided by the frequency factors [aclnnDiv], scaled by
// freq_scale when it is not 1 [aclnnMuls], then cos and sin.
func ropeAngleCalls(n *ir.Node, factors bool) []string {
	calls := []string{"aclnnGatherV2"}
	if factors {
		calls = append(calls, "aclnnDiv")
	}
	if n.Attrs.Rope().FreqScale != 1 {
		calls = append(calls, "aclnnMuls")
	}
	return append(calls, "aclnnCos", "aclnnSin")
}

// The RoPE cache built on the device from the positions (llama.cpp
// PRs #15912, #20747): the angle calls of ropeAngleCalls, then cos and sin
// copied into the IR table (two aclnnInplaceCopy). These are the calls the
// recipe launches, in order (runtime/acl's TestRecipeCallsMatchTarget
// checks them, and those of every other op it sees).
func npuRopeCache(n *ir.Node) Support {
	if s, ok := ropeAttrs(n, n.Type); !ok {
		return s
	}
	return stayWithRope(yes("aclnnSin", append(ropeAngleCalls(n, len(n.Args) > 1), "aclnnInplaceCopy", "aclnnInplaceCopy")...))
}

// stayWithRope keeps a RoPE table on the NPU. rope_apply's one
// aclnnRotaryPositionEmbedding reads the full-width cos and sin tables the
// NPU's rope_cache writes beside the IR table; a table made on the host
// and copied in would first be spread to full width, two more calls in
// every rope_apply and rope_apply_set_rows that reads it (runtime/acl's
// recipes), which neither those rules nor the move's cost (one copy)
// declare. So the partition never moves the table off the NPU.
func stayWithRope(s Support) Support {
	s.Stay = "rope_apply on the NPU reads the full-width cos/sin tables the NPU's rope_cache makes; a host-made table would cost two undeclared spread calls per use"
	return s
}

// ggml-cann's formulation: angles from positions and a table of
// inverse frequencies (a folded constant), then cos and sin.
func npuRopeCacheTable(n *ir.Node) Support {
	if s, ok := ropeAttrs(n, n.Type); !ok {
		return s
	}
	calls := []string{"aclnnCast", "aclnnMul"}
	if len(n.Args) > 2 {
		calls = append(calls, "aclnnDiv")
	}
	if n.Attrs.Rope().FreqScale != 1 {
		calls = append(calls, "aclnnMuls")
	}
	// The half-width angles spread over each pair's two columns, cos and
	// sin, then the IR table (runtime/acl's recipe).
	return stayWithRope(yes("aclnnSin", append(calls, "aclnnInplaceCopy", "aclnnCos", "aclnnSin", "aclnnInplaceCopy", "aclnnInplaceCopy")...))
}

// aclnnRotaryPositionEmbedding(x, cos, sin, mode) is this op.
func npuRopeApply(n *ir.Node) Support {
	if s, ok := ropeHead(n.Args[0].Type); !ok {
		return s
	}
	if s, ok := ropeAttrs(n, n.Args[0].Type); !ok {
		return s
	}
	return yes("aclnnRotaryPositionEmbedding")
}

// ropeWriteWorkspace: the rotated rows, and their f16 cast for an f16
// cache.
func ropeWriteWorkspace(n *ir.Node, _ Support) int64 {
	ws := 4 * elems(n.Args[1].Type)
	if n.Args[0].Type.DType == ir.F16 {
		ws += 2 * elems(n.Args[1].Type)
	}
	return ws
}
