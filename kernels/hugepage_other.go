//go:build !linux

package kernels

// adviseHuge does nothing on this platform.
func adviseHuge(b []byte) {}
