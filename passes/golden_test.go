package passes_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/golden"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/passes"
)

// TestGolden runs each case of testdata/golden/<pass>/<case>.ir through
// that one pass and compares the printed result with <case>.out.ir
// (rewritten with -update). Comment lines at the top of a case direct it:
//
//	// rule: NAME         the rule must fire (repeatable); "none": the pass must change nothing
//	// bind: n_tokens=3   bindings to execute a symbolic case with
//
// Every case is also executed before and after the pass on deterministic
// data, and the outputs and state buffers must agree bit for bit.
func TestGolden(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join("testdata", "golden", "*", "*.ir"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range cases {
		if strings.HasSuffix(path, ".out.ir") {
			continue
		}
		n++
		pass := filepath.Base(filepath.Dir(path))
		name := strings.TrimSuffix(filepath.Base(path), ".ir")
		t.Run(pass+"/"+name, func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var rules []string
			var bind ir.Bindings
			for _, line := range strings.Split(string(raw), "\n") {
				line = strings.TrimSpace(line)
				if v, ok := strings.CutPrefix(line, "// rule:"); ok {
					rules = append(rules, strings.TrimSpace(v))
				}
				if v, ok := strings.CutPrefix(line, "// bind:"); ok {
					if bind, err = ir.ParseBindings(strings.TrimSpace(v)); err != nil {
						t.Fatal(err)
					}
				}
			}
			if len(rules) == 0 {
				t.Fatal("case names no rule (// rule: NAME or // rule: none)")
			}
			in, err := ir.ParseString(string(raw))
			if err != nil {
				t.Fatal(err)
			}
			p, err := passes.Parse(pass)
			if err != nil {
				t.Fatal(err)
			}
			out, res, err := passes.Run(in, p, passes.Options{})
			if err != nil {
				t.Fatal(err)
			}
			st := res.Passes[0]
			for _, r := range rules {
				switch {
				case r == "none" && st.Changed:
					t.Errorf("pass changed the graph (hits %v, stats %v); the case expects no change", st.RuleHits, st.Stats)
				case r != "none" && len(p[0].Rules) > 0 && st.RuleHits[r] == 0:
					t.Errorf("rule %s did not fire (hits %v)", r, st.RuleHits)
				case r != "none" && !st.Changed:
					t.Errorf("pass did not change the graph")
				}
			}
			got := "// " + pass + " of " + filepath.Base(path) + "\n" + out.String()
			want := strings.TrimSuffix(path, ".ir") + ".out.ir"
			golden.Check(t, want, []byte(got))
			// The expected text must itself be a valid graph.
			if _, err := ir.ParseString(got); err != nil {
				t.Errorf("%s: %v", want, err)
			}
			run := func(g *ir.Graph) *execResult {
				t.Helper()
				if bind != nil {
					if g, err = g.Specialize(bind); err != nil {
						t.Fatal(err)
					}
				}
				r, err := execute(g, 16)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			if err := sameBits(run(in), run(out)); err != nil {
				t.Errorf("execution after %s: %v", pass, err)
			}
		})
	}
	if n == 0 {
		t.Fatal("no golden cases found")
	}
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
