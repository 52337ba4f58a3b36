//go:build cann

package launch_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/runtime/launch"
)

// fakeCANN points the binding at irtool's emulator of CANN, built by
// scripts/fakeacl.sh, unless IRTOOL_ACL_LIBS names libraries already.
func fakeCANN(t *testing.T) {
	t.Helper()
	if os.Getenv("IRTOOL_ACL_LIBS") != "" {
		return
	}
	dir := t.TempDir()
	script := filepath.Join("..", "..", "scripts", "fakeacl.sh")
	if b, err := exec.Command("bash", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", script, dir, err, b)
	}
	// The binding loads it once per process and keeps it mapped after the
	// directory is removed.
	os.Setenv("IRTOOL_ACL_LIBS", dir)
}

// The cann backend on the emulator: a pool too small for the weights is
// refused before the device is touched; otherwise it generates, captures
// the decode steps and counts the aclnn calls by operator.
func TestCannOnFake(t *testing.T) {
	fakeCANN(t)
	f, m := embedded(t)
	o := options("cann")
	o.Cann = launch.CannOptions{Pool: 1 << 10, Workspace: 16 << 20, QuantMatmul: "wqbmm", UBatch: 512}
	if _, err := launch.NewCann(m, f, o); err == nil || !strings.HasPrefix(err.Error(), "--acl-pool 1024: the model's weights need ") {
		t.Errorf("a 1 KiB pool: %v", err)
	}
	o.Cann.Pool = 0
	b, err := launch.NewCann(m, f, o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := generate(t, b); len(got) != 4 {
		t.Errorf("tokens %v, want 4", got)
	}
	st := b.Stats()
	if st.Decode.Steps != 3 || st.Mode != "graph" || len(st.Device.CallsByName) == 0 {
		t.Errorf("stats: %+v", st)
	}
	var buf bytes.Buffer
	b.WriteSummary(&buf)
	if !strings.Contains(buf.String(), "irtool run: cann decode (graph): 3 steps") {
		t.Errorf("summary:\n%s", buf.String())
	}
}
