//go:build cann

package acl

/*
#include "binding.h"
*/
import "C"

import (
	"fmt"
	"math"

	"github.com/irtool/irtool/gguf/wqconv"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/acl/layout"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/target"
)

// The matmul family: mul_mat (f32, f16, and the quantised types of
// quantTypes by the arithmetic of Options.QuantMatmul) and mul_mat_add (the table of
// recipes.go lists their calls).

// mulMat: ggml's mul_mat(a, b) is out[n, m] = Σ_k a[k, n]·b[k, m] per
// batch, with a's batches broadcast over b's by repetition (GQA: b batch i
// reads a batch i / r). In ACL order that is out = b @ aᵀ, aᵀ being a
// strided view of a.
func mulMat(b *builder) error {
	a, x, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	if !rows2D(a) && a.DType.Quantized() {
		return b.unsupported("%s mul_mat with a batched weight %v", a.DType, a.Ne)
	}
	if a.DType.Quantized() {
		if !recipeTakes(b.k.Op, a.DType) {
			return b.unsupported("%s with %s weights: no recipe for the type", b.k.Op, a.DType)
		}
		if b.d.quantMode() == QuantMatmulGGML && layout.KQTypes[a.DType] {
			return quantMulMatK(b, a, x, out)
		}
		if b.d.quantMode() == QuantMatmulGGML && layout.Q8Types[a.DType] {
			return quantMulMatQ8(b, a, x, out)
		}
		return quantMulMat(b, a, x, out)
	}
	as, ast, ok1 := aclOrder(a)
	xs, xst, ok2 := aclOrder(x)
	os, ost, ok3 := aclOrder(out)
	ad, okA := aclDType(a.DType)
	xd, okX := aclDType(x.DType)
	od, okO := aclDType(out.DType)
	if !ok1 || !ok2 || !ok3 || !okA || !okX || !okO {
		return b.unsupported("mul_mat of %s by %s", a.DType, x.DType)
	}
	// ggml multiplies an f16 matrix by f32 activations in f16: the
	// activations are converted to f16 (ggml-cpu's vec_dot_type of F16) and
	// the products accumulated in f32. The recipe does the same with
	// aclnnCast into device scratch and an f16 × f16 product with an f32
	// result, which aclnnMatmul allows; multiplying the f32 activations
	// directly would be more precise than the reference and so differ from
	// it.
	xAddr := x.Addr
	if a.DType == ir.F16 && x.DType == ir.F32 {
		n := prod(xs)
		scratch := b.temp("f16 activations", 2*n, 32) // planned: target's matmul workspace
		st := contiguous(xs)
		b.cast(b.tensor(C.ACL_FLOAT, xs, xst, 0, x.Addr), b.tensor(C.ACL_FLOAT16, xs, st, 0, scratch), C.ACL_FLOAT16)
		xst, xd, xAddr = st, C.ACL_FLOAT16, scratch
	}
	// Transposed weight: [.., N, K] -> [.., K, N].
	ats := []int64{as[0], as[1], as[3], as[2]}
	atst := []int64{ast[0], ast[1], ast[3], ast[2]}
	B3, B2, B3a, B2a := xs[0], xs[1], as[0], as[1]
	if B3a == 0 || B2a == 0 || B3%B3a != 0 || B2%B2a != 0 {
		return b.fail(device.ACLErrParamInvalid, "batches of a %v do not divide those of b %v", a.Ne, x.Ne)
	}
	op := C.int(C.IRT_MATMUL)
	var selfS, selfT, matS, matT, outS, outT []int64
	switch {
	case b.k.Name == "aclnnMm" && B3 == 1 && B2 == 1 && B3a == 1 && B2a == 1:
		op = C.IRT_MM
		selfS, selfT = xs[2:], xst[2:]
		matS, matT = ats[2:], atst[2:]
		outS, outT = os[2:], ost[2:]
	case b.k.Name == "aclnnBatchMatMul" && B3 == 1 && B3a == 1 && B2a == B2:
		op = C.IRT_BMM
		selfS, selfT = xs[1:], xst[1:]
		matS, matT = ats[1:], atst[1:]
		outS, outT = os[1:], ost[1:]
	case B3a == B3 && B2a == B2, B3a == 1 && B2a == 1, B3a == 1 && B2a == B2, B3a == B3 && B2a == 1:
		selfS, selfT, matS, matT, outS, outT = xs, xst, ats, atst, os, ost
	default:
		// Repetition along dim 2: split b's and out's batch into (B2a, r)
		// and give a a broadcast dim of 1 (ggml-cann inserts dims so).
		r := B2 / B2a
		if B3a != B3 && B3a != 1 {
			return b.unsupported("mul_mat repeating both batch dims (a %v, b %v)", a.Ne, x.Ne)
		}
		selfS = []int64{B3, B2a, r, xs[2], xs[3]}
		selfT = []int64{xst[0], r * xst[1], xst[1], xst[2], xst[3]}
		matS = []int64{B3a, B2a, 1, ats[2], ats[3]}
		matT = []int64{atst[0], atst[1], atst[1], atst[2], atst[3]}
		outS = []int64{os[0], B2a, r, os[2], os[3]}
		outT = []int64{ost[0], r * ost[1], ost[1], ost[2], ost[3]}
	}
	b.matmul(op, b.tensor(xd, selfS, selfT, 0, xAddr), b.tensor(ad, matS, matT, 0, a.Addr), b.tensor(od, outS, outT, 0, out.Addr))
	return b.err
}

