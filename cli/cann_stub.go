//go:build !cann

package cli

import "errors"

// Without the cann build tag there is no binding to CANN: doctor says so,
// and --backend cann fails with the same explanation.

var errNoCANN = errors.New("--backend cann: this irtool was built without CANN support; build it with " + buildHint)

// cannUnavailable says why --backend cann cannot run, before any work.
func cannUnavailable() error { return errNoCANN }

func probeCANN(device int) doctorReport {
	return doctorReport{Build: buildHint, Device: device}
}
