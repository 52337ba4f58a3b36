package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/internal/golden"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/passes"
)

// TestPassesCommand: the listing matches testdata/passes.txt (-update
// rewrites it) and the JSON form lists every pass, rule and introduced op.
func TestPassesCommand(t *testing.T) {
	code, out, errs := runCLI(t, "passes")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	golden.Check(t, filepath.Join("testdata", "passes.txt"), []byte(out))
	code, out, errs = runCLI(t, "passes", "--json")
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errs)
	}
	var list passes.Catalogue
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(list.Default, passes.Default().Names()) || len(list.Passes) != len(passes.All()) {
		t.Errorf("default %v, %d passes", list.Default, len(list.Passes))
	}
	rules := 0
	for _, p := range list.Passes {
		rules += len(p.Rules)
		for _, r := range p.Rules {
			if r.Name == "" || r.Pattern == "" || r.Doc == "" {
				t.Errorf("pass %s: incomplete rule %+v", p.Name, r)
			}
		}
	}
	if rules < 15 || len(list.FusedOps) != len(passes.Ops()) {
		t.Errorf("%d rules, %d ops", rules, len(list.FusedOps))
	}
	if code, _, errs := runCLI(t, "passes", "a.gguf", "b.gguf"); code != 2 || !strings.Contains(errs, "want at most one model path") {
		t.Errorf("extra argument: exit %d, %s", code, errs)
	}
	if code, _, errs := runCLI(t, "passes", "nothere.gguf"); code != 1 || !strings.Contains(errs, "nothere.gguf") {
		t.Errorf("missing model: exit %d, %s", code, errs)
	}
}

type compileOut struct {
	NodesBefore int            `json:"nodes_before"`
	NodesAfter  int            `json:"nodes_after"`
	OpsBefore   map[string]int `json:"ops_before"`
	OpsAfter    map[string]int `json:"ops_after"`
	Passes      []struct {
		Name       string         `json:"name"`
		Changed    *bool          `json:"changed"`
		MS         *float64       `json:"time_ms"`
		RuleHits   map[string]int `json:"rule_hits"`
		Stats      map[string]int `json:"stats"`
		NodesAfter int            `json:"nodes_after"`
		Check      *struct {
			Unchanged bool `json:"unchanged"`
			Identical bool `json:"bit_identical"`
			Steps     int  `json:"steps"`
		} `json:"check"`
		Raw json.RawMessage `json:"-"`
	} `json:"passes"`
}

func compileJSONRun(t *testing.T, args ...string) (compileOut, string) {
	t.Helper()
	code, out, errs := runCLI(t, append([]string{"compile", "--json", "--strategy", "greedy-size"}, args...)...)
	if code != 0 {
		t.Fatalf("compile %v: exit %d: %s", args, code, errs)
	}
	var c compileOut
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("compile %v: %v\n%s", args, err, out)
	}
	return c, errs
}

