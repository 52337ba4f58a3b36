package kernels

import (
	"runtime"

	"golang.org/x/sys/cpu"
)

// CPUFeatures are the CPU features the assembly kernels need
// (simd_amd64.go), by name: avx2, fma and f16c on amd64, none elsewhere.
func CPUFeatures() map[string]bool {
	if runtime.GOARCH != "amd64" {
		return map[string]bool{}
	}
	return map[string]bool{"avx2": cpu.X86.HasAVX2, "fma": cpu.X86.HasFMA, "f16c": cpu.X86.HasF16C}
}

// Implementation says which kernels this build runs on this CPU (irtool
// version): the assembly ones, or the pure-Go twins and why.
func Implementation() string {
	f := CPUFeatures()
	switch {
	case runtime.GOARCH != "amd64":
		return "pure Go (no assembly kernels for " + runtime.GOARCH + ")"
	case Purego:
		return "pure Go (built with -tags purego)"
	case f["avx2"] && f["fma"] && f["f16c"]:
		return "assembly (AVX2, FMA, F16C)"
	default:
		return "pure Go (this CPU lacks AVX2, FMA or F16C)"
	}
}