// quantTypes are the quantised weight types of the weight-quant recipes,
// each converted once at load by gguf/wqconv (PlaceWeight).
var quantTypes = []ir.DType{ir.Q4_0, ir.Q4_1, ir.Q5_0, ir.Q5_1, ir.Q8_0, ir.Q2_K, ir.Q3_K, ir.Q4_K, ir.Q5_K, ir.Q6_K}

// quantRecipeTypes lists, per op, the quantised weight types its recipe
// computes. TestEveryClaimedTypeHasARecipe fails, naming the op and the
// type, when a target claims a type an op's list lacks.
var quantRecipeTypes = map[ir.Op][]ir.DType{
	ir.OpMulMat:    quantTypes,
	ir.OpMulMatAdd: quantTypes,
	// mul_mat_id: not q5_0, whose int4 + high-bit layout has no expert
	// recipe (the target keeps such a mul_mat_id on the CPU).
	ir.OpMulMatID: {ir.Q4_0, ir.Q4_1, ir.Q5_1, ir.Q8_0, ir.Q2_K, ir.Q3_K, ir.Q4_K, ir.Q5_K, ir.Q6_K},
	// get_rows gathers int8 values: not q4_0, q4_1, q5_0, q4_K (int4
	// layouts).
	ir.OpGetRows: {ir.Q5_1, ir.Q8_0, ir.Q2_K, ir.Q3_K, ir.Q5_K, ir.Q6_K},
}

// recipeTakes reports whether op's recipe computes quantised type t.
func recipeTakes(op ir.Op, t ir.DType) bool {
	for _, q := range quantRecipeTypes[op] {
		if q == t {
			return true
		}
	}
	return false
}

// ggmlModeTypes are the types QuantMatmulGGML computes with ggml-cpu's
// arithmetic: the activations quantised to their vec_dot partner (q8Kind:
// q8_0, q8_1 for q4_1/q5_1, whose quants are q8_0's while ggml adds the
// min term with the f16 sum it stores, q8_K for the K-quants), the
// weight's exact ggml values in f32.
var ggmlModeTypes = map[ir.DType]bool{ir.Q4_0: true, ir.Q4_1: true, ir.Q5_0: true, ir.Q5_1: true, ir.Q8_0: true,
	ir.Q2_K: true, ir.Q3_K: true, ir.Q4_K: true, ir.Q5_K: true, ir.Q6_K: true}

// wqDType is the aclDataType of a converted weight's values.
func wqDType(l wqconv.Layout) C.int {
	if l.Dtype == wqconv.Int4 {
		return C.ACL_INT4
	}
	return C.ACL_INT8
}

// wqParams are the f16 antiquantScale / antiquantOffset views of n output
// channels of K at p: (⌈K/g⌉, n) seen transposed, or (n,) per channel
// (group size 0, one group covers the row).
func (b *builder) wqParams(l wqconv.Layout, K, N int64, p device.Ptr) C.uintptr_t {
	if p == 0 {
		return 0
	}
	G := K / int64(l.Span)
	if l.GroupSize(int(K)) == 0 {
		return b.tensor(C.ACL_FLOAT16, []int64{N}, []int64{G}, 0, p)
	}
	return b.tensor(C.ACL_FLOAT16, []int64{G, N}, []int64{1, G}, 0, p)
}