// TestCompilePasses checks the passes fields of compile --json and the
// pipeline flags.
func TestCompilePasses(t *testing.T) {
	c, _ := compileJSONRun(t)
	if c.NodesBefore != 156 || c.NodesAfter >= c.NodesBefore || c.OpsBefore["rope"] != 10 || c.OpsAfter["rope_cache"] != 1 {
		t.Errorf("nodes %d -> %d, ops %v -> %v", c.NodesBefore, c.NodesAfter, c.OpsBefore, c.OpsAfter)
	}
	var names []string
	for _, p := range c.Passes {
		names = append(names, p.Name)
		if p.Changed == nil || p.MS == nil || p.RuleHits == nil {
			t.Errorf("pass %s lacks changed, ms or rule_hits", p.Name)
		}
	}
	if !slices.Equal(names, passes.Default().Names()) {
		t.Errorf("passes %v", names)
	}
	if last := c.Passes[len(c.Passes)-1]; last.NodesAfter != c.NodesAfter {
		t.Errorf("last pass leaves %d ops, nodes_after %d", last.NodesAfter, c.NodesAfter)
	}

	none, _ := compileJSONRun(t, "--passes", "none")
	if len(none.Passes) != 0 || none.NodesAfter != none.NodesBefore {
		t.Errorf("--passes none: %d passes, %d -> %d", len(none.Passes), none.NodesBefore, none.NodesAfter)
	}
	mq, _ := compileJSONRun(t, "--merge-qkv")
	if p := mq.Passes[len(mq.Passes)-1]; p.Name != "merge-qkv" || p.Stats["groups"] != 10 || mq.OpsAfter["concat"] != 10 {
		t.Errorf("--merge-qkv: last pass %s stats %v, ops %v", p.Name, p.Stats, mq.OpsAfter)
	}

	// --print-after (the alias of --print-ir-after) prints to stderr.
	_, errs := compileJSONRun(t, "--passes", "noop,rope-cache,cse", "--print-after", "cse")
	if !strings.Contains(errs, "// -----// IR Dump After cse //----- //") || strings.Count(errs, "// -----// IR Dump After") != 1 {
		t.Errorf("--print-after cse with --json: stderr\n%s", errs)
	}
	code, out, errs := runCLI(t, "compile", "--strategy", "greedy-size", "--passes", "noop,rope-cache", "--print-after", "all")
	if code != 0 || strings.Count(errs, "// -----// IR Dump After") != 2 || !strings.Contains(out, "rope-cache           yes") || strings.Contains(out, "IR Dump") {
		t.Errorf("--print-after all: exit %d, %s\n%s", code, errs, out)
	}

	dir := t.TempDir()
	compileJSONRun(t, "--passes", "cse,dce", "--dump-dir", dir)
	for _, f := range []string{"00-input.ir", "01-cse.ir", "02-dce.ir"} {
		raw, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ir.ParseString(string(raw)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}

	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		// A bad pipeline is a usage error, caught before any work.
		{[]string{"--passes", "bogus"}, 2, `unknown pass "bogus"`},
		{[]string{"--passes", "cse,rope-cache"}, 2, "rope-cache must run before cse"},
		{[]string{"--passes", "cse", "--print-after", "dce"}, 1, "--print-ir-after dce: the pipeline cse does not run it"},
		{[]string{"--passes", "cse", "--print-ir-before", "all"}, 1, "--print-ir-before all: the pipeline cse does not run it"},
		{[]string{"--check", "--check-tol", "-1"}, 1, "--check-tol -1: want 0 or more"},
	} {
		code, _, errs := runCLI(t, append([]string{"compile", "--json"}, c.args...)...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d, stderr %s", c.args, code, errs)
		}
	}
}

// TestRunPasses: run optimises by default and gives the same tokens and
// logits as the graph as built.
func TestRunPasses(t *testing.T) {
	args := []string{"--tokens", "1,403,411,263", "-n", "6", "--json", "--logits"}
	opt := runJSONCmd(t, args...)
	raw := runJSONCmd(t, append(args, "--passes", "none")...)
	mq := runJSONCmd(t, append(args, "--passes", "default,merge-qkv")...)
	if !slices.Equal(opt.Tokens, raw.Tokens) || !slices.Equal(mq.Tokens, raw.Tokens) {
		t.Fatalf("tokens %v / %v, unoptimised %v", opt.Tokens, mq.Tokens, raw.Tokens)
	}
	for i := range raw.Logits {
		if !slices.Equal(opt.Logits[i], raw.Logits[i]) || !slices.Equal(mq.Logits[i], raw.Logits[i]) {
			t.Errorf("step %d: logits differ from the unoptimised graph's", i)
		}
	}
	if code, _, errs := runCLI(t, "run", "--tokens", "1", "--passes", "nope"); code != 2 || !strings.Contains(errs, `unknown pass "nope"`) {
		t.Errorf("--passes nope: exit %d, %s", code, errs)
	}
}

