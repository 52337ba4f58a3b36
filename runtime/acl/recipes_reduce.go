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

func softMax(b *builder) error {
	if err := b.inputs(1); err != nil {
		return err
	}
	x, out := b.k.Inputs[0], b.k.Output
	if mb := b.attrF("max_bias", 0); mb != 0 {
		return b.unsupported("soft_max with ALiBi (max_bias %g) is not bound", mb)
	}
	scale := b.attrF("scale", 1)
	hasMask := len(b.k.Inputs) > 1
	cur, err := b.desc("self", x, 4)
	if err != nil {
		return err
	}
	if scale != 1 || hasMask {
		shape, _, _ := aclOrder(out)
		tmp, err := b.temp("scaled input", 4*prod(shape), 4)
		if err != nil {
			return err
		}
		tt, err := b.tensor(C.ACL_FLOAT, shape, contiguous(shape), 0, tmp)
		if err != nil {
			return err
		}
		if scale != 1 {
			a := tensors(cur, tt)
			if a.s, err = b.scalarF32(float32(scale)); err != nil {
				return err
			}
			b.call(C.IRT_MULS, a)
			if cur, err = b.tensor(C.ACL_FLOAT, shape, contiguous(shape), 0, tmp); err != nil {
				return err
			}
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
			mt, err := b.desc("mask", m, 4)
			if err != nil {
				return err
			}
			dst, err := b.tensor(C.ACL_FLOAT, shape, contiguous(shape), 0, tmp)
			if err != nil {
				return err
			}
			a := tensors(cur, mt, dst)
			if a.s, err = b.scalarF32(1); err != nil {
				return err
			}
			b.call(C.IRT_ADD, a)
			if cur, err = b.tensor(C.ACL_FLOAT, shape, contiguous(shape), 0, tmp); err != nil {
				return err
			}
		}
	}
	ot, err := b.desc("out", out, 4)
	if err != nil {
		return err
	}
	a := tensors(cur, ot)
	a.i[0] = 3
	b.call(C.IRT_SOFTMAX, a)
	return nil
}

func sumRows(b *builder) error {
	if err := b.inputs(1); err != nil {
		return err
	}
	x, out := b.k.Inputs[0], b.k.Output
	if x.DType != ir.F32 || out.DType != ir.F32 {
		return b.unsupported("sum_rows of %s: f32 only", x.DType)
	}
	xt, err := b.desc("self", x, 4)
	if err != nil {
		return err
	}
	ot, err := b.desc("out", out, 4)
	if err != nil {
		return err
	}
	dims, err := b.intArray(3)
	if err != nil {
		return err
	}
	a := tensors(xt, ot)
	a.s = dims
	a.i[0], a.i[1] = 1, C.ACL_FLOAT
	b.call(C.IRT_REDUCESUM, a)
	return nil
}

func topK(b *builder) error {
	if err := b.inputs(1); err != nil {
		return err
	}
	x, out := b.k.Inputs[0], b.k.Output
	k := b.attrI("k", 0)
	if x.DType != ir.F32 || out.DType != ir.I32 || k < 1 || k > x.Ne[0] || out.Ne[0] != k {
		return b.unsupported("top_k{k=%d} of %s %v into %s %v", k, x.DType, x.Ne, out.DType, out.Ne)
	}
	xt, err := b.desc("self", x, 4)
	if err != nil {
		return err
	}
	shape, _, _ := aclOrder(out)
	n := prod(shape)
	vals, err := b.temp("top-k values", 4*n, 32)
	if err != nil {
		return err
	}
	idx, err := b.temp("top-k indices", 8*n, 32)
	if err != nil {
		return err
	}
	st := contiguous(shape)
	vt, err := b.tensor(C.ACL_FLOAT, shape, st, 0, vals)
	if err != nil {
		return err
	}
	it, err := b.tensor(C.ACL_INT64, shape, st, 0, idx)
	if err != nil {
		return err
	}
	a := tensors(xt, vt, it)
	a.i[0], a.i[1], a.i[2], a.i[3] = C.int64_t(k), 3, 1, 1
	b.call(C.IRT_TOPK, a)
	iin, err := b.tensor(C.ACL_INT64, shape, st, 0, idx)
	if err != nil {
		return err
	}
	ot, err := b.desc("out", out, 4)
	if err != nil {
		return err
	}
	b.cast(iin, ot, C.ACL_INT32)
	return nil
}
