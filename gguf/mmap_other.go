//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || android || ios)

package gguf

import "os"

// mapFile reads the whole file: memory mapping is not used on this platform.
func mapFile(fh *os.File) ([]byte, func() error, error) {
	return readAll(fh)
}

// ReleasePages does nothing on this platform (no file is memory-mapped).
func ReleasePages(b []byte) {}

// MappingID is 0: no file is memory-mapped on this platform.
func MappingID(b []byte) uint64 { return 0 }