// TestPassInstrumentFlags: mlir-opt's printing flags on compile and
// passes, --dump-dir on passes, and --check on the default pipeline.
func TestPassInstrumentFlags(t *testing.T) {
	header := func(when, pass string) string { return "// -----// IR Dump " + when + " " + pass + " //----- //\n" }
	for _, c := range []struct {
		args []string
		want []string // headers in order
	}{
		{[]string{"--print-ir-after", "fuse-norm"}, []string{header("After", "fuse-norm")}},
		{[]string{"--print-ir-before", "cse,fuse-norm"}, []string{header("Before", "cse"), header("Before", "fuse-norm")}},
		{[]string{"--passes", "noop,rope-cache,cse", "--print-ir-after-all"}, []string{header("After", "noop"), header("After", "rope-cache"), header("After", "cse")}},
		// noop changes nothing on stories260K: after-change leaves it out.
		{[]string{"--passes", "noop,rope-cache,cse", "--print-ir-after-change"}, []string{header("After", "rope-cache"), header("After", "cse")}},
		{[]string{"--passes", "noop,rope-cache,cse", "--print-ir-after", "noop,cse", "--print-ir-after-change"}, []string{header("After", "cse")}},
	} {
		for _, cmd := range []string{"compile", "passes"} {
			args := append([]string{cmd, "--json"}, c.args...)
			if cmd == "passes" {
				args = append([]string{cmd, testref.Testdata("stories260K.gguf"), "--json"}, c.args...)
			}
			code, out, errs := runCLI(t, args...)
			if code != 0 || !json.Valid([]byte(out)) {
				t.Errorf("%v: exit %d, %s", args, code, errs)
				continue
			}
			var got []string
			for _, line := range strings.SplitAfter(errs, "\n") {
				if strings.HasPrefix(line, "// -----// IR Dump") {
					got = append(got, line)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%v: headers %q, want %q", args, got, c.want)
			}
			// Each dump is IR text that parses.
			if i := strings.Index(errs, c.want[0]); i >= 0 {
				dump := errs[i+len(c.want[0]):]
				if j := strings.Index(dump, "\n}\n"); j >= 0 {
					if _, err := ir.ParseString(dump[:j+3]); err != nil {
						t.Errorf("%v: the first dump does not parse: %v", args, err)
					}
				}
			}
		}
	}

	dir := t.TempDir()
	if code, _, errs := runCLI(t, "passes", testref.Testdata("stories260K.gguf"), "--passes", "cse,dce", "--dump-dir", dir, "-o", filepath.Join(dir, "out.ir")); code != 0 {
		t.Fatalf("passes --dump-dir: %s", errs)
	}
	for _, f := range []string{"00-input.ir", "01-cse.ir", "02-dce.ir"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}

	// --check names every pass of the default pipeline with its
	// comparison, on stdout, and exits 0: every default pass keeps the
	// logits' bits.
	code, out, errs := runCLI(t, "passes", "--check")
	if code != 0 {
		t.Fatalf("passes --check: exit %d, %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(passes.Default()) {
		t.Fatalf("passes --check printed %d lines, want one per default pass:\n%s", len(lines), out)
	}
	for i, p := range passes.Default() {
		if l := lines[i]; l != "check "+p.Name+": unchanged" && l != "check "+p.Name+": bit-identical (4 steps)" {
			t.Errorf("line %d: %q", i, l)
		}
	}
	// compile --check --json: each pass record has its comparison.
	cj, _ := compileJSONRun(t, "--check", "--check-steps", "1")
	for _, p := range cj.Passes {
		if p.Check == nil || !p.Check.Identical || p.Check.Steps != 2 && !p.Check.Unchanged {
			t.Errorf("compile --check --json: pass %s: check %+v", p.Name, p.Check)
		}
	}
}

// TestPassesCheckWrongRule: a pass of a context's own that types
// correctly but computes wrongly (silu(x) -> x) passes the verifier;
// passes --check fails at it, naming it, after the passes before it
// checked bit-identical.
func TestPassesCheckWrongRule(t *testing.T) {
	reg := irtool.NewContext()
	wrong := &passes.Rule{Name: "wrong-silu", Pattern: passes.Op(ir.OpSilu, passes.Any("x")),
		Build: func(_ *passes.Builder, m *passes.Match) (*ir.Node, error) { return m.Get("x"), nil }}
	if err := reg.Passes.Register(passes.RulePass("wrong-silu", "silu(x) -> x, wrongly", wrong)); err != nil {
		t.Fatal(err)
	}
	var out, errs strings.Builder
	code := runIn(reg, []string{"passes", "--check", "--passes", "rope-cache,wrong-silu,default"}, &out, &errs)
	if code != 1 || !strings.Contains(errs.String(), "pass wrong-silu (after [rope-cache]): check: results differ from the graph before it: max|Δ|") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errs.String())
	}
	if want := "check rope-cache: bit-identical (4 steps)\n"; !strings.HasPrefix(out.String(), want) || !strings.Contains(out.String(), "check wrong-silu: max|Δ|") {
		t.Errorf("stdout:\n%s", out.String())
	}
	// Without --check the same pipeline runs: the verifier cannot tell.
	if code := runIn(reg, []string{"passes", "--passes", "wrong-silu,default", "--json"}, &out, &errs); code != 0 {
		t.Errorf("without --check: exit %d", code)
	}
}
