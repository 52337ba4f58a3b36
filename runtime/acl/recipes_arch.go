//go:build cann

package acl

/*
#include "binding.h"
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/device"
)

// Recipes of the ops of the newer architectures (ir/op_arch.go), as
// ggml-cann's compute_forward runs the ggml ops they stand for
// (ggml/src/ggml-cann/aclnn_ops.cpp), with the departures noted:
//
//	gelu        aclnnCast(x → f16) aclnnGelu(f16) aclnnCast(→ f32): ggml's CPU
//	            GELU reads an F16 table at the F16-rounded input, so the
//	            device computes the function on the F16 input and rounds its
//	            result to F16 (ggml-cann calls aclnnGelu on the f32 tensor,
//	            which is not ggml-cpu's arithmetic)
//	div         aclnnDiv, broadcasting dims of size 1
//	sum_rows    aclnnReduceSum(dims {-1}, keepDims, FLOAT)
//	top_k       aclnnTopk(dim -1, largest, sorted) into f32 values and INT64
//	            indices in the workspace, aclnnCast(indices → INT32)
//	mul_mat_id  the chosen experts gathered on the device by their ids
//	            (aclnnGatherV2 over the stacked experts, every expert
//	            resident), then f32: one broadcasting aclnnMatmul;
//	            q8_0/q4_0: aclnnCast(b → f16), aclnnWeightQuantBatchMatmulV2
//	            per (token, slot) on the gathered quants and scales,
//	            aclnnCast(→ f32). The ids never leave the device, so a
//	            segment with routing in it is capturable.
//	swa_mask    aclnnCast(pos → f32), aclnnAdd(pos − (cell + window), alpha −1)
//	            against a constant table of cell + window, aclnnGeScalar(≥ 0),
//	            aclnnInplaceCopy(out ← mask),
//	            aclnnInplaceMaskedFillScalar(out rows of the tokens, −inf):
//	            the sliding-window mask made on the device from the step's
//	            positions (llama.cpp makes KQ_mask_swa on the host)
//	get_rows    of an f32 table batched over dim 2 (the router's
//	            probabilities picked by the ids): one aclnnGatherV2 per batch
func init() {
	opTable = append(opTable, []struct {
		id   C.int
		name string
	}{{C.IRT_GELU, "aclnnGelu"}, {C.IRT_REDUCESUM, "aclnnReduceSum"}, {C.IRT_TOPK, "aclnnTopk"},
		{C.IRT_GESCALAR, "aclnnGeScalar"}, {C.IRT_MASKEDFILL, "aclnnInplaceMaskedFillScalar"}}...)
	recipes[ir.OpGelu] = geluOp
	recipes[ir.OpDiv] = func(b *builder) error { return binaryOp(b, C.IRT_DIV) }
	recipes[ir.OpSumRows] = sumRows
	recipes[ir.OpTopK] = topK
	recipes[ir.OpMulMatID] = mulMatID
	recipes[ir.OpGetRows] = getRowsBatched
	recipes[ir.OpSWAMask] = swaMask
}

// intArray makes an aclIntArray owned by the prepared kernel.
func (b *builder) intArray(v ...int64) (C.uintptr_t, error) {
	a := C.irt_aclCreateIntArray((*C.int64_t)(unsafe.Pointer(&v[0])), C.uint64_t(len(v)))
	if a == 0 {
		return 0, newError("aclCreateIntArray", b.p.label, C.ACLNN_ERR_PARAM_INVALID)
	}
	b.p.arrays = append(b.p.arrays, a)
	return a, nil
}

// cast adds aclnnCast(src → dst), dst's dtype being to.
func (b *builder) cast(src, dst C.uintptr_t, to C.int) {
	a := tensors(src, dst)
	a.i[0] = C.int64_t(to)
	b.call(C.IRT_CAST, a)
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

// getRowsBatched is get_rows; an f32 table batched over dim 2 with one id
// column per batch (ggml's get_rows of [ne0, rows, T] by [n, T]) gathers
// each batch on its own.
func getRowsBatched(b *builder) error {
	if err := b.inputs(2); err != nil {
		return err
	}
	table, ids, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	if rows2D(table) || table.DType != ir.F32 || out.DType != ir.F32 || ids.DType != ir.I32 {
		return getRows(b)
	}
	T := table.Ne[2]
	if table.Ne[3] != 1 || ids.Ne[1] != T || ids.Ne[2] != 1 || ids.Ne[3] != 1 || out.Ne[2] != T || out.Ne[3] != 1 ||
		out.Ne[1] != ids.Ne[0] || out.Ne[0] != table.Ne[0] || table.Nb[0] != 4 || out.Nb[0] != 4 || ids.Nb[0] != 4 {
		return b.unsupported("get_rows of %v by %v into %v", table.Ne, ids.Ne, out.Ne)
	}
	n, ne0 := ids.Ne[0], table.Ne[0]
	for t := int64(0); t < T; t++ {
		tt, err := b.tensor(C.ACL_FLOAT, []int64{table.Ne[1], ne0}, []int64{table.Nb[1] / 4, 1}, t*table.Nb[2]/4, table.Addr)
		if err != nil {
			return err
		}
		it, err := b.tensor(C.ACL_INT32, []int64{n}, []int64{1}, t*ids.Nb[1]/4, ids.Addr)
		if err != nil {
			return err
		}
		ot, err := b.tensor(C.ACL_FLOAT, []int64{n, ne0}, []int64{out.Nb[1] / 4, 1}, t*out.Nb[2]/4, out.Addr)
		if err != nil {
			return err
		}
		b.call(C.IRT_GATHERV2, tensors(tt, it, ot))
	}
	return nil
}

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

// swaMask: out = mask, with −inf where token r (at position pos[r]) and KV
// cell c (holding position c, the session's KV layout) are window or more
// apart: pos[r] − (c + window) ≥ 0. Rows past the tokens (the mask's
// padding) are copied unchanged, as the CPU kernel does.
func swaMask(b *builder) error {
	if err := b.inputs(2); err != nil {
		return err
	}
	mask, pos, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	w := b.attrI("window", 0)
	nKV, R, T := mask.Ne[0], mask.Ne[1], pos.Ne[0]
	switch {
	case w < 1:
		return b.fail(device.ACLErrParamInvalid, "swa_mask window %d", w)
	case mask.DType != ir.F32 || out.DType != ir.F32 || pos.DType != ir.I32 || !rows2D(mask) || out.Ne != mask.Ne ||
		!rows2D(pos) || pos.Ne[1] != 1 || T > R || mask.Nb[0] != 4 || out.Nb[0] != 4:
		return b.unsupported("swa_mask of %s %v at %s %v", mask.DType, mask.Ne, pos.DType, pos.Ne)
	case nKV+w >= 1<<24:
		return b.unsupported("swa_mask over %d cells with window %d: positions beyond f32's exact integers", nKV, w)
	}
	cells := make([]byte, 4*nKV)
	for c := range nKV {
		binary.LittleEndian.PutUint32(cells[4*c:], math.Float32bits(float32(c+w)))
	}
	tab, err := b.table(fmt.Sprintf("swa cell+window f32[%d]+%d", nKV, w), cells)
	if err != nil {
		return err
	}
	pf, err := b.temp("f32 positions", 4*T, 32)
	if err != nil {
		return err
	}
	dist, err := b.temp("position distances", 4*T*nKV, 32)
	if err != nil {
		return err
	}
	far, err := b.temp("outside the window", T*nKV, 32)
	if err != nil {
		return err
	}
	pt, err := b.tensor(C.ACL_INT32, []int64{T, 1}, []int64{1, 1}, 0, pos.Addr)
	if err != nil {
		return err
	}
	pft, err := b.tensor(C.ACL_FLOAT, []int64{T, 1}, []int64{1, 1}, 0, pf)
	if err != nil {
		return err
	}
	b.cast(pt, pft, C.ACL_FLOAT)
	pin, err := b.tensor(C.ACL_FLOAT, []int64{T, 1}, []int64{1, 1}, 0, pf)
	if err != nil {
		return err
	}
	ct, err := b.tensor(C.ACL_FLOAT, []int64{1, nKV}, []int64{nKV, 1}, 0, tab)
	if err != nil {
		return err
	}
	dt, err := b.tensor(C.ACL_FLOAT, []int64{T, nKV}, []int64{nKV, 1}, 0, dist)
	if err != nil {
		return err
	}
	add := tensors(pin, ct, dt)
	if add.s, err = b.scalarF32(-1); err != nil {
		return err
	}
	b.call(C.IRT_ADD, add)
	din, err := b.tensor(C.ACL_FLOAT, []int64{T, nKV}, []int64{nKV, 1}, 0, dist)
	if err != nil {
		return err
	}
	ft, err := b.tensor(C.ACL_BOOL, []int64{T, nKV}, []int64{nKV, 1}, 0, far)
	if err != nil {
		return err
	}
	ge := tensors(din, ft)
	if ge.s, err = b.scalarF32(0); err != nil {
		return err
	}
	b.call(C.IRT_GESCALAR, ge)
	if out.Addr != mask.Addr || out.Nb != mask.Nb {
		ot, err := b.tensor(C.ACL_FLOAT, []int64{R, nKV}, []int64{out.Nb[1] / 4, 1}, 0, out.Addr)
		if err != nil {
			return err
		}
		mt, err := b.tensor(C.ACL_FLOAT, []int64{R, nKV}, []int64{mask.Nb[1] / 4, 1}, 0, mask.Addr)
		if err != nil {
			return err
		}
		b.call(C.IRT_INPLACECOPY, tensors(ot, mt))
	}
	orows, err := b.tensor(C.ACL_FLOAT, []int64{T, nKV}, []int64{out.Nb[1] / 4, 1}, 0, out.Addr)
	if err != nil {
		return err
	}
	fin, err := b.tensor(C.ACL_BOOL, []int64{T, nKV}, []int64{nKV, 1}, 0, far)
	if err != nil {
		return err
	}
	fill := tensors(orows, fin)
	if fill.s, err = b.scalarF32(float32(math.Inf(-1))); err != nil {
		return err
	}
	b.call(C.IRT_MASKEDFILL, fill)
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
