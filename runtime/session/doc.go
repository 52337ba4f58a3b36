// Package session runs a built model step by step on the CPU: a Session
// holds the persistent KV cache and drives prefill then greedy decode, as
// llama.cpp's llama_decode does for one sequence. Each step shape (prompt
// length, n_kv bucket) is specialised, given a memory plan
// (planner.PlanMemory, CPU policy) and compiled once into an
// eval.Executable run on the session's worker threads;
// SessionOptions.Reference runs the steps on the reference executor
// (eval.Executor) instead, with the same results. Generate and Stepper are
// shared with program.Runner (package runtime/program), which runs lowered
// programs on a device, so every backend generates the same way.
package session
