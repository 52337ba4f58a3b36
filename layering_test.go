package irtool_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayering checks that the compiler never reaches into the runtime:
// the dependencies of ir, passes, planner, the compile driver and the
// per-rank driver (go list -deps) hold no package of runtime/ (device,
// session, program, acl) —
// docs/ARCHITECTURE.md, "Packages follow the data flow". It also checks
// that the driver sits above every compiler stage: no stage package
// (ir, models, eval, passes, target, planner, partition, lower) depends on
// package compiler, and that passes stays graph rewrites: it does not
// depend on models (a model's rebuilding per rank lives in models).
func TestLayering(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not in PATH")
	}
	const mod = "github.com/irtool/irtool/"
	for _, tags := range []string{"", "cann"} {
		out, err := exec.Command(goTool, "list", "-tags", tags, "-deps", "./ir/...", "./passes/...", "./planner/...", "./compiler/...", "./parallel/...").CombinedOutput()
		if err != nil {
			t.Fatalf("go list -tags %q: %v\n%s", tags, err, out)
		}
		for _, p := range strings.Fields(string(out)) {
			if strings.HasPrefix(p, mod+"runtime") || strings.HasPrefix(p, mod+"cmd") || p == mod+"cli" {
				t.Errorf("-tags %q: ir, passes, planner, compiler or parallel depends on %s", tags, p)
			}
		}
		if !strings.Contains(string(out), mod+"passes") || !strings.Contains(string(out), mod+"lower/cann") {
			t.Fatalf("go list printed no irtool package:\n%s", out)
		}
		out, err = exec.Command(goTool, "list", "-tags", tags, "-deps", "./passes").CombinedOutput()
		if err != nil {
			t.Fatalf("go list -tags %q: %v\n%s", tags, err, out)
		}
		for _, p := range strings.Fields(string(out)) {
			if p == mod+"models" {
				t.Errorf("-tags %q: passes depends on %s", tags, p)
			}
		}
		stages := []string{"./ir/...", "./models/...", "./eval/...", "./passes/...", "./target/...", "./planner/...", "./partition/...", "./lower/..."}
		out, err = exec.Command(goTool, append([]string{"list", "-tags", tags, "-deps"}, stages...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -tags %q: %v\n%s", tags, err, out)
		}
		for _, p := range strings.Fields(string(out)) {
			if p == mod+"compiler" {
				t.Errorf("-tags %q: a compiler stage depends on the compile driver %s", tags, p)
			}
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
