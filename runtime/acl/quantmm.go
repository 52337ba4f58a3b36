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

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/device"
)

// The two arithmetics of a q4_0/q8_0 matmul (Options.QuantMatmul).
const (
	// QuantMatmulWQBMM runs aclnnWeightQuantBatchMatmulV2 on f16
	// activations against the int8/int4 weight with its f16 scales as the
	// antiquant scale (ggml-cann's path). Fast: the weight stays quantised
	// in HBM. Its logits differ from ggml-cpu's by up to a few 1e-2 of
	// max|logit| (docs/LOWERING.md).
	QuantMatmulWQBMM = "wqbmm"
	// QuantMatmulGGML computes ggml-cpu's arithmetic: the activations are
	// quantised to q8_0 on the device (per block of 32: d = amax/127 stored
	// as f16, q = round-half-even(x·127/amax)), replaced by f16(d)·q, and
	// multiplied in f32 by the weight dequantised once to f32. Both
	// operands are then exactly ggml's values, and the product differs
	// from ggml's integer dot only by the f32 summation order. The weight
	// takes 4 bytes per value in HBM.
	QuantMatmulGGML = "ggml"
)

// quantMode is the QuantMatmul in effect ("" means QuantMatmulWQBMM).
func (d *Device) quantMode() string {
	if d.opts.QuantMatmul == "" {
		return QuantMatmulWQBMM
	}
	return d.opts.QuantMatmul
}

func checkQuantMatmul(mode string) error {
	switch mode {
	case "", QuantMatmulWQBMM, QuantMatmulGGML:
		return nil
	}
	return fmt.Errorf("acl: Options.QuantMatmul %q: want %q or %q", mode, QuantMatmulWQBMM, QuantMatmulGGML)
}

// DequantizeRows expands an N×K q8_0 or q4_0 matrix of ggml blocks to
// float32, value = f16 scale × quant as ggml's dequantize_row_q8_0 and
// dequantize_row_q4_0 (quant − 8 for q4_0): exact in float32.
func DequantizeRows(t ir.DType, blocks []byte, K, N int64) ([]float32, error) {
	bs := t.TypeSize()
	if (t != ir.Q8_0 && t != ir.Q4_0) || K%32 != 0 || int64(len(blocks)) != N*K/32*bs {
		return nil, fmt.Errorf("dequantize %s: %d bytes for a %d×%d matrix", t, len(blocks), N, K)
	}
	out := make([]float32, N*K)
	for i := int64(0); i < N*K/32; i++ {
		blk := blocks[bs*i : bs*i+bs]
		d := gguf.F16ToF32(binary.LittleEndian.Uint16(blk))
		o := out[32*i : 32*i+32]
		if t == ir.Q8_0 {
			for j := range 32 {
				o[j] = d * float32(int8(blk[2+j]))
			}
			continue
		}
		for j := range 16 {
			o[j] = d * float32(int(blk[2+j]&0x0f)-8)
			o[j+16] = d * float32(int(blk[2+j]>>4)-8)
		}
	}
	return out, nil
}

