//go:build amd64 && !purego

package kernels

//go:noescape
func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// cpuVendor returns CPUID leaf 0's vendor string ("GenuineIntel",
// "AuthenticAMD", ...).
func cpuVendor() string {
	_, b, c, d := cpuid(0, 0)
	var s [12]byte
	for i := range 4 {
		s[i] = byte(b >> (8 * i))
		s[4+i] = byte(d >> (8 * i))
		s[8+i] = byte(c >> (8 * i))
	}
	return string(s[:])
}

func init() {
	tune = defaultTuning(cpuVendor())
	if v := readEnvKernels(); v != "" {
		tune.applyEnv(v)
	}
	if tune.noAVX512 {
		useAVX512, useVNNI = false, false
	}
}
