package irtool_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayering checks that the compiler never reaches into the runtime:
// the dependencies of ir, passes and planner (go list -deps) hold no
// package of runtime/ (device, session, program, acl) — docs/ARCHITECTURE.md,
// "Packages follow the data flow".
func TestLayering(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not in PATH")
	}
	for _, tags := range []string{"", "cann"} {
		out, err := exec.Command(goTool, "list", "-tags", tags, "-deps", "./ir/...", "./passes/...", "./planner/...").CombinedOutput()
		if err != nil {
			t.Fatalf("go list -tags %q: %v\n%s", tags, err, out)
		}
		for _, p := range strings.Fields(string(out)) {
			if strings.HasPrefix(p, "github.com/irtool/irtool/runtime") {
				t.Errorf("-tags %q: ir, passes or planner depends on %s", tags, p)
			}
		}
		if !strings.Contains(string(out), "github.com/irtool/irtool/passes") {
			t.Fatalf("go list printed no irtool package:\n%s", out)
		}
	}
}

// TestLayeringGGUF checks that gguf and its subpackages (gguf/wqconv, the
// device layouts of the quantised weights, which target, partition, lower
// and runtime all read) stay at the bottom: no irtool package outside gguf
// and internal in their dependencies.
func TestLayeringGGUF(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not in PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", "./gguf/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const mod = "github.com/irtool/irtool/"
	seen := false
	for _, p := range strings.Fields(string(out)) {
		rel, ok := strings.CutPrefix(p, mod)
		if !ok {
			continue
		}
		seen = seen || rel == "gguf/wqconv"
		if rel != "gguf" && !strings.HasPrefix(rel, "gguf/") && !strings.HasPrefix(rel, "internal/") {
			t.Errorf("gguf depends on %s", p)
		}
	}
	if !seen {
		t.Fatalf("go list printed no gguf/wqconv:\n%s", out)
	}
}
