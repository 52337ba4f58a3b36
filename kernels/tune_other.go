//go:build !amd64 || purego

package kernels

func init() {
	tune = defaultTuning("")
	if v := readEnvKernels(); v != "" {
		tune.applyEnv(v)
	}
}
