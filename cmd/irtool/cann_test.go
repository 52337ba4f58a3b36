//go:build cann

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// With -tags cann the CLI runs against runtime/acl's test double of CANN
// (testdata/fakeacl, compiled here with gcc and named by IRTOOL_ACL_LIBS):
// doctor finds it, and run --backend cann goes through the whole pipeline,
// capture and replay included. The double computes nothing, so the tokens
// are meaningless; numbers are proven on the simulated device.
func fakeCANN(t *testing.T) {
	t.Helper()
	if os.Getenv("IRTOOL_ACL_LIBS") != "" {
		return
	}
	dir := t.TempDir()
	lib := filepath.Join(dir, "libfakeacl.so")
	src := filepath.Join("..", "..", "runtime", "acl")
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	cmd := exec.Command(cc, "-shared", "-fPIC", "-O1", "-I", filepath.Join(src, "include"), "-o", lib,
		filepath.Join(src, "testdata", "fakeacl", "fakeacl.c"), "-lpthread")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the CANN test double: %v\n%s", err, b)
	}
	// The binding loads it once per process and keeps it mapped after the
	// directory is removed.
	os.Setenv("IRTOOL_ACL_LIBS", lib)
}

func TestDoctorWithFakeCANN(t *testing.T) {
	fakeCANN(t)
	code, out, errOut := runCLI(t, "doctor", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s%s", err, out, errOut)
	}
	if code != 0 || !rep.CANNSupport || !rep.Found || rep.Devices != 1 || rep.SoC != "Ascend910B3" || !rep.GraphCapture || rep.Total == 0 || len(rep.Missing) != 0 {
		t.Errorf("doctor: exit %d, %+v", code, rep)
	}
	code, out, _ = runCLI(t, "doctor")
	for _, want := range []string{"CANN support: built in", "Ascend910B3", "graph capture: supported"} {
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
	code, out, errOut := runCLI(t, "run", "--backend", "cann", "--tokens", "1,2,3", "-n", "4", "--json")
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
	if res.Backend != "cann" || len(res.Tokens) != 4 || res.Stats.Mode != "graph" || res.Stats.Decode.Steps != 3 ||
		res.Stats.Decode.Captures != 1 || res.Stats.Decode.Replays != 3 {
		t.Errorf("run --backend cann: %s", out)
	}
}
