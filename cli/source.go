package cli

import (
	"github.com/irtool/irtool"
	"github.com/irtool/irtool/models/modelfile"
)

// A MODEL argument names a GGUF file or a file of IR text (docs/IR.md,
// "Model files in IR text"); package modelfile opens either, so every
// command that compiles or runs a model accepts either.

// modelSource is an opened MODEL argument and the registries of the
// invocation.
type modelSource struct {
	*modelfile.Source
	reg *irtool.Context // resolves the ops of the IR text and of the graphs built
}

// openSource opens a MODEL argument: the embedded model for "", a GGUF
// file, or IR text (parsed with reg's ops) and the GGUF its "weights"
// meta names.
func openSource(reg *irtool.Context, path string) (*modelSource, error) {
	s, err := modelfile.Open(path, modelfile.Options{Ops: reg.Ops, Embedded: irtool.EmbeddedModel, EmbeddedName: irtool.EmbeddedModelName})
	if err != nil {
		return nil, err
	}
	return &modelSource{Source: s, reg: reg}, nil
}