// dequantised returns the f32 copy of quantised weight a (N rows of K),
// made on the host from the blocks read back and uploaded once per weight,
// as the repacked shadow of aclnnWeightQuantBatchMatmulV2 is.
func (b *builder) dequantised(a device.TensorDesc) (device.Ptr, error) {
	K, N := a.Ne[0], a.Ne[1]
	if K%32 != 0 {
		return 0, b.unsupported("%s weight with %d columns (not a multiple of 32)", a.DType, K)
	}
	blockBytes := a.DType.TypeSize()
	rowBytes := K / 32 * blockBytes
	if a.Nb[0] != blockBytes || a.Nb[1] != rowBytes {
		return 0, b.unsupported("non-contiguous %s weight (nb %v)", a.DType, a.Nb)
	}
	key := fmt.Sprintf("f32 %s %#x [%d,%d]", a.DType, uint64(a.Addr), K, N)
	n := b.n
	n.cmu.Lock()
	defer n.cmu.Unlock()
	if p, ok := n.tables[key]; ok {
		return p, nil
	}
	b.d.mu.Lock()
	strict := n.strict
	b.d.mu.Unlock()
	if strict > 0 {
		return 0, b.fail(device.ACLErrCaptureModeNotSupport,
			"the %s weight at %#x must be dequantised before its first captured use: launch it once eagerly (e.g. run prefill eagerly) first", a.DType, uint64(a.Addr))
	}
	blocks := make([]byte, N*rowBytes)
	if rc := C.irt_d2h(hostPtr(blocks), C.uintptr_t(a.Addr), C.size_t(len(blocks))); rc != 0 {
		return 0, newError("aclrtMemcpy", b.p.label, int32(rc))
	}
	vals, err := DequantizeRows(a.DType, blocks, K, N)
	if err != nil {
		return 0, b.unsupported("%v", err)
	}
	raw := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	off, _, err := n.pool.Alloc(int64(len(raw)))
	if err != nil {
		return 0, fmt.Errorf("acl: %s: dequantised weight: %w", b.p.label, err)
	}
	p := n.base + device.Ptr(off)
	if rc := C.irt_h2d(C.uintptr_t(p), hostPtr(raw), C.size_t(len(raw))); rc != 0 {
		n.pool.Free(off)
		return 0, newError("aclrtMemcpy", b.p.label, int32(rc))
	}
	b.d.bytesD2H.Add(int64(len(blocks)))
	b.d.bytesH2D.Add(int64(len(raw)))
	n.tables[key] = p
	return p, nil
}

// quantMulMatGGML is the QuantMatmulGGML recipe of a q4_0/q8_0 mul_mat:
// out[M, N] = q8_0(x)[M, K] · W[N, K]ᵀ. With x viewed as [M, K/32, 32]:
//
//	aclnnAbs(x) → t;  aclnnAmax(t, dim 2, keepDim) → amax
//	aclnnDiv(127, amax) → id;  aclnnGeScalar(id, +inf) → m;
//	aclnnInplaceMaskedFillScalar(id, m, 0)          (id = 0 where amax = 0)
//	aclnnDiv(amax, 127) → d;  aclnnCast(d → f16 → f32)  (the block's f16 scale)
//	aclnnMul(x, id) → t;  aclnnRound(t) → t (half to even);  aclnnInplaceMul(t, d)
//	aclnnMm(t, Wᵀ) → out, W the dequantised f32 weight, cubeMathType KEEP_DTYPE on 910B
//
// which is ggml-cpu's quantize_row_q8_0 (x86 AVX2: id = 127/amax, products
// rounded to nearest even) followed by the exact values of its q·d
// operands. A block whose 127/amax overflows (amax = 0, or below 127/FLT_MAX)
// gets id = 0, so q = 0 (ggml: only amax = 0).
func quantMulMatGGML(b *builder, a, x, out device.TensorDesc) error {
	K, N, M := a.Ne[0], a.Ne[1], x.Ne[1]
	if a.Ne[2] != 1 || a.Ne[3] != 1 || x.Ne[2] != 1 || x.Ne[3] != 1 || x.Ne[0] != K || x.DType != ir.F32 || out.DType != ir.F32 {
		return b.unsupported("%s mul_mat of a %v by %s %v: 2-D f32 activations only", a.DType, a.Ne, x.DType, x.Ne)
	}
	if K%32 != 0 {
		return b.unsupported("%s weight with %d columns (not a multiple of 32)", a.DType, K)
	}

	w, err := b.dequantised(a)
	if err != nil {
		return err
	}
	_, xst, ok := aclOrder(x)
	if !ok {
		return b.unsupported("activations %v", x.Nb)
	}
	xq, err := b.q8Activations([]int64{M}, []int64{xst[2]}, xst[3], K, x.Addr)
	if err != nil {
		return err
	}
	xt, err := b.tensor(C.ACL_FLOAT, []int64{M, K}, []int64{K, 1}, 0, xq)
	if err != nil {
		return err
	}
	wt, err := b.tensor(C.ACL_FLOAT, []int64{K, N}, []int64{1, K}, 0, w)
	if err != nil {
		return err
	}
	os, ost, _ := aclOrder(out)
	ot, err := b.tensor(C.ACL_FLOAT, os[2:], ost[2:], 0, out.Addr)
	if err != nil {
		return err
	}
	mm := tensors(xt, wt, ot)
	mm.i[0] = b.d.cubeMathType()
	b.call(C.IRT_MM, mm)
	return nil
}

