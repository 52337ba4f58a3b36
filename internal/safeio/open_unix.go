//go:build unix

package safeio

import (
	"os"
	"syscall"
)

// openNonBlocking opens path read-only with O_NONBLOCK, so that opening a
// FIFO does not wait for a writer. Regular files ignore the flag; on
// pollable files (FIFOs, pipes, terminals) Go's poller then honours read
// deadlines.
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
