package passtest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/passes/passtest"
)

const halveCase = `// rule: halve-twice
graph "halve" {
  %0 = input() : f32[8,2] "x"
  %1 = scale(%0) {scale=0.5} : f32[8,2] "a"
  %2 = scale(%1) {scale=0.5} : f32[8,2] "b"
  outputs(%2)
}
`

// registry holds one user pass: scale(scale(x){a}){b} -> scale(x){a*b},
// exact for powers of two (right) or, wrongly, scale(x){a}.
func registry(t *testing.T, right bool) *passes.Registry {
	reg := passes.NewRegistry()
	rule := &passes.Rule{Name: "halve-twice", Pattern: passes.Op(ir.OpScale, passes.Op(ir.OpScale, passes.Any("x")).As("inner")),
		Build: func(b *passes.Builder, m *passes.Match) (*ir.Node, error) {
			a, _ := m.Get("inner").Attrs.Float(ir.AttrScale)
			c, _ := m.Root.Attrs.Float(ir.AttrScale)
			if !right {
				c = 1
			}
			return b.Op(ir.OpScale, ir.Attrs{ir.AttrScale: a * c}, m.Get("x"))
		}}
	if err := reg.Register(passes.RulePass("scale-chain", "scale(scale(x)) -> scale(x)", rule)); err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestGoldenUserPass: the harness runs a pass of a user's registry on a
// case directory of their own, and a rule that computes wrongly fails the
// execution comparison naming the pass.
func TestGoldenUserPass(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "scale-chain"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "scale-chain", "halve.ir")
	if err := os.WriteFile(path, []byte(halveCase), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := passtest.Run("scale-chain", halveCase, passtest.Options{Passes: registry(t, true)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "scale(%0) {scale=0.25}") {
		t.Fatalf("result:\n%s", got)
	}
	want := "// scale-chain of halve.ir\n" + got
	if err := os.WriteFile(filepath.Join(dir, "scale-chain", "halve.out.ir"), []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	passtest.Golden(t, dir, passtest.Options{Passes: registry(t, true)})

	_, err = passtest.Run("scale-chain", halveCase, passtest.Options{Passes: registry(t, false)})
	if err == nil || !strings.Contains(err.Error(), "pass scale-chain") || !strings.Contains(err.Error(), "max|Δ|") {
		t.Fatalf("wrong rule: err = %v", err)
	}
	if _, err := passtest.Run("scale-chain", strings.Replace(halveCase, "// rule: halve-twice", "// rule: none", 1), passtest.Options{Passes: registry(t, true)}); err == nil {
		t.Fatal("a case expecting no change passed though the rule fired")
	}
}