// q8Activations adds the calls that replace f32 activations by their q8_0
// values (quantMulMatGGML's first ten calls) and returns the device scratch
// holding them as a contiguous f32 [rows…, K] matrix. lead and leadSt are
// the shape and strides (elements) of the row dims of x at addr, inner
// the stride of its K values.
func (b *builder) q8Activations(lead, leadSt []int64, inner, K int64, addr device.Ptr) (device.Ptr, error) {
	M := prod(lead)
	nb := K / 32
	L := len(lead)
	blk := append(append([]int64{}, lead...), nb, 32)
	xview := append(append([]int64{}, leadSt...), 32*inner, inner)
	per := append(append([]int64{}, lead...), nb, 1)
	perSt := contiguous(per)
	// Scratch: t f32[M·K], then per block amax, id, d (f32), d16 (f16), m (bool).
	align := func(v int64) int64 { return (v + 63) / 64 * 64 }
	offT, offAmax := int64(0), align(4*M*K)
	offID := offAmax + align(4*M*nb)
	offD := offID + align(4*M*nb)
	offD16 := offD + align(4*M*nb)
	offMask := offD16 + align(2*M*nb)
	size := offMask + align(M*nb)
	buf, err := b.buffer(fmt.Sprintf("q8_0 activations %v×%d", lead, K), size)
	if err != nil {
		return 0, err
	}
	c127, err := b.table("f32 127", f32Bytes(127))
	if err != nil {
		return 0, err
	}
	var ts [8]C.uintptr_t
	specs := []struct {
		dt        C.int
		shape, st []int64
		addr      device.Ptr
	}{
		{C.ACL_FLOAT, blk, xview, addr},                             // 0 x
		{C.ACL_FLOAT, blk, contiguous(blk), buf + device.Ptr(offT)}, // 1 t
		{C.ACL_FLOAT, per, perSt, buf + device.Ptr(offAmax)},        // 2 amax
		{C.ACL_FLOAT, []int64{1}, []int64{1}, c127},                 // 3 127
		{C.ACL_FLOAT, per, perSt, buf + device.Ptr(offID)},          // 4 id
		{C.ACL_BOOL, per, perSt, buf + device.Ptr(offMask)},         // 5 m
		{C.ACL_FLOAT, per, perSt, buf + device.Ptr(offD)},           // 6 d
		{C.ACL_FLOAT16, per, perSt, buf + device.Ptr(offD16)},       // 7 d16
	}
	for i, s := range specs {
		if ts[i], err = b.tensor(s.dt, s.shape, s.st, 0, s.addr); err != nil {
			return 0, err
		}
	}
	b.call(C.IRT_ABS, tensors(ts[0], ts[1]))
	dims, err := b.intArray(int64(L + 1))
	if err != nil {
		return 0, err
	}
	am := tensors(ts[1], ts[2])
	am.s, am.i[0] = dims, 1
	b.call(C.IRT_AMAX, am)
	b.call(C.IRT_DIV, tensors(ts[3], ts[2], ts[4]))
	ge := tensors(ts[4], ts[5])
	if ge.s, err = b.scalarF32(float32(math.Inf(1))); err != nil {
		return 0, err
	}
	b.call(C.IRT_GESCALAR, ge)
	fill := tensors(ts[4], ts[5])
	if fill.s, err = b.scalarF32(0); err != nil {
		return 0, err
	}
	b.call(C.IRT_MASKEDFILL, fill)
	b.call(C.IRT_DIV, tensors(ts[2], ts[3], ts[6]))
	b.cast(ts[6], ts[7], C.ACL_FLOAT16)
	b.cast(ts[7], ts[6], C.ACL_FLOAT)
	b.call(C.IRT_MUL, tensors(ts[0], ts[4], ts[1]))
	b.call(C.IRT_ROUND, tensors(ts[1], ts[1]))
	b.call(C.IRT_INPLACEMUL, tensors(ts[1], ts[6]))
	return buf + device.Ptr(offT), nil
}

func f32Bytes(vs ...float32) []byte {
	out := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}

func init() {
	opTable = append(opTable, []struct {
		id   C.int
		name string
	}{{C.IRT_ABS, "aclnnAbs"}, {C.IRT_AMAX, "aclnnAmax"}, {C.IRT_ROUND, "aclnnRound"}}...)
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