// quantMulMat is the weight-quant path (ggml-cann's for q4_0/q8_0): x
// cast to f16, aclnnWeightQuantBatchMatmulV2 against the weight converted
// at load (gguf/wqconv: int4/int8 values, f16 scales and offsets, the
// layout's group size), the f16 result cast to f32.
func quantMulMat(b *builder, a, x, out device.TensorDesc) error {
	K, N, M := a.Ne[0], a.Ne[1], x.Ne[1]
	if a.Ne[2] != 1 || a.Ne[3] != 1 || x.Ne[2] != 1 || x.Ne[3] != 1 || x.Ne[0] != K || x.DType != ir.F32 || out.DType != ir.F32 {
		return b.unsupported("%s mul_mat of a %v by %s %v: 2-D f32 activations only", a.DType, a.Ne, x.DType, x.Ne)
	}
	w := b.converted(a)
	if b.err != nil {
		return b.err
	}
	xs, xst, ok := aclOrder(x)
	if !ok {
		return b.unsupported("activations %v", x.Nb)
	}
	xt := b.tensor(C.ACL_FLOAT, xs[2:], xst[2:], 0, x.Addr)
	x16 := b.temp("f16 input", 2*M*K, 32)
	y16 := b.temp("f16 output", 2*M*N, 32)
	x16o := operand{C.ACL_FLOAT16, []int64{M, K}, []int64{K, 1}, 0, x16}
	y16o := operand{C.ACL_FLOAT16, []int64{M, N}, []int64{N, 1}, 0, y16}
	b.cast(xt, b.make(x16o), C.ACL_FLOAT16)
	// The weight (K, N) is the transposed view of ggml's N rows of K; its
	// scales and offsets (groups, N) likewise.
	l := w.layout
	if err := b.wqbmmSplit(x16o, operand{wqDType(l), []int64{K, N}, []int64{1, K}, 0, w.values},
		wqParamOperand(l, K, N, w.scales), wqParamOperand(l, K, N, w.offsets), y16o, int64(l.GroupSize(int(K)))); err != nil {
		return err
	}
	if l.HighBits {
		if err := b.highBitsMatmul(w, K, N, M, x16o, y16o); err != nil {
			return err
		}
	}
	os, ost, _ := aclOrder(out)
	b.cast(b.make(y16o), b.tensor(C.ACL_FLOAT, os[2:], ost[2:], 0, out.Addr), C.ACL_FLOAT)
	return b.err
}

// highBitsMatmul adds the second term of a weight whose layout has
// HighBits (gguf/wqconv: q5_0 = d·(lo − 8) + 16·d·(h − 0.5), the first
// term the int4 matmul already in y) to y (f16 [M, N]): per
// target.HighBitsChunks range of output columns, the rows' bitmask (uint8
// [n, K/8]) is expanded to [n, K/8, 8] (aclnnExpand), shifted right by
// each value's bit position (aclnnRightShift by the table 0..7,
// broadcast) and masked to its bit (aclnnBitwiseAndScalar 1): one byte
// {0, 1} per weight, read as INT8; the rows' scales times 16 (aclnnMuls)
// and the offsets of a table of −0.5 (target.HighBitsOffsetTable, one
// per device) make it 16·d·(h − 0.5) in aclnnWeightQuantBatchMatmulV2,
// which writes those columns of a second f16 output; aclnnInplaceAdd adds
// it to y. The rest lives in the kernel's planned workspace
// (target.HighBitsScratch).
func (b *builder) highBitsMatmul(w wqWeight, K, N, M int64, x, y operand) error {
	l := w.layout
	G, B := K/int64(l.Span), K/8
	chunks := target.HighBitsChunks(K, N)
	var c int64
	for _, ch := range chunks {
		c = max(c, ch.N)
	}
	y2 := b.temp("high-bit output", 2*M*N, 32)
	ex := b.temp("expanded bits", K*c, 32)
	sh := b.temp("shifted bits", K*c, 32)
	sc := b.temp("high-bit scales", 2*G*c, 32)
	shifts := b.table("u8 0..7", []byte{0, 1, 2, 3, 4, 5, 6, 7})
	of := b.table("f16 -0.5 offsets", halves())
	if b.err != nil {
		return b.err
	}
	y2o := operand{C.ACL_FLOAT16, []int64{M, N}, []int64{N, 1}, 0, y2}
	u8 := func(p device.Ptr, n int64) C.uintptr_t {
		return b.tensor(C.ACL_UINT8, []int64{n, B, 8}, []int64{K, 8, 1}, 0, p)
	}
	f16 := func(p device.Ptr, n int64) C.uintptr_t {
		return b.tensor(C.ACL_FLOAT16, []int64{n, G}, []int64{G, 1}, 0, p)
	}
	group := int64(l.GroupSize(int(K)))
	for _, ch := range chunks {
		n := ch.N
		mask := b.tensor(C.ACL_UINT8, []int64{n, B, 1}, []int64{B, 1, 1}, 0, w.high+device.Ptr(ch.N0*B))
		b.expand(mask, u8(ex, n), n, B, 8)
		b.op(C.IRT_RIGHTSHIFT, u8(ex, n), b.tensor(C.ACL_UINT8, []int64{8}, []int64{1}, 0, shifts), u8(sh, n))
		b.bitwiseAndScalar(u8(sh, n), u8(ex, n), 1)
		b.muls(f16(w.scales+device.Ptr(2*ch.N0*G), n), f16(sc, n), 16)
		b.wqbmm(b.make(x), b.make(operand{C.ACL_INT8, []int64{K, n}, []int64{1, K}, 0, ex}),
			b.make(*wqParamOperand(l, K, n, sc)), b.make(*wqParamOperand(l, K, n, of)), b.make(y2o.columns(ch.N0, n)), group)
	}
	b.inplaceAdd(b.make(y), b.make(y2o), 1)
	return b.err
}

