//go:build cann

package acl

/*
#include "binding.h"
*/
import "C"

import (
	"fmt"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/device"
)

func binaryOp(b *builder, op C.int) error {
	if err := b.inputs(2); err != nil {
		return err
	}
	x, y, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	if !broadcastable(out, x) || !broadcastable(out, y) {
		return b.unsupported("%v and %v broadcast to %v only by repetition, which ACL broadcasting does not express", x.Ne, y.Ne, out.Ne)
	}
	xt, err := b.desc("self", x, 4)
	if err != nil {
		return err
	}
	yt, err := b.desc("other", y, 4)
	if err != nil {
		return err
	}
	ot, err := b.desc("out", out, 4)
	if err != nil {
		return err
	}
	a := tensors(xt, yt, ot)
	if op == C.IRT_ADD {
		if a.s, err = b.scalarF32(1); err != nil {
			return err
		}
	}
	b.call(op, a)
	return nil
}

func unaryOp(b *builder, op C.int) error {
	if err := b.inputs(1); err != nil {
		return err
	}
	xt, err := b.desc("self", b.k.Inputs[0], 4)
	if err != nil {
		return err
	}
	ot, err := b.desc("out", b.k.Output, 4)
	if err != nil {
		return err
	}
	b.call(op, tensors(xt, ot))
	return nil
}

func scaleOp(b *builder) error {
	if err := b.inputs(1); err != nil {
		return err
	}
	if bias := b.attrF("bias", 0); bias != 0 {
		return b.unsupported("scale with bias %g: aclnnMuls has none (the CANN backend requires bias 0)", bias)
	}
	xt, err := b.desc("self", b.k.Inputs[0], 4)
	if err != nil {
		return err
	}
	ot, err := b.desc("out", b.k.Output, 4)
	if err != nil {
		return err
	}
	a := tensors(xt, ot)
	if a.s, err = b.scalarF32(float32(b.attrF("scale", 1))); err != nil {
		return err
	}
	b.call(C.IRT_MULS, a)
	return nil
}

// copyOp: cont(x), cast(x) and cpy(src, dst) write operand 0 into the
// output (for cpy, the view of dst the result aliases).
func copyOp(b *builder) error {
	if err := b.inputs(1); err != nil {
		return err
	}
	src, dst := b.k.Inputs[0], b.k.Output
	if src.Ne != dst.Ne {
		// ggml_cont_2d and friends: the values are copied in the source's
		// element order into a contiguous destination of another shape,
		// which is the same memory as a contiguous tensor of the source's
		// shape.
		if prod(src.Ne[:]) != prod(dst.Ne[:]) || !dense(dst) {
			return b.unsupported("copy of %v into %v (strides %v): a reshaping copy needs a contiguous destination", src.Ne, dst.Ne, dst.Nb)
		}
		dst.Ne, dst.Nb = src.Ne, ir.ContiguousStrides(dst.DType, src.Ne)
	}
	st, err := b.desc("src", src, 4)
	if err != nil {
		return err
	}
	dt, err := b.desc("dst", dst, 4)
	if err != nil {
		return err
	}
	if src.DType == dst.DType {
		b.call(C.IRT_INPLACECOPY, tensors(dt, st))
		return nil
	}
	a := tensors(st, dt)
	ad, _ := aclDType(dst.DType)
	a.i[0] = C.int64_t(ad)
	b.call(C.IRT_CAST, a)
	return nil
}

// concat: aclnnCat of the operands along the dim (ACL order reverses the
// dims: ggml dim d is ACL dim 3-d of the 4-D descriptors).
func concat(b *builder) error {
	if err := b.inputs(1); err != nil {
		return err
	}
	if len(b.k.Inputs) > 16 {
		return b.unsupported("concat of %d tensors: a tensor list holds at most 16 here", len(b.k.Inputs))
	}
	d := b.attrI("dim", -1)
	if d < 0 || d > 3 {
		return b.fail(device.ACLErrParamInvalid, "concat dim %d", d)
	}
	ts := make([]C.uintptr_t, len(b.k.Inputs))
	for i, in := range b.k.Inputs {
		t, err := b.desc(fmt.Sprintf("tensors[%d]", i), in, 4)
		if err != nil {
			return err
		}
		ts[i] = t
	}
	l := C.irt_aclCreateTensorList(&ts[0], C.uint64_t(len(ts)))
	if l == 0 {
		return newError("aclCreateTensorList", b.p.label, C.ACLNN_ERR_PARAM_INVALID)
	}
	b.adopt(l, ts...)
	ot, err := b.desc("out", b.k.Output, 4)
	if err != nil {
		return err
	}
	a := tensors(ot)
	a.l[0] = l
	a.i[0] = C.int64_t(3 - d)
	b.call(C.IRT_CAT, a)
	return nil
}

func swiGLU(b *builder) error {
	if err := b.inputs(2); err != nil {
		return err
	}
	gate, up, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	gt, err := b.desc("self", gate, 4)
	if err != nil {
		return err
	}
	ot, err := b.desc("out", out, 4)
	if err != nil {
		return err
	}
	b.call(C.IRT_SILU, tensors(gt, ot))
	o2, err := b.desc("selfRef", out, 4)
	if err != nil {
		return err
	}
	ut, err := b.desc("other", up, 4)
	if err != nil {
		return err
	}
	b.call(C.IRT_INPLACEMUL, tensors(o2, ut))
	return nil
}

func geluOp(b *builder) error {
	if err := b.inputs(1); err != nil {
		return err
	}
	x, out := b.k.Inputs[0], b.k.Output
	if x.DType != ir.F32 || out.DType != ir.F32 {
		return b.unsupported("gelu of %s into %s: f32 only", x.DType, out.DType)
	}
	shape, _, ok := aclOrder(out)
	if !ok {
		return b.unsupported("gelu output strides %v", out.Nb)
	}
	n := prod(shape)
	h1, err := b.temp("f16 input", 2*n, 32)
	if err != nil {
		return err
	}
	h2, err := b.temp("f16 gelu", 2*n, 32)
	if err != nil {
		return err
	}
	xt, err := b.desc("self", x, 4)
	if err != nil {
		return err
	}
	st := contiguous(shape)
	f16 := func(p device.Ptr) (C.uintptr_t, error) { return b.tensor(C.ACL_FLOAT16, shape, st, 0, p) }
	t1, err := f16(h1)
	if err != nil {
		return err
	}
	b.cast(xt, t1, C.ACL_FLOAT16)
	t1in, err := f16(h1)
	if err != nil {
		return err
	}
	t2, err := f16(h2)
	if err != nil {
		return err
	}
	b.call(C.IRT_GELU, tensors(t1in, t2))
	t2in, err := f16(h2)
	if err != nil {
		return err
	}
	ot, err := b.desc("out", out, 4)
	if err != nil {
		return err
	}
	b.cast(t2in, ot, C.ACL_FLOAT)
	return nil
}
