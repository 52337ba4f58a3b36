package passes_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/passes/passtest"
)

// TestGolden runs each case of testdata/golden/<pass>/<case>.ir through
// that one pass with the exported harness (passes/passtest): the printed
// result is compared with <case>.out.ir (rewritten with -update), and the
// graph runs before and after the pass on deterministic data, outputs and
// state buffers agreeing bit for bit.
func TestGolden(t *testing.T) {
	passtest.Golden(t, filepath.Join("testdata", "golden"), passtest.Options{})
}

// TestGoldenCoverage: every rule of every built-in pass has a golden case
// that makes it fire, and every pass without rules has a case.
func TestGoldenCoverage(t *testing.T) {
	for _, p := range passes.All() {
		cases, _ := filepath.Glob(filepath.Join("testdata", "golden", p.Name, "*.ir"))
		named := map[string]bool{}
		n := 0
		for _, c := range cases {
			if strings.HasSuffix(c, ".out.ir") {
				continue
			}
			n++
			raw, err := os.ReadFile(c)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(string(raw), "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "// rule:"); ok {
					named[strings.TrimSpace(v)] = true
				}
			}
		}
		if n == 0 {
			t.Errorf("pass %s has no golden case in testdata/golden/%s", p.Name, p.Name)
		}
		for _, r := range p.Rules {
			if !named[r.Name] {
				t.Errorf("rule %s of pass %s has no golden case", r.Name, p.Name)
			}
		}
	}
}
