//go:build !cann

package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// A default (pure Go) build has no CANN binding: doctor and --backend cann
// say so and how to build with it.
func TestDoctorWithoutCANN(t *testing.T) {
	code, out, _ := runCLI(t, "doctor")
	if code != 1 || !strings.Contains(out, "built without") || !strings.Contains(out, "-tags cann") {
		t.Errorf("doctor: exit %d, output %q", code, out)
	}
	code, out, _ = runCLI(t, "doctor", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 1 || rep.CANNSupport || rep.Found || !strings.Contains(rep.Build, "-tags cann") {
		t.Errorf("doctor --json: exit %d, %+v, %v", code, rep, err)
	}
	code, _, errOut := runCLI(t, "run", "--backend", "cann", "--tokens", "1,2", "-n", "2")
	if code != 1 || !strings.Contains(errOut, "built without CANN support") || !strings.Contains(errOut, "-tags cann") {
		t.Errorf("run --backend cann: exit %d, stderr %q", code, errOut)
	}
}

func TestCannFlagsNeedCannBackend(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--device", "1", "--tokens", "1", "-n", "1"},
		{"run", "--backend", "sim", "--acl-workspace", "0", "--tokens", "1", "-n", "1"},
	} {
		code, _, errOut := runCLI(t, args...)
		if code != 2 || !strings.Contains(errOut, "applies to --backend cann only") {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}
	if code, _, errOut := runCLI(t, "doctor", "--device", "-1"); code != 2 || !strings.Contains(errOut, "--device") {
		t.Errorf("doctor --device -1: exit %d, %q", code, errOut)
	}
}
