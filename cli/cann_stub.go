//go:build !cann

package cli

import (
	"errors"
	"flag"
	"io"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/program"
)

// Without the cann build tag there is no binding to CANN: doctor says so,
// and --backend cann fails with the same explanation.

var errNoCANN = errors.New("--backend cann: this irtool was built without CANN support; build it with " + buildHint)

// cannUnavailable says why --backend cann cannot run, before any work.
func cannUnavailable() error { return errNoCANN }

func probeCANN(device int) doctorReport {
	return doctorReport{Build: buildHint, Device: device}
}

// cannBackend stands in for the real one of run_cann.go.
type cannBackend struct{ *program.Runner }

func newCannBackend(*models.Model, *gguf.File, *simFlags, *cannFlags, *flag.FlagSet) (*cannBackend, error) {
	return nil, errNoCANN
}

func (b *cannBackend) summary(io.Writer) {}

func (b *cannBackend) stats() any { return nil }
