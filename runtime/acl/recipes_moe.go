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

// mulMatID: out[:, s, t] = as[:, :, ids[s, t]] · b[:, s % b.ne1, t].
// The P = n_used·T chosen experts are gathered, in (t, s) order, from the
// stacked experts by the ids as the device holds them.
func mulMatID(b *builder) error {
	if err := b.inputs(3); err != nil {
		return err
	}
	as, x, ids, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Inputs[2], b.k.Output
	K, N, E := as.Ne[0], as.Ne[1], as.Ne[2]
	nUsed, T, ne11 := ids.Ne[0], ids.Ne[1], x.Ne[1]
	P := nUsed * T
	switch {
	case as.Ne[3] != 1 || x.Ne[0] != K || x.Ne[2] != T || x.Ne[3] != 1 || (ne11 != 1 && ne11 != nUsed):
		return b.unsupported("mul_mat_id of %v by %v with ids %v", as.Ne, x.Ne, ids.Ne)
	case x.DType != ir.F32 || out.DType != ir.F32 || ids.DType != ir.I32 || !dense(ids) || !dense(out) || x.Nb[0] != 4:
		return b.unsupported("mul_mat_id operands %s/%s/%s: f32 activations, dense i32 ids and f32 output", x.DType, ids.DType, out.DType)
	case out.Ne[0] != N || out.Ne[1] != nUsed || out.Ne[2] != T:
		return b.fail(device.ACLErrParamInvalid, "mul_mat_id output %v, want [%d %d %d]", out.Ne, N, nUsed, T)
	}
	idt, err := b.tensor(C.ACL_INT32, []int64{P}, []int64{1}, 0, ids.Addr)
	if err != nil {
		return err
	}
	gather := func(dt C.int, rows, width int64, src device.Ptr, role string, es int64) (device.Ptr, error) {
		g, err := b.temp(role, P*width*es, 32)
		if err != nil {
			return 0, err
		}
		st, err := b.tensor(dt, []int64{rows, width}, []int64{width, 1}, 0, src)
		if err != nil {
			return 0, err
		}
		gt, err := b.tensor(dt, []int64{P, width}, []int64{width, 1}, 0, g)
		if err != nil {
			return 0, err
		}
		idx := idt
		if len(b.p.steps) > 0 {
			if idx, err = b.tensor(C.ACL_INT32, []int64{P}, []int64{1}, 0, ids.Addr); err != nil {
				return 0, err
			}
		}
		b.call(C.IRT_GATHERV2, tensors(st, idx, gt))
		return g, nil
	}
	xs := x.Nb[1] / 4
	if ne11 == 1 {
		xs = K
	}
	switch as.DType {
	case ir.F32:
		if !dense(as) {
			return b.unsupported("mul_mat_id over non-contiguous experts (nb %v)", as.Nb)
		}
		g, err := gather(C.ACL_FLOAT, E, N*K, as.Addr, "gathered experts", 4)
		if err != nil {
			return err
		}
		self, err := b.tensor(C.ACL_FLOAT, []int64{T, ne11, 1, K}, []int64{x.Nb[2] / 4, xs, K, 1}, 0, x.Addr)
		if err != nil {
			return err
		}
		return b.expertMatmul(self, g, out, T, nUsed, K, N)
	case ir.Q8_0, ir.Q4_0:
		if b.d.quantMode() == QuantMatmulGGML {
			return mulMatIDGGML(b, as, x, ids, out, xs)
		}
	default:
		return b.unsupported("mul_mat_id with %s experts: f32, q8_0 and q4_0 only", as.DType)
	}
	// The experts as one 2-D weight of N·E rows: the shadow holds expert
	// e's quants and scales as contiguous blocks.
	flat := as
	flat.Ne = [4]int64{K, N * E, 1, 1}
	flat.Nb[2], flat.Nb[3] = flat.Nb[1]*N*E, flat.Nb[1]*N*E
	if as.Nb[2] != as.Nb[1]*N {
		return b.unsupported("mul_mat_id over non-contiguous %s experts (nb %v)", as.DType, as.Nb)
	}
	w, err := b.shadow(flat)
	if err != nil {
		return err
	}
	qb, sw := quantBytes(as.DType, K*N), K*N/32
	gq, err := gather(C.ACL_INT8, E, qb, w.quants, "gathered quants", 1)
	if err != nil {
		return err
	}
	gs, err := gather(C.ACL_FLOAT16, E, sw, w.scales, "gathered scales", 2)
	if err != nil {
		return err
	}
	x16, err := b.temp("f16 input", 2*T*ne11*K, 32)
	if err != nil {
		return err
	}
	y16, err := b.temp("f16 output", 2*P*N, 32)
	if err != nil {
		return err
	}
	xt, err := b.tensor(C.ACL_FLOAT, []int64{T, ne11, K}, []int64{x.Nb[2] / 4, xs, 1}, 0, x.Addr)
	if err != nil {
		return err
	}
	x16t, err := b.tensor(C.ACL_FLOAT16, []int64{T, ne11, K}, []int64{ne11 * K, K, 1}, 0, x16)
	if err != nil {
		return err
	}
	b.cast(xt, x16t, C.ACL_FLOAT16)
	wd := C.int(C.ACL_INT8)
	if as.DType == ir.Q4_0 {
		wd = C.ACL_INT4
	}
	for p := int64(0); p < P; p++ {
		t, s := p/nUsed, p%nUsed
		row := t*ne11 + s%ne11
		xin, err := b.tensor(C.ACL_FLOAT16, []int64{1, K}, []int64{K, 1}, 0, x16+device.Ptr(2*row*K))
		if err != nil {
			return err
		}
		wt, err := b.tensor(wd, []int64{K, N}, []int64{1, K}, 0, gq+device.Ptr(p*qb))
		if err != nil {
			return err
		}
		sc, err := b.tensor(C.ACL_FLOAT16, []int64{K / 32, N}, []int64{1, K / 32}, 0, gs+device.Ptr(2*p*sw))
		if err != nil {
			return err
		}
		yt, err := b.tensor(C.ACL_FLOAT16, []int64{1, N}, []int64{N, 1}, 0, y16+device.Ptr(2*p*N))
		if err != nil {
			return err
		}
		mm := tensors(xin, wt, sc, yt)
		mm.i[0] = 32
		b.call(C.IRT_WQBMM, mm)
	}
	yin, err := b.tensor(C.ACL_FLOAT16, []int64{T, nUsed, N}, []int64{nUsed * N, N, 1}, 0, y16)
	if err != nil {
		return err
	}
	ot, err := b.tensor(C.ACL_FLOAT, []int64{T, nUsed, N}, []int64{out.Nb[2] / 4, out.Nb[1] / 4, 1}, 0, out.Addr)
	if err != nil {
		return err
	}
	b.cast(yin, ot, C.ACL_FLOAT)
	return nil
}

