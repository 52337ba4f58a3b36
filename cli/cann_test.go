//go:build cann

package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// With -tags cann the CLI runs against irtool's emulator of CANN, built by
// scripts/fakeacl.sh into a directory that IRTOOL_ACL_LIBS names, as a user
// trying the CANN path without an NPU would: doctor reports the emulated
// route, and run --backend cann goes through the whole pipeline, capture
// and replay included, with the emulator computing every aclnn operator.
func fakeCANN(t *testing.T) {
	t.Helper()
	if os.Getenv("IRTOOL_ACL_LIBS") != "" {
		return
	}
	dir := t.TempDir()
	script := filepath.Join("..", "scripts", "fakeacl.sh")
	if b, err := exec.Command("bash", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", script, dir, err, b)
	}
	// The binding loads it once per process and keeps it mapped after the
	// directory is removed.
	os.Setenv("IRTOOL_ACL_LIBS", dir)
}

func TestDoctorWithFakeCANN(t *testing.T) {
	fakeCANN(t)
	code, out, errOut := runCLI(t, "doctor", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s%s", err, out, errOut)
	}
	if code != 0 || !rep.CANNSupport || !rep.Found || !rep.Emulated || len(rep.Libraries) != 3 || rep.Devices != 1 || rep.SoC != "Ascend910B3" || !rep.GraphCapture || rep.Total == 0 || len(rep.Missing) != 0 {
		t.Errorf("doctor: exit %d, %+v", code, rep)
	}
	code, out, _ = runCLI(t, "doctor")
	for _, want := range []string{"CANN support: built in", "emulated: irtool's host emulator", "Ascend910B3", "graph capture: supported"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("doctor: exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
	if code, out, _ := runCLI(t, "doctor", "--device", "3"); code != 1 || !strings.Contains(out, "device 3 does not exist") {
		t.Errorf("doctor --device 3: exit %d\n%s", code, out)
	}
}

func TestRunCannBackendOnFake(t *testing.T) {
	fakeCANN(t)
	code, out, errOut := runCLI(t, "run", "--backend", "cann", "--tokens", "1,2,3", "-n", "8", "--json")
	if code != 0 {
		t.Fatalf("run --backend cann: exit %d\n%s", code, errOut)
	}
	var res struct {
		Backend string  `json:"backend"`
		Tokens  []int32 `json:"tokens"`
		Stats   struct {
			Mode   string `json:"mode"`
			Decode struct {
				Steps    int64 `json:"steps"`
				Captures int64 `json:"captures"`
				Replays  int64 `json:"replays"`
			} `json:"decode"`
		} `json:"stats"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Backend != "cann" || len(res.Tokens) != 8 || res.Stats.Mode != "graph" || res.Stats.Decode.Steps != 7 ||
		res.Stats.Decode.Captures != 1 || res.Stats.Decode.Replays != 7 {
		t.Errorf("run --backend cann: %s", out)
	}
	// The emulator computes: the tokens are the reference executor's.
	code, cpuOut, errOut := runCLI(t, "run", "--tokens", "1,2,3", "-n", "8", "--json")
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errOut)
	}
	var cpu struct {
		Tokens []int32 `json:"tokens"`
	}
	if err := json.Unmarshal([]byte(cpuOut), &cpu); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(cpu.Tokens) != fmt.Sprint(res.Tokens) {
		t.Errorf("run --backend cann: tokens %v; the cpu backend's are %v", res.Tokens, cpu.Tokens)
	}
}
