// Package ir is irtool's graph intermediate representation: a DAG of tensor
// operations for one forward step of a model.
//
// The design follows ggml, because the models come from GGUF files and every
// number is checked against llama.cpp: shapes are four dimensions in ggml order
// (Shape[0] is the contiguous, innermost dimension), dtypes share ggml's type
// ids (so quantised weights are first-class), and views (reshape, view,
// permute, transpose) are explicit nodes that alias their source rather than
// copy it. That makes the memory planner's aliasing rules the same as
// ggml-alloc's, so the planner can be checked byte for byte against
// llama.cpp's compute-buffer size.
//
// Dimensions may be symbolic (n_tokens, n_kv, n_outputs): one graph describes
// prefill and decode alike, and Specialize binds the symbols to produce a
// static graph that can be planned, lowered and executed.
//
// The graph owns its storage: nodes live in a slice in execution order and
// carry dense ids (Graph.Compact renumbers them after rewrites). Leaves
// (inputs, weights, persistent state such as KV caches, constants) are nodes
// too. Every op is described by an OpInfo in a registry that gives its arity,
// its shape inference and its aliasing behaviour; Verify checks a whole graph
// against it. The text format (Print / Parse) round-trips exactly, so any
// stage's graph can be saved, diffed, edited and reloaded.
//
// The package depends only on the standard library; adaptors to other
// libraries (gonum's graph interfaces) live in sub-packages.
package ir
