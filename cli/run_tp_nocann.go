//go:build !cann

package cli

import (
	"flag"
	"io"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/models"
)

// cannRank stands in for the real one of run_tp_cann.go.
type cannRank struct{}

func (*cannRank) stats() simStatsJSON { return simStatsJSON{} }

func closeCann([]*cannRank) {}

func (b *tpBackend) startCann(string, []*models.Model, []eval.WeightSource, *gguf.File, *simFlags, *cannFlags, *flag.FlagSet) error {
	return errNoCANN
}

func (b *tpBackend) startCannGroups([]cannGroup, []*models.Model, []eval.WeightSource, *gguf.File, *simFlags, *cannFlags, *flag.FlagSet) error {
	return errNoCANN
}

// cannGroup stands in for the real one of run_tp_cann.go.
type cannGroup struct {
	name    string
	members []int
}

func newTPProcBackend(*models.TP, *gguf.File, *simFlags, *cannFlags, *tpFlags, *flag.FlagSet, io.Writer) (*tpBackend, error) {
	return nil, errNoCANN
}
