//go:build !unix

package safeio

import "os"

// openNonBlocking opens path read-only (FIFOs do not block on open here).
func openNonBlocking(path string) (*os.File, error) {
	return os.Open(path)
}
