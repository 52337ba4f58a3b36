//go:build !linux

package safeio

import "os"

// isTerminal is false where it is not implemented: terminals get the idle
// deadline of any stream.
func isTerminal(*os.File) bool { return false }
