// Package session runs a built model step by step on the CPU reference
// executor (package eval): a Session holds the persistent KV cache and
// drives prefill then greedy decode, as llama.cpp's llama_decode does for
// one sequence. Generate and Stepper are shared with the device sessions of
// package runtime/program, so every backend generates the same way.
package session
