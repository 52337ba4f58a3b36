//go:build cann

package main

import "testing"

// The sampler runs on the host: on irtool's CANN emulator, one device and
// two (--tp 2), the same seed draws the cpu backend's tokens.
func TestRunSamplingCannOnFake(t *testing.T) {
	fakeCANN(t)
	t.Setenv("IRTFAKE_DEVICE_COUNT", "2")
	base := []string{"-p", "Once upon a time", "-n", "16", "--temp", "0.8", "--seed", "42", "--repeat-penalty", "1.1"}
	want, _ := runSampled(t, base...)
	for _, extra := range [][]string{
		{"--backend", "cann"},
		{"--backend", "cann", "--tp", "2"},
	} {
		if got, _ := runSampled(t, append(base, extra...)...); !eqIDs(got.Tokens, want.Tokens) {
			t.Errorf("%v: %v, want the cpu backend's %v", extra, got.Tokens, want.Tokens)
		}
	}
}
