//go:build cann

package acl

/*
#include "binding.h"
*/
import "C"

import (
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/device"
)

// The reduction family: soft_max, sum_rows and top_k (the table of
// recipes.go lists their calls).

func softMax(b *builder) error {
	x, out := b.k.Inputs[0], b.k.Output
	if mb := b.k.Attrs.MaxBias(); mb != 0 {
		return b.unsupported("soft_max with ALiBi (max_bias %g) is not bound", mb)
	}
	scale := b.k.Attrs.Scale()
	hasMask := len(b.k.Inputs) > 1
	cur := b.desc("self", x, 4)
	if scale != 1 || hasMask {
		shape, _, _ := aclOrder(out)
		tmp := b.temp("scaled input", 4*prod(shape), 4)
		staged := func() C.uintptr_t { return b.tensor(C.ACL_FLOAT, shape, contiguous(shape), 0, tmp) }
		tt := staged()
		if scale != 1 {
			b.muls(cur, tt, float32(scale))
			cur = staged()
		}
		if hasMask {
			m := b.k.Inputs[1]
			// The mask may be padded beyond the rows of x (GGML_KQ_MASK_PAD).
			if m.Ne[0] != x.Ne[0] || m.Ne[1] < x.Ne[1] {
				return b.fail(device.ACLErrParamInvalid, "mask %v does not cover x %v", m.Ne, x.Ne)
			}
			m.Ne[1] = x.Ne[1]
			if !broadcastable(x, m) {
				return b.unsupported("mask %v broadcasts over %v only by repetition", m.Ne, x.Ne)
			}
			b.add(cur, b.desc("mask", m, 4), staged(), 1)
			cur = staged()
		}
	}
	b.withDim(C.IRT_SOFTMAX, 3, cur, b.desc("out", out, 4))
	return b.err
}

func sumRows(b *builder) error {
	x, out := b.k.Inputs[0], b.k.Output
	if x.DType != ir.F32 || out.DType != ir.F32 {
		return b.unsupported("sum_rows of %s: f32 only", x.DType)
	}
	a := tensors(b.desc("self", x, 4), b.desc("out", out, 4))
	a.s = b.intArray(3)
	a.i[0], a.i[1] = 1, C.ACL_FLOAT
	b.call(C.IRT_REDUCESUM, a)
	return b.err
}

func topK(b *builder) error {
	x, out := b.k.Inputs[0], b.k.Output
	k := b.k.Attrs.K()
	if x.DType != ir.F32 || out.DType != ir.I32 || k < 1 || k > x.Ne[0] || out.Ne[0] != k {
		return b.unsupported("top_k{k=%d} of %s %v into %s %v", k, x.DType, x.Ne, out.DType, out.Ne)
	}
	xt := b.desc("self", x, 4)
	shape, _, _ := aclOrder(out)
	n := prod(shape)
	vals := b.temp("top-k values", 4*n, 32)
	idx := b.temp("top-k indices", 8*n, 32)
	st := contiguous(shape)
	a := tensors(xt, b.tensor(C.ACL_FLOAT, shape, st, 0, vals), b.tensor(C.ACL_INT64, shape, st, 0, idx))
	a.i[0], a.i[1], a.i[2], a.i[3] = C.int64_t(k), 3, 1, 1
	b.call(C.IRT_TOPK, a)
	b.cast(b.tensor(C.ACL_INT64, shape, st, 0, idx), b.desc("out", out, 4), C.ACL_INT32)
	return b.err
}
