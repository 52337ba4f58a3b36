package kernels

import (
	"strings"
	"testing"
)

func TestTuningEnv(t *testing.T) {
	for _, c := range []struct {
		vendor, env  string
		rows2, no512 bool
		bad          string
	}{
		{"GenuineIntel", "", true, false, ""},
		{"AuthenticAMD", "", false, false, ""},
		{"", "", false, false, ""},
		{"AuthenticAMD", "f16gemv=rows2", true, false, ""},
		{"GenuineIntel", " f16gemv=rows1 , avx2", false, true, ""},
		{"GenuineIntel", "avx2,fast", true, true, `"fast"`},
		{"AuthenticAMD", "f16gemv=rows3", false, false, `"f16gemv=rows3"`},
	} {
		tu := defaultTuning(c.vendor)
		if c.env != "" {
			tu.applyEnv(c.env)
		}
		if tu.f16GEMV2 != c.rows2 || tu.noAVX512 != c.no512 {
			t.Errorf("%s %q: rows2 %v avx2-only %v, want %v %v", c.vendor, c.env, tu.f16GEMV2, tu.noAVX512, c.rows2, c.no512)
		}
		if c.bad == "" && tu.envErr != nil {
			t.Errorf("%s %q: unexpected error %v", c.vendor, c.env, tu.envErr)
		}
		if c.bad != "" && (tu.envErr == nil || !strings.Contains(tu.envErr.Error(), c.bad) || !strings.Contains(tu.envErr.Error(), EnvKernels)) {
			t.Errorf("%s %q: error %v, want one naming %s and %s", c.vendor, c.env, tu.envErr, EnvKernels, c.bad)
		}
	}
	desc, err := Tuning()
	if err != nil {
		t.Logf("%s: %v", EnvKernels, err)
	}
	if !strings.Contains(desc, "f16gemv=rows") {
		t.Errorf("Tuning() = %q", desc)
	}
	t.Log(desc)
}
