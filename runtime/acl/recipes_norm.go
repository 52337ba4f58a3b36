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

func rmsNorm(b *builder) error {
	if err := b.inputs(1); err != nil {
		return err
	}
	x, y := b.k.Inputs[0], b.k.Output
	xt, err := b.desc("x", x, 4)
	if err != nil {
		return err
	}
	yt, err := b.desc("y", y, 4)
	if err != nil {
		return err
	}
	if x.DType != ir.F32 {
		return b.unsupported("rms_norm of %s: the gamma table of ones is f32", x.DType)
	}
	ne0, rows := x.Ne[0], x.Ne[1]*x.Ne[2]*x.Ne[3]
	ones, err := b.table(fmt.Sprintf("ones_f32[%d]", ne0), onesF32(ne0))
	if err != nil {
		return err
	}
	gt, err := b.tensor(C.ACL_FLOAT, []int64{ne0}, []int64{1}, 0, ones)
	if err != nil {
		return err
	}
	// rstd lands at the start of the workspace, as the lowering plans it.
	rstd, err := b.temp("rstd", 4*rows, 4)
	if err != nil {
		return err
	}
	rshape := []int64{x.Ne[3], x.Ne[2], x.Ne[1], 1}
	rt, err := b.tensor(C.ACL_FLOAT, rshape, contiguous(rshape), 0, rstd)
	if err != nil {
		return err
	}
	a := tensors(xt, gt, yt, rt)
	a.f[0] = C.double(b.attrF("eps", 1e-6))
	b.call(C.IRT_RMSNORM, a)
	return nil
}

func (b *builder) rstd(x device.TensorDesc) (C.uintptr_t, error) {
	rows := x.Ne[1] * x.Ne[2] * x.Ne[3]
	p, err := b.temp("rstd", 4*rows, 4)
	if err != nil {
		return 0, err
	}
	shape := []int64{x.Ne[3], x.Ne[2], x.Ne[1], 1}
	return b.tensor(C.ACL_FLOAT, shape, contiguous(shape), 0, p)
}

func rmsNormMul(b *builder) error {
	if err := b.inputs(2); err != nil {
		return err
	}
	x, w, y := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	xt, err := b.desc("x", x, 4)
	if err != nil {
		return err
	}
	gt, err := b.vector1D("gamma", w)
	if err != nil {
		return err
	}
	yt, err := b.desc("y", y, 4)
	if err != nil {
		return err
	}
	rt, err := b.rstd(x)
	if err != nil {
		return err
	}
	a := tensors(xt, gt, yt, rt)
	a.f[0] = C.double(b.attrF("eps", 1e-6))
	b.call(C.IRT_RMSNORM, a)
	return nil
}

// addRMSNormMul: the output is f32[a0,a1,a2,2]; slot 0 of dim 3 receives
// rms_norm(a+b)·w, slot 1 the sum a+b.
func addRMSNormMul(b *builder) error {
	if err := b.inputs(3); err != nil {
		return err
	}
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
	var ts [6]C.uintptr_t
	var err error
	for i, d := range []struct {
		role string
		t    device.TensorDesc
	}{{"x1", x1}, {"x2", x2}} {
		if ts[i], err = b.desc(d.role, d.t, 4); err != nil {
			return err
		}
	}
	if ts[2], err = b.vector1D("gamma", w); err != nil {
		return err
	}
	if ts[3], err = b.desc("yOut", slot(0), 4); err != nil {
		return err
	}
	if ts[4], err = b.rstd(x1); err != nil {
		return err
	}
	if ts[5], err = b.desc("xOut", slot(1), 4); err != nil {
		return err
	}
	a := tensors(ts[:]...)
	a.f[0] = C.double(b.attrF("eps", 1e-6))
	b.call(C.IRT_ADDRMSNORM, a)
	return nil
}
