// Package partition places every node of a graph on a device (the NPU or the
// host CPU) for a target profile, inserts a transfer at every device
// boundary, orders the graph so that each device's work forms few long
// segments, and checks that the segments form no cycle.
//
// Why a separate pass: the NPU runs only what the target's aclnn table
// covers (package target), and every value that crosses from one device to
// the other costs a copy and, worse, ends a capturable segment (a copy is a
// host interaction; CANN's single-stream capture rules). Placing nodes one at a time by "supported
// or not" therefore leaves money on the table: a cheap elementwise op
// sandwiched between two CPU fallbacks costs two copies on the NPU and none
// on the CPU. The pass starts from "on the NPU when supported", then moves
// single nodes whenever that lowers the modelled step time (compute on the
// chosen device, plus copies, plus uploads and downloads), so it minimises
// copied bytes and segments as far as the cost model says they matter.
//
// Rules that are not negotiable:
//   - a node the NPU cannot run stays on the CPU (the target says why);
//   - every writer of a persistent state (a KV cache) runs on the device that
//     holds the state, so the cache never travels; readers elsewhere receive
//     a copy of the window they read;
//   - a user Policy may pin any node to either device; pinning an
//     unsupported node to the NPU is an error naming the node and the reason.
//
// The result is a new graph (the input is not modified) in which each
// boundary is an explicit "transfer" node, registered here as an IR op with a
// CPU kernel (a copy), so the reference executor runs partitioned graphs
// unchanged and tests compare them with the original bit for bit.
//
// Requant rewrites weights of types the NPU cannot multiply (the K-quants,
// for example) to q8_0 or q4_0 at load time so that their matmuls stay on
// the NPU, and reports the numeric cost of doing so per tensor.
package partition
