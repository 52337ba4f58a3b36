package passes_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/golden"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
)

func stories(t *testing.T, mode models.KVWrite) *models.Model {
	t.Helper()
	f, err := gguf.Open(testref.Testdata("stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := models.Build(f, models.Options{KVWrite: mode})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustParse(t *testing.T, s string) passes.Pipeline {
	t.Helper()
	p, err := passes.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sinCos counts the ops that compute sines and cosines of rotation angles.
func sinCos(g *ir.Graph) int {
	n := 0
	for _, x := range g.Nodes {
		switch x.Op {
		case ir.OpRope, ir.OpRopeCache, ir.OpRopeSetRows:
			n++
		}
	}
	return n
}

// TestRopeCacheStories is the RoPE-cache acceptance test: stories260K has
// 5 layers, each rotating Q and K, so the graph as built computes the
// sin/cos tables 10 times per step; after the default pipeline one
// rope_cache table (computed once per step, in no layer) feeds all 10.
func TestRopeCacheStories(t *testing.T) {
	for _, mode := range []models.KVWrite{models.KVSetRows, models.KVCpy} {
		m := stories(t, mode)
		if got := sinCos(m.Graph); got != 10 {
			t.Fatalf("%s: graph as built computes sin/cos %d times, want 10", mode, got)
		}
		g, _, err := passes.Run(m.Graph, passes.Default(), passes.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := sinCos(g); got != 1 {
			t.Errorf("%s: after the default pipeline sin/cos is computed %d times per step, want 1", mode, got)
		}
		tables := g.Leaves(ir.OpRopeCache)
		if len(tables) != 1 || tables[0].Layer != -1 {
			t.Fatalf("%s: rope_cache nodes %v, want one outside the layers", mode, tables)
		}
		users := 0
		for _, n := range g.Nodes {
			for _, a := range n.Args {
				if a == tables[0] {
					users++
				}
			}
		}
		if users != 10 {
			t.Errorf("%s: the table has %d users, want 10 (Q and K of 5 layers)", mode, users)
		}
		// It is visible in the IR text.
		if !strings.Contains(g.String(), `= rope_cache(`) {
			t.Errorf("%s: rope_cache does not appear in the printed IR", mode)
		}
	}
}

// TestDefaultPipelineGolden keeps the optimised stories260K graph as a
// golden file (testdata/stories260K.default.ir, -update rewrites it): the
// whole default pipeline, reviewable as text.
func TestDefaultPipelineGolden(t *testing.T) {
	m := stories(t, models.KVSetRows)
	g, res, err := passes.Run(m.Graph, passes.Default(), passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := g.String()
	golden.Check(t, filepath.Join("testdata", "stories260K.default.ir"), []byte(got))
	if len(res.Passes) != len(passes.Default()) {
		t.Errorf("%d pass stats for %d passes", len(res.Passes), len(passes.Default()))
	}
}

func TestParse(t *testing.T) {
	def := passes.Default().Names()
	for _, c := range []struct {
		in   string
		want []string
		err  string
	}{
		{"default", def, ""},
		{"", def, ""},
		{"none", nil, ""},
		{"cse,dce", []string{"cse", "dce"}, ""},
		{" cse , dce ", []string{"cse", "dce"}, ""},
		{"default,merge-qkv", append(slices.Clone(def), "merge-qkv"), ""},
		{"cse,cse", []string{"cse", "cse"}, ""},
		{"cse,bogus", nil, `unknown pass "bogus"`},
		{"cse,,dce", nil, "empty pass name"},
		{"none,cse", nil, "none cannot be combined"},
		{"fuse-rope-set-rows,rope-cache", nil, "rope-cache must run before fuse-rope-set-rows"},
		{"cse,rope-cache", nil, "rope-cache must run before cse"},
		{"merge-qkv,fuse-matmul-bias", nil, "fuse-matmul-bias must run before merge-qkv"},
	} {
		p, err := passes.Parse(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Parse(%q): error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if !slices.Equal(p.Names(), c.want) {
			t.Errorf("Parse(%q) = %v, want %v", c.in, p.Names(), c.want)
		}
		// String round-trips.
		if q, err := passes.Parse(p.String()); err != nil || !slices.Equal(q.Names(), p.Names()) {
			t.Errorf("Parse(%q).String() = %q does not parse back: %v", c.in, p.String(), err)
		}
	}
}

// TestConstraintsAtStartup: every constraint names registered passes and
// the default pipeline obeys them (the package's init panics otherwise;
// this keeps the property visible).
func TestConstraintsAtStartup(t *testing.T) {
	if err := passes.Default().Check(); err != nil {
		t.Fatal(err)
	}
	for _, c := range passes.Constraints() {
		for _, n := range []string{c.Before, c.After} {
			if _, ok := passes.Lookup(n); !ok {
				t.Errorf("constraint %v names unknown pass %q", c, n)
			}
		}
	}
	if err := passes.AddConstraint(passes.Constraint{Before: "cse", After: "rope-cache"}); err == nil {
		t.Error("a constraint contradicting rope-cache < cse was accepted")
	}
	if err := passes.AddConstraint(passes.Constraint{Before: "cse", After: "nope"}); err == nil {
		t.Error("a constraint on an unknown pass was accepted")
	}
	if err := passes.Register(passes.Pass{Name: "cse", Run: func(*ir.Graph, *passes.Context) (bool, error) { return false, nil }}); err == nil {
		t.Error("registering a pass twice was accepted")
	}
	if err := passes.Register(passes.Pass{Name: "Bad Name", Run: func(*ir.Graph, *passes.Context) (bool, error) { return false, nil }}); err == nil {
		t.Error("a bad pass name was accepted")
	}
}

func tinyGraph(t *testing.T) *ir.Graph {
	t.Helper()
	g, err := ir.ParseString(`graph "tiny" {
  %0 = input() : f32[16,3] "x"
  %1 = weight() : f32[16] "w"
  %2 = rms_norm(%0) {eps=1e-05} : f32[16,3] "norm"
  %3 = mul(%2, %1) : f32[16,3] "y"
  %4 = cont(%3) : f32[16,3] "copy"
  outputs(%4)
}`)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestRunErrorsNameThePass: a failing pass, a pass that breaks the graph
// and a panicking pass are each reported with their name and the passes
// that ran before them; the input graph is never modified.
func TestRunErrorsNameThePass(t *testing.T) {
	g := tinyGraph(t)
	before := g.String()
	fail := passes.Pass{Name: "fails", Run: func(*ir.Graph, *passes.Context) (bool, error) {
		return false, errors.New("boom")
	}}
	breaks := passes.Pass{Name: "breaks", Run: func(g *ir.Graph, _ *passes.Context) (bool, error) {
		g.Nodes[0], g.Nodes[len(g.Nodes)-1] = g.Nodes[len(g.Nodes)-1], g.Nodes[0]
		return true, nil
	}}
	panics := passes.Pass{Name: "panics", Run: func(g *ir.Graph, _ *passes.Context) (bool, error) {
		var m map[string]int
		m["x"]++
		return false, nil
	}}
	pre := mustParse(t, "noop,fuse-norm")
	for _, c := range []struct {
		p    passes.Pass
		want string
	}{
		{fail, "pass fails failed (after [noop fuse-norm]): boom"},
		{breaks, "pass breaks left an invalid graph (after [noop fuse-norm])"},
		{panics, "pass panics failed (after [noop fuse-norm]): panic: assignment to entry in nil map"},
	} {
		_, res, err := passes.Run(g, append(slices.Clone(pre), c.p), passes.Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.p.Name, err, c.want)
		}
		if len(res.Passes) != 2 {
			t.Errorf("%s: %d passes reported, want the 2 that completed", c.p.Name, len(res.Passes))
		}
	}
	// Without verification the broken graph goes through unnoticed.
	if _, _, err := passes.Run(g, passes.Pipeline{breaks}, passes.Options{NoVerify: true}); err != nil {
		t.Errorf("NoVerify: %v", err)
	}
	if _, _, err := passes.Run(g, passes.Pipeline{fail}, passes.Options{}); err == nil || !strings.Contains(err.Error(), "after no other pass") {
		t.Errorf("first pass failing: %v", err)
	}
	if g.String() != before {
		t.Error("Run modified its input graph")
	}
	// A broken input is reported before any pass runs.
	bad := g.Clone()
	bad.Nodes[2].Args = nil
	if _, _, err := passes.Run(bad, pre, passes.Options{}); err == nil || !strings.Contains(err.Error(), "input graph") {
		t.Errorf("broken input: %v", err)
	}
}

// TestRunReports checks the statistics, snapshots, --print-after output
// and the dump directory.
func TestRunReports(t *testing.T) {
	g := tinyGraph(t)
	dir := t.TempDir()
	var printed bytes.Buffer
	p := mustParse(t, "noop,fuse-norm,dce")
	out, res, err := passes.Run(g, p, passes.Options{Snapshots: true, PrintAfter: []string{"fuse-norm"}, Print: &printed, DumpDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	wantChanged := map[string]bool{"noop": true, "fuse-norm": true, "dce": false}
	for _, st := range res.Passes {
		if st.Changed != wantChanged[st.Name] {
			t.Errorf("%s: changed = %v", st.Name, st.Changed)
		}
		if st.Duration <= 0 {
			t.Errorf("%s: no time recorded", st.Name)
		}
	}
	if h := res.Passes[1].RuleHits; h["rms-norm-mul"] != 1 || len(h) != 1 {
		t.Errorf("fuse-norm hits %v", h)
	}
	if h := res.Passes[0].RuleHits; h["cont-contiguous"] != 1 {
		t.Errorf("noop hits %v", h)
	}
	if res.Passes[0].NodesBefore != 3 || res.Passes[1].NodesAfter != 1 {
		t.Errorf("node counts %+v", res.Passes)
	}
	if len(res.Snapshots) != 3 || res.Snapshots[1].Pass != "fuse-norm" || res.Snapshots[2].Graph.String() != out.String() {
		t.Errorf("snapshots %v", res.Snapshots)
	}
	if !strings.HasPrefix(printed.String(), "// -----// IR Dump After fuse-norm //----- //\n") || strings.Count(printed.String(), "graph \"tiny\"") != 1 {
		t.Errorf("print-after output:\n%s", printed.String())
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.ir"))
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ir.ParseString(string(raw)); err != nil {
			t.Errorf("%s does not parse: %v", f, err)
		}
	}
	if want := []string{"00-input.ir", "01-noop.ir", "02-fuse-norm.ir", "03-dce.ir"}; !slices.Equal(names, want) {
		t.Errorf("dumped %v, want %v", names, want)
	}
}

// TestRewriteDriver checks the engine on its own: hits per rule, rules
// composing within one call, non-termination caught by the caps, bad
// replacements reported with the rule's name.
func TestRewriteDriver(t *testing.T) {
	g := tinyGraph(t)
	// A user rule: cont(x) -> x. Composes with the built-in rms-norm-mul.
	drop := &passes.Rule{Name: "drop-cont", Pattern: passes.Op(ir.OpCont, passes.Any("x")),
		Build: func(b *passes.Builder, m *passes.Match) (*ir.Node, error) { return m.Get("x"), nil }}
	norm := mustParse(t, "fuse-norm")[0].Rules[0]
	st, err := passes.Rewrite(g, []*passes.Rule{drop, norm}, passes.RewriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Hits["drop-cont"] != 1 || st.Hits["rms-norm-mul"] != 1 || st.Rewrites != 2 {
		t.Errorf("stats %+v", st)
	}
	if g.Outputs[0].Op != ir.OpRMSNormMul || g.NumOps() != 1 {
		t.Errorf("result:\n%s", g)
	}
	if err := ir.Verify(g); err != nil {
		t.Error(err)
	}

	// Two rules that undo each other never reach a fixed point.
	g = tinyGraph(t)
	flip := func(name string, from, to ir.Op) *passes.Rule {
		return &passes.Rule{Name: name, Pattern: passes.Op(from, passes.Any("x")),
			Build: func(b *passes.Builder, m *passes.Match) (*ir.Node, error) {
				return b.Typed(to, m.Root.Type, nil, m.Get("x"))
			}}
	}
	_, err = passes.Rewrite(g, []*passes.Rule{flip("to-cast", ir.OpCont, ir.OpCast), flip("to-cont", ir.OpCast, ir.OpCont)}, passes.RewriteOptions{MaxIterations: 3})
	if err == nil || !strings.Contains(err.Error(), "to-cast=") {
		t.Errorf("oscillating rules: %v", err)
	}

	// A replacement of the wrong type is an error naming the rule.
	g = tinyGraph(t)
	wrong := &passes.Rule{Name: "wrong-type", Pattern: passes.Op(ir.OpCont, passes.Any("x")),
		Build: func(b *passes.Builder, m *passes.Match) (*ir.Node, error) {
			return b.Typed(ir.OpCast, ir.T(ir.F16, 16, 3), nil, m.Get("x"))
		}}
	if _, err := passes.Rewrite(g, []*passes.Rule{wrong}, passes.RewriteOptions{}); err == nil || !strings.Contains(err.Error(), "rule wrong-type at %4") {
		t.Errorf("wrong type: %v", err)
	}
	// A builder error names the rule too, and an invalid node is refused.
	g = tinyGraph(t)
	bad := &passes.Rule{Name: "bad-node", Pattern: passes.Op(ir.OpCont, passes.Any("x")),
		Build: func(b *passes.Builder, m *passes.Match) (*ir.Node, error) {
			return b.Op(ir.OpMulMat, nil, m.Get("x"), m.Get("x"), m.Get("x"))
		}}
	if _, err := passes.Rewrite(g, []*passes.Rule{bad}, passes.RewriteOptions{}); err == nil || !strings.Contains(err.Error(), "rule bad-node") {
		t.Errorf("bad node: %v", err)
	}
	if _, err := passes.Rewrite(g, []*passes.Rule{{Name: "no-pattern"}}, passes.RewriteOptions{}); err == nil {
		t.Error("a rule without a pattern was accepted")
	}
}

// TestPatternMatching checks captures, OneUse, attributes, commutation and
// predicates through small rules.
func TestPatternMatching(t *testing.T) {
	src := `graph "m" {
  %0 = input() : f32[16,3] "a"
  %1 = input() : f32[16,3] "b"
  %2 = silu(%0) : f32[16,3] "s"
  %3 = mul(%1, %2) : f32[16,3] "commuted"
  %4 = scale(%0) {scale=2.0} : f32[16,3] "two"
  %5 = scale(%0) {scale=3.0} : f32[16,3] "three"
  %6 = add(%4, %4) : f32[16,3] "same"
  %7 = add(%4, %5) : f32[16,3] "different"
  outputs(%3, %6, %7)
}`
	count := func(p *passes.Pattern, cond func(*passes.Match) bool) int {
		g, err := ir.ParseString(src)
		if err != nil {
			t.Fatal(err)
		}
		hits := 0
		r := &passes.Rule{Name: "probe", Pattern: p, Cond: cond, Build: func(b *passes.Builder, m *passes.Match) (*ir.Node, error) {
			hits++
			return nil, nil // decline: only count matches
		}}
		if _, err := passes.Rewrite(g, []*passes.Rule{r}, passes.RewriteOptions{}); err != nil {
			t.Fatal(err)
		}
		return hits
	}
	swiglu := passes.Op(ir.OpMul, passes.Op(ir.OpSilu, passes.Any("g")), passes.Any("u"))
	if n := count(swiglu, nil); n != 0 {
		t.Errorf("operands in the other order matched without Commutative: %d", n)
	}
	swiglu = passes.Op(ir.OpMul, passes.Op(ir.OpSilu, passes.Any("g")), passes.Any("u")).Commutative()
	if n := count(swiglu, nil); n != 1 {
		t.Errorf("commutative match: %d", n)
	}
	twice := passes.Op(ir.OpAdd, passes.Any("x"), passes.Any("x"))
	if n := count(twice, nil); n != 1 {
		t.Errorf("a capture bound twice must be the same node: %d matches", n)
	}
	if n := count(passes.Op(ir.OpScale, passes.Any("x")).Attr("scale", 3.0), nil); n != 1 {
		t.Errorf("attribute match: %d", n)
	}
	single := passes.Op(ir.OpAdd, passes.Op(ir.OpScale, passes.Any("x")).OneUse(), passes.Any("y"))
	if n := count(single, nil); n != 0 {
		t.Errorf("OneUse matched a node with other users: %d", n)
	}
	pred := passes.Op(ir.OpAdd, passes.Any("x"), passes.Any("y"))
	if n := count(pred, func(m *passes.Match) bool { return m.Get("x") != m.Get("y") }); n != 1 {
		t.Errorf("rule condition: %d", n)
	}
	if n := count(passes.OneOf(ir.OpSilu, ir.OpScale).Where(func(n *ir.Node) bool { return n.Name != "three" }), nil); n != 2 {
		t.Errorf("OneOf with a predicate: %d", n)
	}
	if n := count(passes.Op(ir.OpAdd, passes.Any("x")), nil); n != 0 {
		t.Errorf("arity mismatch matched: %d", n)
	}
	if n := count(passes.Op(ir.OpAdd, passes.Any("x")).AllowMore(), nil); n != 2 {
		t.Errorf("AllowMore: %d", n)
	}
}

// FuzzParsePipeline: Parse never panics, names the problem with the package
// prefix, and a pipeline it accepts prints to text that parses to the same
// pipeline.
func FuzzParsePipeline(f *testing.F) {
	for _, s := range []string{"default", "none", "", "cse,dce", "default,merge-qkv", "cse,rope-cache", ",,", "fold, cse ,dce", "none,cse"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		p, err := passes.Parse(in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "passes: ") {
				t.Fatalf("error without the package prefix: %v", err)
			}
			return
		}
		q, err := passes.Parse(p.String())
		if err != nil {
			t.Fatalf("%q parsed to %q, which does not parse: %v", in, p.String(), err)
		}
		if q.String() != p.String() {
			t.Fatalf("%q: %q reparses as %q", in, p.String(), q.String())
		}
	})
}
