package kernels

// Options are the numeric options of the kernels that have a choice.
type Options struct {
	// Quant selects the arithmetic of matmuls with quantised weights.
	Quant QuantMode
	// Threads bounds the goroutines of one kernel call (0 = GOMAXPROCS).
	// The results do not depend on it.
	Threads int
	// LlamaBuild selects the llama.cpp build whose summation order the
	// QuantGGML matmuls follow where builds differ (repacked Q4_K, Q6_K):
	// by default llama.cpp 3f545bec; LlamaC392e50 for runs of older
	// builds.
	LlamaBuild LlamaBuild
	// Packs, when set, holds the weights that the prepared matmul jobs
	// (MulMatJob) read from a copy repacked once for the SIMD kernels
	// (Q4_0 in an interleaved layout of eight rows); the results are the
	// same bits. Nil: every job reads the weights in place.
	Packs *WeightPacks
	// Pool, when set, runs the parallel parts of the kernels called as
	// Options methods (the matmuls, Attention and the row kernels: Add,
	// Mul, RMSNorm, SoftMax, Rope, SwiGLU, GetRows, ...) on its persistent
	// workers instead of starting goroutines for each call; the results
	// are the same bits. Nil: each call starts its own goroutines (only
	// when its tensor is large enough to split).
	Pool *Pool
}
