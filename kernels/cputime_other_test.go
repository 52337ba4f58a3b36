//go:build !linux

package kernels

import "testing"

// benchCPU runs f b.N times (no per-thread CPU clock on this OS).
func benchCPU(b *testing.B, f func()) {
	for b.Loop() {
		f()
	}
}
