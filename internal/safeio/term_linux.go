//go:build linux

package safeio

import (
	"os"
	"syscall"
	"unsafe"
)

// isTerminal reports whether f is a terminal (TCGETS succeeds), where a
// person types the input and an idle deadline would cut them off.
func isTerminal(f *os.File) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return errno == 0
}