// expertMatmul multiplies the activation view self [T, ne11, 1, K] by the
// gathered f32 experts g [T, nUsed, K, N] (one matrix per token and slot,
// read transposed) into out's [T, nUsed, 1, N] rows: one aclnnMatmul,
// broadcasting self's ne11 over the slots.
func (b *builder) expertMatmul(self C.uintptr_t, g device.Ptr, out device.TensorDesc, T, nUsed, K, N int64) error {
	mat, err := b.tensor(C.ACL_FLOAT, []int64{T, nUsed, K, N}, []int64{nUsed * N * K, N * K, 1, K}, 0, g)
	if err != nil {
		return err
	}
	ot, err := b.tensor(C.ACL_FLOAT, []int64{T, nUsed, 1, N}, []int64{out.Nb[2] / 4, out.Nb[1] / 4, N, 1}, 0, out.Addr)
	if err != nil {
		return err
	}
	a := tensors(self, mat, ot)
	a.i[0] = b.d.cubeMathType()
	b.call(C.IRT_MATMUL, a)
	return nil
}

// mulMatIDGGML is mul_mat_id over q4_0/q8_0 experts with QuantMatmulGGML:
// the activations' q8_0 values (q8Activations), the experts dequantised
// once to f32 (as one [E·N, K] matrix), the chosen experts gathered
// (aclnnGatherV2) and one f32 aclnnMatmul, as the f32 experts' recipe.
func mulMatIDGGML(b *builder, as, x, ids, out device.TensorDesc, xs int64) error {
	K, N, E := as.Ne[0], as.Ne[1], as.Ne[2]
	nUsed, T, ne11 := ids.Ne[0], ids.Ne[1], x.Ne[1]
	P := nUsed * T
	if K%32 != 0 {
		return b.unsupported("%s experts with %d columns (not a multiple of 32)", as.DType, K)
	}
	if as.Nb[2] != as.Nb[1]*N {
		return b.unsupported("mul_mat_id over non-contiguous %s experts (nb %v)", as.DType, as.Nb)
	}
	flat := as
	flat.Ne = [4]int64{K, N * E, 1, 1}
	flat.Nb[2], flat.Nb[3] = flat.Nb[1]*N*E, flat.Nb[1]*N*E
	w, err := b.dequantised(flat)
	if err != nil {
		return err
	}
	xq, err := b.q8Activations([]int64{T, ne11}, []int64{x.Nb[2] / 4, xs}, 1, K, x.Addr)
	if err != nil {
		return err
	}
	g, err := b.buffer(fmt.Sprintf("gathered f32 experts [%d,%d]", P, N*K), 4*P*N*K)
	if err != nil {
		return err
	}
	idt, err := b.tensor(C.ACL_INT32, []int64{P}, []int64{1}, 0, ids.Addr)
	if err != nil {
		return err
	}
	st, err := b.tensor(C.ACL_FLOAT, []int64{E, N * K}, []int64{N * K, 1}, 0, w)
	if err != nil {
		return err
	}
	gt, err := b.tensor(C.ACL_FLOAT, []int64{P, N * K}, []int64{N * K, 1}, 0, g)
	if err != nil {
		return err
	}
	b.call(C.IRT_GATHERV2, tensors(st, idt, gt))
	self, err := b.tensor(C.ACL_FLOAT, []int64{T, ne11, 1, K}, []int64{ne11 * K, K, K, 1}, 0, xq)
	if err != nil {
		return err
	}
	return b.expertMatmul(self, g, out, T, nUsed, K, N)
}
