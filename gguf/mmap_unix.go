//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly || android || ios

package gguf

import (
	"fmt"
	"math"
	"os"
	"syscall"
)

// mapFile maps fh read-only into memory. It falls back to reading the file
// when it is not a regular file or the kernel refuses the mapping.
func mapFile(fh *os.File) ([]byte, func() error, error) {
	st, err := fh.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := st.Size()
	if !st.Mode().IsRegular() || size == 0 {
		return readAll(fh)
	}
	if size > math.MaxInt {
		return nil, nil, fmt.Errorf("file of %d bytes is too large to map", size)
	}
	data, err := syscall.Mmap(int(fh.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return readAll(fh)
	}
	return data, func() error { return syscall.Munmap(data) }, nil
}
