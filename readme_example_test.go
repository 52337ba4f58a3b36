package irtool_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
)

// The program of README.md's "Use irtool from your own module", as an
// Example of an external test package: it uses public packages only, and
// TestReadmeProgram checks that README's copy is this code.
func Example_ownModule() {
	f, err := gguf.Parse(irtool.EmbeddedModel, "stories260K.gguf") // or gguf.Open("model.gguf")
	if err != nil {
		log.Fatal(err)
	}
	ctx := irtool.NewContext()
	m, err := ctx.BuildModel(f, models.Options{NCtx: 256})
	if err != nil {
		log.Fatal(err)
	}
	// A rewrite rule, run as a pass of its own before the default pipeline:
	// a scale by 1 is its operand.
	one := func(n *ir.Node) bool { s, _ := n.Attrs.Float("scale"); return s == 1 }
	rule := &passes.Rule{Name: "drop-scale-one", Pattern: passes.Op(ir.OpScale, passes.Any("x")).Where(one),
		Build: func(_ *passes.Builder, m *passes.Match) (*ir.Node, error) { return m.Get("x"), nil }}
	if err := ctx.Passes.Register(passes.RulePass("drop-scale-one", "scale(x){scale=1} -> x", rule)); err != nil {
		log.Fatal(err)
	}
	opts := compiler.Options{Target: "cpu", Passes: "drop-scale-one,default", Until: compiler.StageMemory}
	r, err := ctx.Compile(context.Background(), m.Graph, opts)
	if err != nil {
		log.Fatal(err)
	}
	for _, mp := range []*compiler.PlannedStep{r.Memory, r.MemoryDecode} {
		p := mp.Plan
		fmt.Printf("%s (%s): arena %d B, lower bound %d B, %s\n", mp.What, mp.Bindings, p.ArenaBytes, p.LowerBound, p.Strategy)
	}
	// Output:
	// worst case (n_kv=256,n_outputs=256,n_tokens=256): arena 491520 B, lower bound 491520 B, greedy-size
	// decode (n_kv=256,n_outputs=1,n_tokens=1): arena 1952 B, lower bound 1952 B, greedy-size
}

// TestReadmeProgram: README's program is Example_ownModule's body.
func TestReadmeProgram(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(readme), "## Use irtool from your own module")
	if !ok {
		t.Fatal(`README.md has no section "Use irtool from your own module"`)
	}
	_, code, ok := strings.Cut(sec, "```go\n")
	code, _, ok2 := strings.Cut(code, "```")
	_, body, ok3 := strings.Cut(code, "func main() {\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md's section has no ```go block with func main")
	}
	src, err := os.ReadFile("readme_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, ex, _ := strings.Cut(string(src), "func Example_ownModule() {\n")
	ex, _, _ = strings.Cut(ex, "\t// Output:")
	norm := func(s string) string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			if l = strings.TrimSpace(l); l != "" && l != "}" {
				out = append(out, l)
			}
		}
		return strings.Join(out, "\n")
	}
	if norm(body) != norm(ex) {
		t.Errorf("README.md's program differs from Example_ownModule:\nREADME:\n%s\n\nExample:\n%s", norm(body), norm(ex))
	}
	for _, imp := range []string{`"github.com/irtool/irtool/compiler"`, `"github.com/irtool/irtool/passes"`} {
		if !strings.Contains(code, imp) {
			t.Errorf("README.md's program does not import %s", imp)
		}
	}
}