// halves is the f16 −0.5 offset table of the HighBits matmuls.
func halves() []byte {
	out := make([]byte, 2*target.HighBitsOffsetTable)
	for i := 0; i < len(out); i += 2 {
		out[i], out[i+1] = 0x00, 0xb8
	}
	return out
}

// mulMatAdd: the mul_mat recipe into the output, then the bias added in
// place (aclnnInplaceAdd, alpha 1), broadcast over the product.
func mulMatAdd(b *builder) error {
	bias, out := b.k.Inputs[2], b.k.Output
	if !broadcastable(out, bias) {
		return b.unsupported("bias %v broadcasts over %v only by repetition", bias.Ne, out.Ne)
	}
	if err := mulMat(b); err != nil {
		return err
	}
	b.inplaceAdd(b.desc("selfRef", out, 4), b.desc("other", bias, 4), 1)
	return b.err
}

// The two arithmetics of a q4_0/q8_0 matmul (Options.QuantMatmul).
const (
	// QuantMatmulWQBMM runs aclnnWeightQuantBatchMatmulV2 on f16
	// activations against the int8/int4 weight with its f16 scales as the
	// antiquant scale (ggml-cann's path). Fast: the weight stays quantised
	// in HBM. Its logits differ from ggml-cpu's by up to a few 1e-2 of
	// max|logit| (docs/LOWERING.md).
	QuantMatmulWQBMM = "wqbmm"
	// QuantMatmulGGML computes ggml-cpu's bits: the activations are
	// quantised on the device as ggml quantises them (q8_0, q8_1 or q8_K,
	// q8Quantise), the integer block dots are exact f32 matmuls of
	// integer-valued operands (the weight converted once at load to
	// integers in f32, 4 bytes per value in HBM), and ggml's float chains
	// (per block d = d_x·d_w, acc = fma(d, lane, acc), its horizontal sums)
	// are elementwise operators, in the order of Options.LlamaBuild:
	// quantMulMatK for 2-D K-quant matrices, quantMulMatQ8 for q4_0, q5_0,
	// q8_0, q4_1 and q5_1 matrices, mulMatIDQ8 for their expert stacks.
	// mulMatIDK for K-quant expert stacks.
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

// q8Quantise adds the calls that quantise f32 activations as ggml-cpu
// does for weight type wt (its vec_dot partner, q8Kind): q8_0, q8_1 or
// q8_K. It returns the device scratch holding the values as a contiguous
// f32 [rows…, K] matrix, for q8_1 the blocks' sums s as a contiguous f32
// [rows…, K/32] matrix (0 otherwise), and the blocks' scales d, a
// contiguous f32 [rows…, K/bs] matrix. lead and leadSt are the shape and
// strides (elements) of the row dims of x at addr, inner the stride of
// its K values. With keepQ the values are the integers q (in f32), as the
// recipes multiply them (quantMulMatK, quantMulMatQ8); without it the
// last call multiplies them by d.
//
// q8_0 (ggml-cpu's AVX2 quantize_row_q8_0: id = 127/amax, products
// rounded to nearest even; per block of 32, x viewed as [rows, K/32, 32]):
//
//	aclnnAbs(x) → t;  aclnnAmax(t, dim 2, keepDim) → amax
//	aclnnDiv(127, amax) → id;  aclnnGeScalar(id, +inf) → m;
//	aclnnInplaceMaskedFillScalar(id, m, 0)          (id = 0 where amax = 0)
//	aclnnDiv(amax, 127) → d;  aclnnCast(d → f16 → f32)  (the block's f16 scale)
//	aclnnMul(x, id) → t;  aclnnRound(t) → t (half to even);  aclnnInplaceMul(t, d)
//
// A block whose 127/amax overflows (amax = 0, or below 127/FLT_MAX) gets
// id = 0, so q = 0 (ggml: only amax = 0).
//
// q8_K (quantize_row_q8_K_ref, per block of 256): iscale = −127/max with
// max the value of largest magnitude, q = nearest_int(iscale·x) (half to
// even), d = 1/iscale in f32. The values d·q do not depend on max's sign
// (both q and d change sign), so the block's amax serves:
//
//	aclnnAbs(x) → t;  aclnnAmax(t, dim 2, keepDim) → amax
//	aclnnDiv(127, amax) → id;  aclnnGeScalar(id, +inf) → m;
//	aclnnInplaceMaskedFillScalar(id, m, 0)
//	aclnnDiv(1, id) → d;  aclnnInplaceMaskedFillScalar(d, m, 0)
//	aclnnMul(x, id) → t;  aclnnRound(t) → t;  aclnnInplaceMul(t, d)
//
// Its 16-value sums (bsums) are taken by the K-quant recipe
// (aclnnReduceSum).
//
// q8_1 (ggml-cpu's AVX2 quantize_row_q8_1, per block of 32): q8_0's quants
// and f16 scale, and s = f16(d·Σq) with d = amax/127 before its f16
// rounding; ggml_vec_dot_q4_1_q8_1 and _q5_1_q8_1 multiply the weight's
// min by s, not by the sum of the q8 values:
//
//	q8_0's calls up to aclnnRound (d kept in f32, its f16 copy aside);
//	aclnnReduceSum(t, dim 2, keepDims) → Σq;  aclnnMul(d, Σq) → s;
//	aclnnCast(s → f16 → f32);  aclnnCast(d16 → f32) → d;  aclnnInplaceMul(t, d)
func (b *builder) q8Quantise(lead, leadSt []int64, inner, K int64, addr device.Ptr, wt ir.DType, keepQ bool) (xq, sums, d device.Ptr) {
	kind := q8Kind(wt)
	kq, q1 := kind == "q8_K", kind == "q8_1"
	bs := int64(32)
	if kq {
		bs = 256
	}
	M := prod(lead)
	nb := K / bs
	L := len(lead)
	blk := append(append([]int64{}, lead...), nb, bs)
	xview := append(append([]int64{}, leadSt...), bs*inner, inner)
	per := append(append([]int64{}, lead...), nb, 1)
	perSt := contiguous(per)
	// Scratch: t f32[M·K], then per block amax, id, d (f32), d16 (f16), m
	// (bool), and for q8_1 Σq, s (f32) and s16 (f16).
	align := func(v int64) int64 { return (v + 63) / 64 * 64 }
	offT, offAmax := int64(0), align(4*M*K)
	offID := offAmax + align(4*M*nb)
	offD := offID + align(4*M*nb)
	offD16 := offD + align(4*M*nb)
	offMask := offD16 + align(2*M*nb)
	offSumQ := offMask + align(M*nb)
	offS := offSumQ + align(4*M*nb)
	offS16 := offS + align(4*M*nb)
	size := offSumQ
	if q1 {
		size = offS16 + align(2*M*nb)
	}
	buf := b.buffer(fmt.Sprintf("%s activations %v×%d", kind, lead, K), size)
	c127 := b.table("f32 127", f32Bytes(127))
	var ts [12]C.uintptr_t
	type spec struct {
		dt        C.int
		shape, st []int64
		addr      device.Ptr
	}
	specs := []spec{
		{C.ACL_FLOAT, blk, xview, addr},                             // 0 x
		{C.ACL_FLOAT, blk, contiguous(blk), buf + device.Ptr(offT)}, // 1 t
		{C.ACL_FLOAT, per, perSt, buf + device.Ptr(offAmax)},        // 2 amax
		{C.ACL_FLOAT, []int64{1}, []int64{1}, c127},                 // 3 127
		{C.ACL_FLOAT, per, perSt, buf + device.Ptr(offID)},          // 4 id
		{C.ACL_BOOL, per, perSt, buf + device.Ptr(offMask)},         // 5 m
		{C.ACL_FLOAT, per, perSt, buf + device.Ptr(offD)},           // 6 d
		{C.ACL_FLOAT16, per, perSt, buf + device.Ptr(offD16)},       // 7 d16
	}
	switch {
	case kq:
		specs = append(specs, spec{C.ACL_FLOAT, []int64{1}, []int64{1}, b.table("f32 1", f32Bytes(1))}) // 8 one
	case q1:
		specs = append(specs, spec{}, // 8 unused
			spec{C.ACL_FLOAT, per, perSt, buf + device.Ptr(offSumQ)},  // 9 Σq
			spec{C.ACL_FLOAT, per, perSt, buf + device.Ptr(offS)},     // 10 s
			spec{C.ACL_FLOAT16, per, perSt, buf + device.Ptr(offS16)}) // 11 s16
	}
	for i, s := range specs {
		if s.shape != nil {
			ts[i] = b.tensor(s.dt, s.shape, s.st, 0, s.addr)
		}
	}
	b.op(C.IRT_ABS, ts[0], ts[1])
	am := tensors(ts[1], ts[2])
	am.s, am.i[0] = b.intArray(int64(L+1)), 1
	b.call(C.IRT_AMAX, am)
	b.op(C.IRT_DIV, ts[3], ts[2], ts[4])
	b.geScalar(ts[4], ts[5], float32(math.Inf(1)))
	b.maskedFill(ts[4], ts[5], 0)
	switch {
	case kq:
		b.op(C.IRT_DIV, ts[8], ts[4], ts[6])
		b.maskedFill(ts[6], ts[5], 0)
	case q1:
		b.op(C.IRT_DIV, ts[2], ts[3], ts[6])
		b.cast(ts[6], ts[7], C.ACL_FLOAT16)
	default:
		b.op(C.IRT_DIV, ts[2], ts[3], ts[6])
		b.cast(ts[6], ts[7], C.ACL_FLOAT16)
		b.cast(ts[7], ts[6], C.ACL_FLOAT)
	}
	b.op(C.IRT_MUL, ts[0], ts[4], ts[1])
	b.op(C.IRT_ROUND, ts[1], ts[1])
	if q1 {
		rs := tensors(ts[1], ts[9])
		rs.s = b.intArray(int64(L + 1))
		rs.i[0], rs.i[1] = 1, C.ACL_FLOAT
		b.call(C.IRT_REDUCESUM, rs)
		b.op(C.IRT_MUL, ts[6], ts[9], ts[10])
		b.cast(ts[10], ts[11], C.ACL_FLOAT16)
		b.cast(ts[11], ts[10], C.ACL_FLOAT)
		b.cast(ts[7], ts[6], C.ACL_FLOAT)
		sums = buf + device.Ptr(offS)
	}
	if keepQ {
		return buf + device.Ptr(offT), sums, buf + device.Ptr(offD)
	}
	b.op(C.IRT_INPLACEMUL, ts[1], ts[6])
	return buf + device.Ptr(offT), sums, buf + device.Ptr(offD)
}

// q8Kind is the type ggml-cpu quantises the activations of a matmul with
// weights of type t to (its vec_dot_type in type_traits_cpu): q8_K for
// the K-quants, q8_1 for q4_1 and q5_1, q8_0 otherwise.
func q8Kind(t ir.DType) string {
	switch t {
	case ir.Q2_K, ir.Q3_K, ir.Q4_K, ir.Q5_K, ir.Q6_K:
		return "q8_K"
	case ir.Q4_1, ir.Q5_1:
		return "q8_1"
	}
	return "q8_0"
}
