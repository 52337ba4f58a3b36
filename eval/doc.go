// Package eval is the reference evaluator: the table of CPU kernels, one
// per op (core ops, the fused ops of ir/fused.go and the partition's
// transfer), and the Executor that runs any static ir.Graph with them, with
// its own buffers or at the offsets of a memory plan inside one arena.
//
// It sits just above ir, kernels and gguf and below passes: constant
// folding evaluates subgraphs with it, the memory planner's tests run
// planned graphs with it, and the simulated Ascend device and the CPU
// segments of lowered programs call the same kernels (LookupKernel), so
// every backend computes each op with one piece of code.
//
// The executor is the oracle of the compiler: every pass is checked by
// running the graph before and after it, and the memory planner is checked
// by running with every intermediate at its planned offset and comparing
// the logits bit for bit.
package eval
