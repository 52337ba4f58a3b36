//go:build amd64 && !purego

package kernels

import "testing"

func TestCPUVendor(t *testing.T) {
	v := cpuVendor()
	if len(v) != 12 {
		t.Fatalf("cpuVendor() = %q, want 12 characters", v)
	}
	for _, c := range []byte(v) {
		if c < 0x20 || c > 0x7e {
			t.Fatalf("cpuVendor() = %q: not printable", v)
		}
	}
	t.Log(v)
}
