//go:build !cann

package cli

import "testing"

// matrixRunCANN runs the model on the CANN backend in builds with -tags
// cann (matrix_cann_test.go); without it there is no CANN backend to run.
func matrixRunCANN(t *testing.T, ir string) {}
