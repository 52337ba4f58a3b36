// Package wqconv converts ggml's block-quantised weights, once, when they
// are placed on the device, into what CANN's aclnnWeightQuantBatchMatmulV2
// (WQBMM) takes: int4 or int8 values plus f16 per-group antiquantScale and
// (optionally) antiquantOffset, which the operator applies as
//
//	y = x @ ((w + antiquantOffset) * antiquantScale)
//
// (CANN's operator page, aclnnWeightQuantBatchMatmulV2.md, gives the dtypes,
// shapes and group-size rules: the group size is 0 for one scale per output
// channel, otherwise a multiple of 32 in [32, k-1]; scale and offset have
// shape (⌈k/g⌉, n) and the dtype of x; an INT4 weight stores two values per
// byte, element 2i in the low nibble, as aclnnConvertWeightToINT4Pack
// packs them.)
//
// One mapping per ggml type (LayoutOf). Four are exact: the values Dequant
// computes from the converted weights equal ggml's dequantize_row_* values
// (gguf.Dequantize) bit for bit, up to the sign of zero:
//
//   - q8_0: int8 q, scale d (ggml-cann's own layout for Q8_0);
//   - q4_0: int4 u−8, scale d (ggml-cann's Q4_0 layout: the nibble xor 8);
//   - q5_0: int4 lo−8 (the low nibble), scale d, and the fifth bits h as a
//     bitmask after the scales (Layout.HighBits): d·(lo−8) + 16d·(h−0.5),
//     as large as ggml's blocks;
//   - q3_K: int8 −(sc−32)·q ∈ [−128, 124], scale −d, one group per
//     super-block of 256 (the 16-element sub-blocks of ggml's q3_K cannot
//     carry their own scale, as the group must be a multiple of 32, but
//     their 6-bit scales fit in the values).
//
// Four are near-exact: the values stay ggml's quants (shifted by a
// per-group integer c that centres them on 0) and only the f16 rounding of
// a scale or offset is lost, at most 2⁻¹⁰ of the group's largest |value|:
// q4_1 (int4) and q5_1 (int8) with scale d and offset c + m/d; q4_K (int4)
// and q5_K (int8) with per-32 scale d·sc and offset c − dmin·m/(d·sc). Two
// need a re-quantisation to int8 per group of 32 because their
// 16-element sub-blocks have independent scales: q6_K (symmetric, error ≤
// 1/254 of the group's largest |value|, as q8_0's own) and q2_K
// (asymmetric, with an offset, ≤ 1/253). The measured errors are in
// docs/LOWERING.md, "Quantised weights for aclnnWeightQuantBatchMatmulV2";
// TestErrorBounds checks them.
//
// Layout of a converted matrix of n rows (output channels) by k columns
// (ggml's ne[1] × ne[0]): the values row after row, as ggml stores them, so
// that WQBMM sees them as a transposed (k, n) weight (ggml-cann passes its
// Q4_0/Q8_0 weights the same way); the scales (and offsets) n rows of ⌈k/g⌉,
// seen as a transposed (⌈k/g⌉, n) tensor. Mixture-of-experts weights
// (mul_mat_id's 3-D [E][n][k]) are converted expert by expert into the same
// layout with the expert as the outermost axis (ConvertExperts), so one
// expert is one contiguous slice of each part.
package wqconv
