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
