//go:build !cann

package launch

import (
	"errors"
	"io"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/program"
)

// Without the cann build tag there is no binding to CANN: every NPU
// backend fails with errNoCANN.

// errNoCANN is the error of the NPU backends in a build without -tags cann.
var errNoCANN = errors.New("built without CANN support (-tags cann)")

// Cann stands in for the real one of cann.go.
type Cann struct{ *program.Runner }

// NewCann fails: there is no CANN binding.
func NewCann(*models.Model, *gguf.File, Options) (*Cann, error) { return nil, errNoCANN }

// Stats is empty.
func (b *Cann) Stats() Stats { return Stats{} }

// WriteSummary writes nothing.
func (b *Cann) WriteSummary(io.Writer) {}

// cannRank stands in for the real one of ranks_cann.go.
type cannRank struct{}

func (*cannRank) stats() Stats { return Stats{} }

func closeCann([]*cannRank) {}

func (b *Ranks) startCann(string, []*models.Model, []eval.WeightSource, *gguf.File, Options) error {
	return errNoCANN
}

func (b *Ranks) startCannGroups([]cannGroup, []*models.Model, []eval.WeightSource, *gguf.File, Options) error {
	return errNoCANN
}

// cannGroup stands in for the real one of ranks_cann.go.
type cannGroup struct {
	name    string
	members []int
}

// NewTPProc fails: there is no CANN binding.
func NewTPProc(*models.TP, *gguf.File, Options) (*Ranks, error) { return nil, errNoCANN }
