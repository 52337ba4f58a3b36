// Package kernels holds the numeric kernels that both the CPU reference
// executor and the simulated Ascend device run: get_rows, rms_norm, add,
// mul, scale, silu, soft_max, rope, cpy, set_rows, mul_mat, and a few fused
// kernels (RMSNormMul, AddRMSNormMul, SwiGLU, MulMatAdd, RopeSetRows,
// Attention) that the fusion passes produce.
//
// Why one package: every number this project prints is checked against
// llama.cpp's own output (the reference outputs described in testdata/README.md), so each kernel reproduces
// the semantics of the corresponding ggml CPU op at llama.cpp commit c392e50
// (ggml_compute_forward_*, x86-64 AVX2 build), down to where float32
// rounding happens: the double-precision sum of squares in RMSNorm, the
// iterative float32 theta of RoPE, softmax's exponentials with ggml's AVX2
// expf approximation summed in double, F16 activations for F16 weights,
// Q8_0/Q8_K activation quantisation for quantised weights, and the summation
// order of each dot product (the AVX2 lanes and fused multiply-adds of
// tinyBLAS, ggml_vec_dot and the K-quant kernels, chosen per call as
// llama.cpp chooses them). On the reference models the logits agree with
// llama.cpp's to the 9 digits it prints, at every one of 32 greedy steps. Having
// one implementation means the executor and the device simulator cannot
// disagree, and a pass that rewrites the graph can be checked by running
// both graphs through the same arithmetic.
//
// Tensors are ggml-style views (Tensor): a type, four dims (ne[0]
// innermost), four byte strides and a byte slice that starts at element
// [0,0,0,0]. Views, permutations and transposes are metadata only, and every
// kernel accepts strided operands, as ggml's do. Elementwise kernels may
// write in place (dst the same view as a source); the matmul and attention
// kernels refuse a dst that overlaps an operand. Kernels validate shapes,
// types and bounds and return an error instead of panicking; a recover at
// each exported entry point turns any remaining out-of-range access into an
// error too.
//
// Matrix multiplication runs on GOMAXPROCS goroutines; every output element
// is computed by exactly one goroutine with a fixed summation order, so
// results do not depend on the number of threads (they do depend on the
// number of activation columns, as llama.cpp's do: one column takes
// ggml_vec_dot's order, several tinyBLAS's). Options.Quant chooses
// between dequantising quantised weights to float32 (QuantDequant) and
// ggml's integer path (QuantGGML: activations quantised to Q8_0 or Q8_K as
// ggml's CPU backend does). Q4_0 matrices with a multiple of 8 rows take
// the order of llama.cpp's repacked q4_0_8x8 kernels, as llama.cpp does on
// AVX2.
//
// On amd64 with AVX2, FMA and F16C (detected at start) the hot kernels run
// as hand-written assembly (simd_amd64.s): the quantised, F16 and K-quant
// dot products, the Q8_0 activation quantisation, SiLU, soft_max's
// exponentials and F16 conversions. Each computes exactly what its
// pure-Go twin computes, so results are the same bits with or without it;
// -tags purego, other architectures and older CPUs use the twins. See
// docs/KERNELS.md for the op-by-op notes.
package kernels
