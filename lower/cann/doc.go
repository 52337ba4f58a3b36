// Package cann lowers a partitioned, static IR graph to a Program for
// Huawei Ascend NPUs: one aclnn kernel call per NPU node, named as in CANN,
// with tensor descriptors as aclCreateTensor takes them, device addresses
// taken from the memory plan, and the kernels grouped into segments that a
// runtime can capture once with aclmdlRICaptureBegin/End and replay with
// aclmdlRIExecuteAsync.
//
// Why a compiler does this instead of the runtime (the seeds' design): the
// runtime of llama.cpp's CANN backend discovers at every step whether a
// captured graph may be replayed by comparing every node's op, shapes,
// strides, op parameters and data addresses with each cached graph
// (../shared/notes/cann.md §2.3). Here every one of those properties is
// fixed before the first step:
//
//   - addresses come from the memory plan: intermediates at the arena base
//     plus their planned offset; weights, KV caches, constant tables (the
//     RMSNorm ones vector) and inputs in fixed regions allocated before any
//     capture (cann.md §0.2, §0.8);
//   - kernel scratch (the f16 staging of a quantised matmul, the rstd output
//     of aclnnRmsNorm, ...) is planned into the arena, so nothing allocates
//     while a segment is captured (cann.md §0.7);
//   - each segment carries a key known at compile time, its id plus the
//     symbol bucket it was lowered for, and a fingerprint of the property
//     list the seeds match on (kernel count, op types, addresses, shapes,
//     strides, op parameters), so a runtime's cache lookup is a map access
//     and a mismatch can be explained property by property (Match).
//
// The KV-cache write mode is a lowering input: with set_rows (the default)
// the destination is the whole cache and only the index data changes, so a
// decode program's addresses are the same at every position; with cpy
// (models.KVCpy, kept to reproduce the seeds' problem) the write goes to a
// view whose offset moves with the position, and the KV-write kernels'
// addresses change every token (cann.md §2.8).
//
// A Program is plain data and round-trips through JSON. It runs without
// CANN: every kernel names the IR op and attributes it computes, so a
// runtime can execute it kernel by kernel through the shared CPU kernel
// table (eval.LookupKernel), which is how the tests check that lowered
// programs give the reference logits.
package cann
