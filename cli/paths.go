package cli

import (
	"fmt"
	"strings"

	"github.com/irtool/irtool/internal/safeio"
	"github.com/irtool/irtool/models/modelfile"
)

// Every command that writes files checks its paths before any work
// (safeio.CheckPaths): each output can be written, and none of them is
// one of its inputs or another output.

// inputs returns the files a model source reads: the MODEL argument and,
// for IR text, the GGUF file its meta weights names.
func (s *modelSource) inputs() []safeio.Path {
	in := []safeio.Path{{Flag: "MODEL", Path: s.Path}}
	if s.WeightsPath != "" && !strings.HasPrefix(s.WeightsPath, "embedded:") {
		in = append(in, safeio.Path{Flag: "the weights file (meta " + modelfile.MetaWeights + ")", Path: s.WeightsPath})
	}
	return in
}

// Ranges of the numeric flags that are not tied to the model (every
// command uses these, so run's and bench's --threads take the same values).
const (
	// maxReps bounds bench -r (each repetition keeps one timing).
	maxReps = 10000
	// maxDevice is the largest device id: aclrtSetDevice takes an int32_t.
	maxDevice = 1<<31 - 1
	// maxACLBytes bounds --acl-workspace and --acl-pool (1 TiB, more than
	// any Ascend device holds).
	maxACLBytes = 1 << 40
	// maxGraphCache bounds --graph-cache.
	maxGraphCache = 1 << 20
)

// flagRange checks an integer flag against [lo, hi]; the error is one line
// naming the flag, the value and the range, with what 0 (or lo) means
// when zero is given.
func flagRange(name string, v, lo, hi int64, zero string) error {
	if v >= lo && v <= hi {
		return nil
	}
	if zero != "" {
		return fmt.Errorf("%s %d: want 0 (%s) or 1..%d", name, v, zero, hi)
	}
	return fmt.Errorf("%s %d: want %d..%d", name, v, lo, hi)
}
