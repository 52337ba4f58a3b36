package kernels_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/irtool/irtool/kernels"
)

// Implementation agrees with the build and the CPU: assembly only on
// amd64 without -tags purego, with every feature the kernels need.
func TestImplementation(t *testing.T) {
	got, f := kernels.Implementation(), kernels.CPUFeatures()
	asm := runtime.GOARCH == "amd64" && !kernels.Purego && f["avx2"] && f["fma"] && f["f16c"]
	if asm != (got == "assembly (AVX2, FMA, F16C)") || !asm && !strings.HasPrefix(got, "pure Go (") {
		t.Errorf("Implementation() = %q on %s (purego %v, features %v)", got, runtime.GOARCH, kernels.Purego, f)
	}
	if runtime.GOARCH != "amd64" && len(f) != 0 {
		t.Errorf("CPUFeatures() = %v on %s, want none", f, runtime.GOARCH)
	}
}
