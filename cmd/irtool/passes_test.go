package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/golden"
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
	var list passesListJSON
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
		Name       string          `json:"name"`
		Changed    *bool           `json:"changed"`
		MS         *float64        `json:"time_ms"`
		RuleHits   map[string]int  `json:"rule_hits"`
		Stats      map[string]int  `json:"stats"`
		NodesAfter int             `json:"nodes_after"`
		Raw        json.RawMessage `json:"-"`
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

	// --print-after goes to stderr with --json (stdout stays JSON), to
	// stdout otherwise.
	_, errs := compileJSONRun(t, "--passes", "noop,rope-cache,cse", "--print-after", "cse")
	if !strings.Contains(errs, "// -----// IR Dump After cse //----- //") || strings.Count(errs, "// -----// IR Dump After") != 1 {
		t.Errorf("--print-after cse with --json: stderr\n%s", errs)
	}
	code, out, errs := runCLI(t, "compile", "--strategy", "greedy-size", "--passes", "noop,rope-cache", "--print-after", "all")
	if code != 0 || strings.Count(out, "// -----// IR Dump After") != 2 || !strings.Contains(out, "rope-cache           yes") {
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
		{[]string{"--passes", "cse", "--print-after", "dce"}, 1, "--print-after dce: the pipeline cse does not run it"},
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
