// Package runtime executes compiled graphs.
//
// This file set holds the CPU reference executor: it runs any static
// ir.Graph with the pure-Go kernels of package kernels (the same kernels the
// simulated Ascend device uses), and a Session that drives a model step by
// step — prefill, then greedy decode — over a persistent KV cache.
//
// The executor is the oracle of the compiler: every pass is checked by
// running the graph before and after it, and the memory planner is checked by
// running with every intermediate placed at its planned offset inside one
// arena and comparing the logits bit for bit.
package runtime
