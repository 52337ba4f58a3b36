// Package layout holds the pure-Go conversions of ggml's quantised blocks
// into the device layouts runtime/acl's recipes read, and their sizes:
//
//   - KQ and Q8: the f32 integer operands of the "ggml" QuantMatmul mode's
//     exact integer dots (K-quants after ggml-cpu's x86 AVX2
//     ggml_vec_dot_q{2..6}_K_q8_K, q4_0…q8_0 after
//     ggml_vec_dot_q{4,5,8}_0_q8_0 and ggml_vec_dot_q{4,5}_1_q8_1);
//   - RepackQ8_0 and RepackQ4_0: ggml-cann's split layout (quants, then
//     scales) of its set_tensor;
//   - DequantizeRows: the f32 values (ggml's dequantize_row_*).
//
// aclnnWeightQuantBatchMatmulV2's int8/int4 layouts are gguf/wqconv's.
// Nothing here touches a device: runtime/acl places what these functions
// return.
package layout
