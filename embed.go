// Package irtool is the root of the irtool module, a graph-compiler toolkit
// that turns GGUF models into compiled, replayable programs (see
// docs/ARCHITECTURE.md and the packages gguf, models, ir, passes, planner,
// lower/cann, runtime and viz).
//
// The root package holds the Context, the registries an experiment
// extends (ops, kernels, passes, target rules, planner strategies), and the
// small model embedded in the irtool binary, so every command works on a
// fresh machine with nothing downloaded.
package irtool

import _ "embed"

// EmbeddedModel is stories260K.gguf: Andrej Karpathy's 260K-parameter
// TinyStories llama (MIT licence) as converted to GGUF by ggml-org, byte for
// byte (1185376 bytes, sha256 270cba1b…256d). Parse it with gguf.Parse.
//
//go:embed testdata/stories260K.gguf
var EmbeddedModel []byte

// EmbeddedModelName is the name irtool reports for EmbeddedModel.
const EmbeddedModelName = "stories260K.gguf (embedded)"
