package kernels

import (
	"fmt"
	"os"
	"strings"
)

// EnvKernels names the environment variable that overrides, for the whole
// process, the kernel choices made from CPUID at start (Tuning reports
// them). Its value is a comma-separated list of
//
//	avx2          no AVX-512 kernels (the 256-bit paths an AVX2-only CPU
//	              runs, e.g. to measure them on an AVX-512 machine)
//	f16gemv=rows1 the F16 decode product one row at a time, no software
//	              prefetch (the default on every CPU but Intel's)
//	f16gemv=rows2 two rows per iteration with a PREFETCHT0 two rows
//	              ahead (the default on Intel)
//
// The choices change speed only: every path computes the same bits.
const EnvKernels = "IRTOOL_KERNELS"

// tuning is what the decode kernels do differently per
// microarchitecture; set once at start (tuneFromEnv), read-only after.
type tuning struct {
	vendor     string // CPUID's vendor string, "" without CPUID
	f16GEMV2   bool   // matVecF16AVX2 (two rows, prefetch) instead of matVecF16R1AVX2
	noAVX512   bool   // the avx2 word of EnvKernels
	envErr     error  // a word of EnvKernels not understood (ignored)
	envSetting string // EnvKernels as read
}

var tune tuning

// defaultTuning picks per vendor: Intel cores (the Xeon of
// docs/PERFORMANCE.md) streamed an F16 matrix 1.5x faster with two
// interleaved rows and a software prefetch two rows ahead than without
// the prefetch; AMD's Zen (an EPYC, Zen 3) streamed it a fifth faster one
// row at a time without one, as a single sequential stream.
func defaultTuning(vendor string) tuning {
	return tuning{vendor: vendor, f16GEMV2: vendor == "GenuineIntel"}
}

// applyEnv applies EnvKernels' words to t.
func (t *tuning) applyEnv(v string) {
	t.envSetting = v
	var bad []string
	for _, w := range strings.Split(v, ",") {
		switch w = strings.TrimSpace(w); w {
		case "":
		case "avx2":
			t.noAVX512 = true
		case "f16gemv=rows1":
			t.f16GEMV2 = false
		case "f16gemv=rows2":
			t.f16GEMV2 = true
		default:
			bad = append(bad, fmt.Sprintf("%q", w))
		}
	}
	if len(bad) > 0 {
		t.envErr = fmt.Errorf("%s=%q: unknown word %s (want avx2, f16gemv=rows1 or f16gemv=rows2); ignored", EnvKernels, v, strings.Join(bad, ", "))
	}
}

// Tuning describes the kernel paths this process runs: the instruction
// set (avx512, avx2 or go), the CPU vendor and the F16 decode kernel, as
// chosen from CPUID and EnvKernels; err reports words of EnvKernels that
// were not understood (and were ignored).
func Tuning() (desc string, err error) {
	isa := "go"
	switch {
	case useAVX512:
		isa = "avx512"
	case useAVX2:
		isa = "avx2"
	}
	f16 := "rows1"
	if tune.f16GEMV2 {
		f16 = "rows2"
	}
	vendor := tune.vendor
	if vendor == "" {
		vendor = "unknown"
	}
	desc = fmt.Sprintf("%s, vendor %s, f16gemv=%s", isa, vendor, f16)
	if tune.envSetting != "" {
		desc += fmt.Sprintf(" (%s=%s)", EnvKernels, tune.envSetting)
	}
	return desc, tune.envErr
}

// readEnvKernels returns EnvKernels' value.
func readEnvKernels() string { return os.Getenv(EnvKernels) }
