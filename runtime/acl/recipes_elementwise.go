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

// The elementwise family: add, mul, div, scale, silu, gelu, swiglu, the
// copies (cont, cpy, cast) and concat (the table of recipes.go lists their
// calls).

func binaryOp(b *builder, op C.int) error {
	x, y, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	if !broadcastable(out, x) || !broadcastable(out, y) {
		return b.unsupported("%v and %v broadcast to %v only by repetition, which ACL broadcasting does not express", x.Ne, y.Ne, out.Ne)
	}
	xt, yt, ot := b.desc("self", x, 4), b.desc("other", y, 4), b.desc("out", out, 4)
	if op == C.IRT_ADD {
		b.add(xt, yt, ot, 1)
	} else {
		b.op(op, xt, yt, ot)
	}
	return b.err
}

func unaryOp(b *builder, op C.int) error {
	b.op(op, b.desc("self", b.k.Inputs[0], 4), b.desc("out", b.k.Output, 4))
	return b.err
}

func scaleOp(b *builder) error {
	if bias := b.k.Attrs.Bias(); bias != 0 {
		return b.unsupported("scale with bias %g: aclnnMuls has none (the CANN backend requires bias 0)", bias)
	}
	b.muls(b.desc("self", b.k.Inputs[0], 4), b.desc("out", b.k.Output, 4), float32(b.k.Attrs.Scale()))
	return b.err
}

// copyOp: cont(x), cast(x) and cpy(src, dst) write operand 0 into the
// output (for cpy, the view of dst the result aliases).
func copyOp(b *builder) error {
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
	st, dt := b.desc("src", src, 4), b.desc("dst", dst, 4)
	if src.DType == dst.DType {
		b.op(C.IRT_INPLACECOPY, dt, st)
	} else {
		ad, _ := aclDType(dst.DType)
		b.cast(st, dt, ad)
	}
	return b.err
}

// concat: aclnnCat of the operands along the dim (ACL order reverses the
// dims: ggml dim d is ACL dim 3-d of the 4-D descriptors).
func concat(b *builder) error {
	if len(b.k.Inputs) > 16 {
		return b.unsupported("concat of %d tensors: a tensor list holds at most 16 here", len(b.k.Inputs))
	}
	d, ok := b.k.Attrs.Int(ir.AttrDim)
	if !ok || d < 0 || d > 3 {
		return b.fail(device.ACLErrParamInvalid, "concat dim %d", d)
	}
	ts := make([]C.uintptr_t, len(b.k.Inputs))
	for i, in := range b.k.Inputs {
		ts[i] = b.desc(fmt.Sprintf("tensors[%d]", i), in, 4)
	}
	a := tensors(b.desc("out", b.k.Output, 4))
	a.l[0] = b.tensorList(ts...)
	a.i[0] = C.int64_t(3 - d)
	b.call(C.IRT_CAT, a)
	return b.err
}

func swiGLU(b *builder) error {
	gate, up, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	b.op(C.IRT_SILU, b.desc("self", gate, 4), b.desc("out", out, 4))
	b.op(C.IRT_INPLACEMUL, b.desc("selfRef", out, 4), b.desc("other", up, 4))
	return b.err
}

func geluOp(b *builder) error {
	x, out := b.k.Inputs[0], b.k.Output
	if x.DType != ir.F32 || out.DType != ir.F32 {
		return b.unsupported("gelu of %s into %s: f32 only", x.DType, out.DType)
	}
	shape, _, ok := aclOrder(out)
	if !ok {
		return b.unsupported("gelu output strides %v", out.Nb)
	}
	n := prod(shape)
	h1 := b.temp("f16 input", 2*n, 32)
	h2 := b.temp("f16 gelu", 2*n, 32)
	xt := b.desc("self", x, 4)
	st := contiguous(shape)
	f16 := func(p device.Ptr) C.uintptr_t { return b.tensor(C.ACL_FLOAT16, shape, st, 0, p) }
	b.cast(xt, f16(h1), C.ACL_FLOAT16)
	b.op(C.IRT_GELU, f16(h1), f16(h2))
	b.cast(f16(h2), b.desc("out", out, 4), C.ACL_FLOAT)
	return b.err
}
