// Package cann lowers a partitioned, static IR graph to a Program for
// Huawei Ascend NPUs: one aclnn kernel call per NPU node, named as in CANN,
// with tensor descriptors as aclCreateTensor takes them, device addresses
// taken from the memory plan, and the kernels grouped into segments that a
// runtime can capture once with aclmdlRICaptureBegin/End and replay with
// aclmdlRIExecuteAsync.
//
// Why a compiler does this instead of the runtime (ggml-cann's design): the
// runtime of llama.cpp's CANN backend discovers at every step whether a
// captured graph may be replayed by comparing every node's op, shapes,
// strides, op parameters and data addresses with each cached graph
// (ggml-cann's is_matched_graph; llama.cpp PRs #15065, #16166, #21204). Here every one of those properties is
// fixed before the first step:
//
//   - addresses come from the memory plan: intermediates at the arena base
//     plus their planned offset; weights, KV caches, constant tables (the
//     RMSNorm ones vector) and inputs in fixed regions allocated before any
//     capture (CANN's single-stream capture rules; llama.cpp PR #20747);
//   - kernel scratch (the f16 staging of a quantised matmul, the rstd output
//     of aclnnRmsNorm, ...) is planned into the arena, so nothing allocates
//     while a segment is captured (ggml-cann's VMM pool);
//   - each segment carries a key known at compile time, its id plus the
//     symbol bucket it was lowered for, and a fingerprint of the property
//     list ggml-cann matches on (kernel count, op types, addresses, shapes,
//     strides, op parameters), so a runtime's cache lookup is a map access
//     and a mismatch can be explained property by property (Match).
//
// The KV-cache write mode is a lowering input: with set_rows (the default)
// the destination is the whole cache and only the index data changes, so a
// decode program's addresses are the same at every position; with cpy
// (models.KVCpy, kept to reproduce the re-capture problem of llama.cpp's CANN
// graph mode before set_rows) the write goes to a
// view whose offset moves with the position, and the KV-write kernels'
// addresses change every token (llama.cpp PRs #14943, #15065).
//
// A Program is plain data and round-trips through JSON. It runs without
// CANN: every kernel names the IR op and attributes it computes, so a
// runtime can execute it kernel by kernel through the shared CPU kernel
// table (eval.LookupKernel), which is how the tests check that lowered
// programs give the reference logits.
package cann
