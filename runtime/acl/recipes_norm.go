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

// The norm family: rms_norm, rms_norm_mul and add_rms_norm_mul (the
// table of recipes.go lists their calls).

func rmsNorm(b *builder) error {
	x, y := b.k.Inputs[0], b.k.Output
	xt := b.desc("x", x, 4)
	yt := b.desc("y", y, 4)
	if x.DType != ir.F32 {
		return b.unsupported("rms_norm of %s: the gamma table of ones is f32", x.DType)
	}
	ne0, rows := x.Ne[0], x.Ne[1]*x.Ne[2]*x.Ne[3]
	ones := b.table(fmt.Sprintf("ones_f32[%d]", ne0), onesF32(ne0))
	gt := b.tensor(C.ACL_FLOAT, []int64{ne0}, []int64{1}, 0, ones)
	// rstd lands at the start of the workspace, as the lowering plans it.
	rstd := b.temp("rstd", 4*rows, 4)
	rshape := []int64{x.Ne[3], x.Ne[2], x.Ne[1], 1}
	rt := b.tensor(C.ACL_FLOAT, rshape, contiguous(rshape), 0, rstd)
	b.rmsNorm(xt, gt, yt, rt)
	return b.err
}

// rmsNorm adds aclnnRmsNorm(x, gamma, eps, y, rstd) with the kernel's eps.
func (b *builder) rmsNorm(x, gamma, y, rstd C.uintptr_t) {
	a := tensors(x, gamma, y, rstd)
	a.f[0] = C.double(b.k.Attrs.Eps())
	b.call(C.IRT_RMSNORM, a)
}

// rstd is the rstd output of an rms norm of x, staged in the workspace.
func (b *builder) rstd(x device.TensorDesc) C.uintptr_t {
	rows := x.Ne[1] * x.Ne[2] * x.Ne[3]
	p := b.temp("rstd", 4*rows, 4)
	shape := []int64{x.Ne[3], x.Ne[2], x.Ne[1], 1}
	return b.tensor(C.ACL_FLOAT, shape, contiguous(shape), 0, p)
}

func rmsNormMul(b *builder) error {
	x, w, y := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	xt := b.desc("x", x, 4)
	gt := b.vector1D("gamma", w)
	yt := b.desc("y", y, 4)
	rt := b.rstd(x)
	b.rmsNorm(xt, gt, yt, rt)
	return b.err
}

// addRMSNormMul: the output is f32[a0,a1,a2,2]; slot 0 of dim 3 receives
// rms_norm(a+b)·w, slot 1 the sum a+b.
func addRMSNormMul(b *builder) error {
	x1, x2, w, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Inputs[2], b.k.Output
	if out.Ne[3] != 2 || x1.Ne[3] != 1 || x2.Ne != x1.Ne {
		return b.unsupported("add_rms_norm_mul of %v and %v into %v: equal shapes only", x1.Ne, x2.Ne, out.Ne)
	}
	slot := func(i int64) device.TensorDesc {
		t := out
		t.Ne[3] = 1
		t.Addr += device.Ptr(i * out.Nb[3])
		return t
	}
	a := tensors(b.desc("x1", x1, 4), b.desc("x2", x2, 4), b.vector1D("gamma", w), b.desc("yOut", slot(0), 4),
		b.rstd(x1), b.desc("xOut", slot(1), 4))
	a.f[0] = C.double(b.k.Attrs.Eps())
	b.call(C.IRT_ADDRMSNORM, a)
	return b.err
}
