// Package passtest is the golden-test harness of passes, for passes
// written anywhere: a case is a file of IR text that one pass transforms;
// the printed result is compared with a golden file (rewritten with go
// test -update), and both graphs run on the CPU reference executor on the
// same data derived from the leaves' names, their outputs and state
// buffers compared bit for bit (passes.Options.Check).
//
// A case testdata/golden/PASS/CASE.ir starts with comment lines that
// direct it:
//
//	// rule: NAME         the rule must fire (repeatable); "none": the pass must change nothing
//	// bind: n_tokens=3   bindings to execute a symbolic case with
//
// and its golden file is CASE.out.ir beside it.
package passtest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/internal/golden"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/passes"
)

// Options say where a case's names resolve.
type Options struct {
	// Passes resolves the pass named by a case's directory (nil: the
	// default registry).
	Passes *passes.Registry
	// Ops parses the IR text (nil: ir.DefaultOps); a context's op set
	// when the pass introduces ops of its own.
	Ops *ir.OpSet
	// Kernels executes the graphs (nil: eval.DefaultKernels).
	Kernels *eval.KernelSet
}

// Golden runs every case dir/PASS/CASE.ir as a subtest PASS/CASE and
// fails when dir holds none.
func Golden(t *testing.T, dir string, o Options) {
	t.Helper()
	cases, err := Cases(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatalf("no golden cases in %s/*/*.ir", dir)
	}
	for _, path := range cases {
		pass := filepath.Base(filepath.Dir(path))
		name := strings.TrimSuffix(filepath.Base(path), ".ir")
		t.Run(pass+"/"+name, func(t *testing.T) { Case(t, path, o) })
	}
}

// Cases lists the case files of dir (dir/*/*.ir, golden files left out).
func Cases(dir string) ([]string, error) {
	all, err := filepath.Glob(filepath.Join(dir, "*", "*.ir"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range all {
		if !strings.HasSuffix(p, ".out.ir") {
			out = append(out, p)
		}
	}
	return out, nil
}

// Directives are a case's comment lines.
type Directives struct {
	Rules    []string    // "// rule: NAME"
	Bindings ir.Bindings // "// bind: n_tokens=3"
}

// ReadDirectives reads the directives of case text.
func ReadDirectives(text string) (Directives, error) {
	var d Directives
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "// rule:"); ok {
			d.Rules = append(d.Rules, strings.TrimSpace(v))
		}
		if v, ok := strings.CutPrefix(line, "// bind:"); ok {
			b, err := ir.ParseBindings(strings.TrimSpace(v))
			if err != nil {
				return d, err
			}
			d.Bindings = b
		}
	}
	return d, nil
}

// Case runs the case file at path through the pass its directory names,
// compares the result with the golden file (path with .out.ir) and runs
// both graphs, which must agree bit for bit.
func Case(t *testing.T, path string, o Options) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pass := filepath.Base(filepath.Dir(path))
	got, err := Run(pass, string(raw), o)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	want := strings.TrimSuffix(path, ".ir") + ".out.ir"
	golden.Check(t, want, []byte("// "+pass+" of "+filepath.Base(path)+"\n"+got))
}

// Run applies the pass named pass to the IR text of a case, checking its
// directives and executing the graph before and after it, and returns the
// transformed graph as IR text.
func Run(pass, text string, o Options) (string, error) {
	d, err := ReadDirectives(text)
	if err != nil {
		return "", err
	}
	if len(d.Rules) == 0 {
		return "", fmt.Errorf("the case names no rule (// rule: NAME or // rule: none)")
	}
	ops := o.Ops
	if ops == nil {
		ops = ir.DefaultOps()
	}
	in, err := ops.Parse(strings.NewReader(text))
	if err != nil {
		return "", err
	}
	reg := o.Passes
	if reg == nil {
		reg = passes.DefaultRegistry()
	}
	p, ok := reg.Lookup(pass)
	if !ok {
		return "", fmt.Errorf("unknown pass %q (the case's directory)", pass)
	}
	check := &passes.CheckOptions{Bindings: d.Bindings, Exec: eval.ExecOptions{KernelSet: o.Kernels}}
	out, res, err := passes.Run(in, passes.Pipeline{p}, passes.Options{Check: check, Fold: passes.FoldOptions{Kernels: o.Kernels}})
	if err != nil {
		return "", err
	}
	st := res.Passes[0]
	for _, r := range d.Rules {
		switch {
		case r == "none" && st.Changed:
			return "", fmt.Errorf("pass %s changed the graph (hits %v, stats %v); the case expects no change", pass, st.RuleHits, st.Stats)
		case r != "none" && len(p.Rules) > 0 && st.RuleHits[r] == 0:
			return "", fmt.Errorf("rule %s did not fire (hits %v)", r, st.RuleHits)
		case r != "none" && !st.Changed:
			return "", fmt.Errorf("pass %s did not change the graph", pass)
		}
	}
	var buf bytes.Buffer
	if err := ir.Print(&buf, out); err != nil {
		return "", err
	}
	// The printed result must itself parse.
	if _, err := ops.Parse(bytes.NewReader(buf.Bytes())); err != nil {
		return "", fmt.Errorf("the result does not parse back: %w", err)
	}
	return buf.String(), nil
}
