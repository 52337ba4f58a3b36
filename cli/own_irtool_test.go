package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/testref"
)

// readmeMain returns the Go program of README.md's "Your own irtool"
// section.
func readmeMain(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testref.Root(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(raw), "\n## Your own irtool\n")
	if !ok {
		t.Fatal(`README.md has no "## Your own irtool" section`)
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	_, code, ok := strings.Cut(sec, "```go\n")
	if !ok {
		t.Fatal(`README.md's "Your own irtool" has no Go block`)
	}
	code, _, _ = strings.Cut(code, "```")
	return code
}

// TestOwnIrtool: the main of README.md's "Your own irtool", built in a
// module of its own (a replace of this repository), is an irtool whose
// commands know its op and pass: passes lists the pass, passes and
// compile run it with the default pipeline (my_silu in every layer),
// --check validates it by execution, and run generates with its kernel
// the tokens of the built-in silu. Offline: GOPROXY=off and -mod=mod, the
// dependencies from the module cache.
func TestOwnIrtool(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own (-short)")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not in PATH")
	}
	dir := t.TempDir()
	sum, err := os.ReadFile(filepath.Join(testref.Root(), "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	mod := "module example.com/myirtool\n\ngo 1.26\n\nrequire github.com/irtool/irtool v0.0.0\n\nreplace github.com/irtool/irtool => " + testref.Root() + "\n"
	for name, data := range map[string]string{"go.mod": mod, "go.sum": string(sum), "main.go": readmeMain(t)} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "myirtool")
	build := exec.Command(goTool, "build", "-o", bin, ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"), "GOPROXY=off", "GOWORK=off")
	if out, err := build.CombinedOutput(); err != nil {
		if strings.Contains(string(out), "GOPROXY=off") || strings.Contains(string(out), "module lookup disabled") {
			t.Skipf("a dependency is not in the module cache and the network is off: %s", out)
		}
		t.Fatalf("go build of README's main: %v\n%s", err, out)
	}
	irt := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(bin, args...)
		var out, errs strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errs
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errs.String(), code
	}
	if out, errs, code := irt("passes"); code != 0 || !strings.Contains(out, "use-my-silu\n    silu(x) -> my_silu(x)") {
		t.Fatalf("passes: exit %d %s\n%s", code, errs, out)
	}
	out, errs, code := irt("passes", "--passes", "use-my-silu,default", "--json")
	var pj struct {
		OpsAfter map[string]int `json:"ops_after"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &pj) != nil || pj.OpsAfter["my_silu"] != 5 || pj.OpsAfter["swiglu"] != 0 {
		t.Fatalf("passes --passes use-my-silu,default: exit %d %s\n%.400s", code, errs, out)
	}
	if out, errs, code := irt("compile", "--passes", "use-my-silu,default"); code != 0 || !strings.Contains(out, "my_silu") {
		t.Fatalf("compile --passes use-my-silu,default: exit %d %s\n%s", code, errs, out)
	}
	if out, errs, code := irt("passes", "--check", "--passes", "use-my-silu,default"); code != 0 || !strings.HasPrefix(out, "check use-my-silu: bit-identical (4 steps)\n") {
		t.Fatalf("passes --check: exit %d %s\n%s", code, errs, out)
	}
	mine, errs, code := irt("run", "--passes", "use-my-silu,default", "--tokens", "1,403,407,261", "-n", "6", "--json")
	if code != 0 {
		t.Fatalf("run: exit %d %s", code, errs)
	}
	theirs := runJSONCmd(t, "--tokens", "1,403,407,261", "-n", "6", "--json")
	var got runOut
	if err := json.Unmarshal([]byte(mine), &got); err != nil || !eqIDs(got.Tokens, theirs.Tokens) {
		t.Errorf("run with my_silu: tokens %v (%v), irtool's %v", got.Tokens, err, theirs.Tokens)
	}
}
