//go:build cann

package acl

/*
#include "binding.h"
*/
import "C"

import "github.com/irtool/irtool/ir"

// recipes turns a device.KernelLaunch (an IR op on ggml-order descriptors)
// into the aclnn calls that compute it, the way ggml-cann's compute_forward
// runs the ggml op the IR op stands for (ggml/src/ggml-cann/aclnn_ops.cpp),
// with the departures noted. One file per op family holds the recipes:
//
// recipes_norm.go
//
//	rms_norm            aclnnRmsNorm(x, gamma = ones, eps, y, rstd in the workspace)
//	rms_norm_mul        aclnnRmsNorm(x, gamma = w, eps, y, rstd in the workspace)
//	add_rms_norm_mul    aclnnAddRmsNorm(a, b, w, eps, y = slot 0, rstd, x = slot 1)
//
// recipes_elementwise.go
//
//	add, mul, div       aclnnAdd (alpha 1) / aclnnMul / aclnnDiv, broadcasting dims of size 1
//	scale               aclnnMuls
//	silu                aclnnSilu
//	gelu                aclnnCast(x → f16) aclnnGelu(f16) aclnnCast(→ f32): ggml's CPU
//	                    GELU reads an F16 table at the F16-rounded input, so the
//	                    device computes the function on the F16 input and rounds its
//	                    result to F16 (ggml-cann calls aclnnGelu on the f32 tensor,
//	                    which is not ggml-cpu's arithmetic)
//	swiglu              aclnnSilu(gate → out) aclnnInplaceMul(out, up)
//	cont, cpy, cast     aclnnInplaceCopy, or aclnnCast when the dtypes differ
//	concat              aclnnCat along the dim
//
// recipes_reduce.go
//
//	soft_max            [aclnnMuls scale] [aclnnAdd mask] aclnnSoftmax(dim -1), the
//	                    scaled copy in the workspace
//	sum_rows            aclnnReduceSum(dims {-1}, keepDims, FLOAT)
//	top_k               aclnnTopk(dim -1, largest, sorted) into f32 values and INT64
//	                    indices in the workspace, aclnnCast(indices → INT32)
//
// recipes_rows.go
//
//	get_rows            aclnnGatherV2(dim 0) [+ aclnnCast from f16 | aclnnMul to
//	                    dequantise q8_0 rows], staging in the workspace; an f32
//	                    table batched over dim 2 (the router's probabilities
//	                    picked by the ids): one aclnnGatherV2 per batch
//	set_rows            [aclnnCast rows → f16] aclnnInplaceIndexCopy(dim 0)
//
// recipes_matmul.go
//
//	mul_mat             aclnnMm / aclnnBatchMatMul / aclnnMatmul on b and the
//	                    transposed view of a (GQA broadcast by an inserted dim);
//	                    q8_0/q4_0: aclnnCast(b → f16) aclnnWeightQuantBatchMatmulV2
//	                    aclnnCast(→ f32), the f16 staging in the workspace, or with
//	                    QuantMatmulGGML the activations' q8 integers, exact integer
//	                    lanes by aclnnBatchMatMul against the weight's integers and
//	                    ggml's FMA chains by aclnnInplaceAddcmul
//	                    (recipes_matmul_ggml.go)
//	mul_mat_add         the mul_mat recipe, then aclnnInplaceAdd(out, bias)
//
// recipes_moe.go
//
//	mul_mat_id          the chosen experts gathered on the device by their ids
//	                    (aclnnGatherV2 over the stacked experts, every expert
//	                    resident), then f32: one broadcasting aclnnMatmul;
//	                    q8_0/q4_0: aclnnCast(b → f16), aclnnWeightQuantBatchMatmulV2
//	                    per (token, slot) on the gathered quants and scales,
//	                    aclnnCast(→ f32); with QuantMatmulGGML mul_mat's recipe
//	                    on the gathered experts' integers. The ids never leave the device, so a
//	                    segment with routing in it is capturable.
//
// recipes_rope.go
//
//	rope                the angles as rope_cache makes them (aclnnGatherV2 …),
//	                    aclnnCos aclnnSin, aclnnRotaryPositionEmbedding
//	rope_cache          aclnnGatherV2(angle table, pos) [aclnnDiv factors]
//	                    [aclnnMuls freq_scale] aclnnCos aclnnSin into
//	                    full-width tables, then two aclnnInplaceCopy
//	                    writing the IR table [c0 s0 c1 s1 …] per position
//	                    (angles: see builder.angles)
//	rope_apply          aclnnRotaryPositionEmbedding on the full-width tables
//	rope_apply_set_rows aclnnRotaryPositionEmbedding [aclnnCast → f16]
//	                    aclnnInplaceIndexCopy, staging in the workspace
//	rope_set_rows       the tables from the positions as rope makes them,
//	                    then as rope_apply_set_rows
//	rope_cache_table    aclnnCast(pos) aclnnMul(pos, inv_freq) [aclnnDiv
//	                    factors] [aclnnMuls freq_scale] aclnnInplaceCopy
//	                    (spread to full width) aclnnCos aclnnSin and the
//	                    IR table as rope_cache
//
// aclnnRotaryPositionEmbedding takes cos and sin as wide as the head; the
// IR's RoPE cache holds n_dims/2 pairs per position. rope_cache therefore
// also writes full-width tables into device scratch of the binding, keyed
// by the cache's address, and rope_apply reads those (it runs after its
// rope_cache in the same step, in stream order). Frequency factors (llama
// 3's rope_freqs) divide the angles with aclnnDiv before cos and sin, as
// ggml divides theta by them.
//
// recipes_attention.go
//
//	attention           as the target lowered it (target.FIA): [zero-padded
//	                    Q/K/V: aclnnInplaceCopy(0) … 2 × aclnnInplaceCopy]
//	                    aclnnCast(q → f16) [aclnnMuls(−mask)
//	                    aclnnGeScalar(≥ 1): BOOL attenMask]
//	                    aclnnFusedInferAttentionScoreV2 (BSND, GQA by
//	                    numKeyValueHeads) aclnnCast(out → f32); unfused
//	                    (and in the "ggml" QuantMatmul mode): aclnnCast(q →
//	                    f16) aclnnMatmul(q16, k16ᵀ → f32) aclnnMuls(scale)
//	                    [aclnnAdd mask] aclnnSoftmax aclnnCast(→ f16)
//	                    aclnnMatmul(p16, v16 → f32)
//	swa_mask            aclnnCast(pos → f32), aclnnAdd(pos − (cell + window), alpha −1)
//	                    against a constant table of cell + window, aclnnGeScalar(≥ 0),
//	                    aclnnInplaceCopy(out ← mask),
//	                    aclnnInplaceMaskedFillScalar(out rows of the tokens, −inf):
//	                    the sliding-window mask made on the device from the step's
//	                    positions (llama.cpp makes KQ_mask_swa on the host)
//
// Descriptors (aclTensor, aclScalar) are made once per distinct launch and
// cached (builder.go); only the two-phase calls are repeated by an eager
// relaunch.
// recipe is the builder of one IR op's calls and the number of operands
// it needs at least (fewer is an error before it runs).
type recipe struct {
	operands int
	build    func(*builder) error
}

