package irtool_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneCompileDriver: outside package passes itself, only the compile
// driver (package compiler) runs a pass pipeline: no other non-test file
// calls passes.Run, so the CLI's commands (compile, viz, passes, run,
// bench), runtime/program and irtool.Context run the same pipeline with
// the same defaults (docs/ARCHITECTURE.md, "One compile driver"). Tests of
// the packages below the driver may call it, and so may passes/passtest,
// the exported golden harness that runs one pass on a case (it sits
// under passes, below the driver, which TestLayering keeps it from
// importing).
func TestOneCompileDriver(t *testing.T) {
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || dir == "passes" || dir == "passes/passtest" || dir == "compiler" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), "passes.Run(") {
			t.Errorf("%s calls passes.Run: go through compiler.Compile (Options.Until: compiler.StagePasses for the passes alone)", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
