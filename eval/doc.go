// Package eval runs static graphs on the CPU. It holds three things:
//
//   - the kernel table (KernelSet, DefaultKernels, LookupKernel): one
//     KernelDef per op (core ops, the fused ops the passes introduce and
//     the partition's transfer; one file per op family, as in package ir):
//     the CPU kernel every CPU path calls, so each op is computed by one
//     piece of code, and beside it the op's prepared job (Prepare) that
//     the executable runs;
//   - the executable (Executable, run on Workers), the fast path and the
//     one sessions run by default: a static graph compiled for the CPU
//     once, its storage resolved (the memory planner's offsets inside one
//     arena when the options carry them), every compute node lowered to a
//     prepared kernels.Job, so that a step is a loop over those jobs, their
//     row chunks split across persistent worker threads (allocating
//     nothing when every op has a prepared kernel: PreparedOp);
//   - the reference executor (Executor), which interprets any static graph
//     node by node through the kernel table, with its own buffers or at a
//     memory plan's offsets.
//
// It sits just above ir, kernels and gguf and below passes: constant
// folding evaluates subgraphs with the Executor, and the simulated Ascend
// device and the CPU segments of lowered programs call the same kernel
// table (LookupKernel).
//
// The Executor is the oracle of the compiler: every pass is checked by
// running the graph before and after it, the memory planner by running with
// every intermediate at its planned offset, and the Executable by comparing
// its results with the Executor's bit for bit (TestPlanMatchesExecutor).
package eval