var recipes = map[ir.Op]recipe{
	// norm
	ir.OpRMSNorm:       {1, rmsNorm},
	ir.OpRMSNormMul:    {2, rmsNormMul},
	ir.OpAddRMSNormMul: {3, addRMSNormMul},
	// elementwise
	ir.OpAdd:    {2, func(b *builder) error { return binaryOp(b, C.IRT_ADD) }},
	ir.OpMul:    {2, func(b *builder) error { return binaryOp(b, C.IRT_MUL) }},
	ir.OpDiv:    {2, func(b *builder) error { return binaryOp(b, C.IRT_DIV) }},
	ir.OpScale:  {1, scaleOp},
	ir.OpSilu:   {1, func(b *builder) error { return unaryOp(b, C.IRT_SILU) }},
	ir.OpGelu:   {1, geluOp},
	ir.OpSwiGLU: {2, swiGLU},
	ir.OpCont:   {1, copyOp},
	ir.OpCpy:    {1, copyOp},
	ir.OpCast:   {1, copyOp},
	ir.OpConcat: {1, concat},
	// reduce
	ir.OpSoftMax: {1, softMax},
	ir.OpSumRows: {1, sumRows},
	ir.OpTopK:    {1, topK},
	// rows
	ir.OpGetRows: {2, getRowsBatched},
	ir.OpSetRows: {3, setRows},
	// matmul
	ir.OpMulMat:    {2, mulMat},
	ir.OpMulMatAdd: {3, mulMatAdd},
	// moe
	ir.OpMulMatID: {3, mulMatID},
	// rope
	ir.OpRope:             {2, rope},
	ir.OpRopeCache:        {1, ropeCache},
	ir.OpRopeCacheTable:   {2, ropeCacheTable},
	ir.OpRopeApply:        {2, ropeApply},
	ir.OpRopeApplySetRows: {4, ropeApplySetRows},
	ir.OpRopeSetRows:      {4, ropeSetRows},
	// attention
	ir.OpAttention: {3, attention},
	ir.OpSWAMask:   {2, swaMask},
}
