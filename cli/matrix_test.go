package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/viz"
)

// The command matrix: every model of testdata/ and of the external
// reference data directory (when present; required under
// IRTOOL_REQUIRE_REFERENCE) goes through every command a user would try,
// as a user would chain them: inspect and tokenize the GGUF file, write its
// IR (to stdout and with -o), then compile, run, bench, viz, plan and
// passes that IR text from another directory than the model's and the
// test's, for every target with and without --requant and for every viz
// view. Every command must exit 0 with well-formed output (JSON that
// parses, DOT and SVG that are not empty). Each command takes the cheapest
// flags that still exercise it; the models run in parallel.

// matrixTargets are the compile targets (target.Names would hide a target
// that stopped registering).
var matrixTargets = []string{"ascend910b", "ascend310b", "ascend310b-strict", "cpu"}

// matrixModels lists testdata's GGUF models and the reference directory's.
func matrixModels(t *testing.T) []string {
	t.Helper()
	models, err := filepath.Glob(filepath.Join(testref.Root(), "testdata", "*.gguf"))
	if err != nil || len(models) == 0 {
		t.Fatalf("no models in testdata: %v", err)
	}
	if testref.SharedDir() != "" || testref.Required() {
		for _, m := range testref.Models(t) {
			if !slices.Contains(models, m) {
				models = append(models, m)
			}
		}
	}
	return models
}

// matrixRun runs one command and fails the test unless it exits 0; it
// returns stdout.
func matrixRun(t *testing.T, args ...string) []byte {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != 0 {
		t.Errorf("irtool %s: exit %d\n%s", strings.Join(args, " "), code, lastLines(errb.String(), 8))
		return nil
	}
	return out.Bytes()
}

// matrixJSON runs a command that prints one JSON object and checks that it
// parses.
func matrixJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out := matrixRun(t, args...)
	if out == nil {
		return nil
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		t.Errorf("irtool %s: output is not one JSON object: %v\n%.300s", strings.Join(args, " "), err, out)
	}
	return v
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func TestCommandMatrix(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the command matrix runs every command on every model")
	}
	models := matrixModels(t)
	for _, m := range models {
		t.Run(filepath.Base(filepath.Dir(m))+"/"+filepath.Base(m), func(t *testing.T) {
			t.Parallel()
			matrixModel(t, m)
		})
	}
	t.Run("strategies", func(t *testing.T) {
		t.Parallel()
		matrixStrategies(t, filepath.Join(testref.Root(), "testdata", "synth-llama-Q4_0.gguf"))
	})
}

// matrixIR writes the IR of model to stdout and with -o into two new
// directories, neither the model's nor the working directory, and returns
// the two files.
func matrixIR(t *testing.T, model string) (stdoutIR, fileIR string) {
	t.Helper()
	stdoutIR = filepath.Join(t.TempDir(), "stdout.ir")
	text := matrixRun(t, "ir", model)
	if len(text) == 0 {
		t.Fatalf("irtool ir %s: no IR", model)
	}
	if err := os.WriteFile(stdoutIR, text, 0o644); err != nil {
		t.Fatal(err)
	}
	fileIR = filepath.Join(t.TempDir(), "o.ir")
	matrixRun(t, "ir", model, "-o", fileIR)
	if st, err := os.Stat(fileIR); err != nil || st.Size() == 0 {
		t.Fatalf("irtool ir %s -o %s: %v", model, fileIR, err)
	}
	return stdoutIR, fileIR
}

func matrixModel(t *testing.T, model string) {
	matrixJSON(t, "inspect", model, "--json")
	matrixJSON(t, "tokenize", model, "Once upon a time", "--json")
	stdoutIR, fileIR := matrixIR(t, model)
	if t.Failed() {
		return
	}
	// Both IR files read back: the one written to stdout and the one
	// written with -o (their meta weights are resolved differently).
	matrixJSON(t, "compile", stdoutIR, "--json")
	for _, tgt := range matrixTargets {
		matrixJSON(t, "compile", fileIR, "--target", tgt, "--json")
		matrixJSON(t, "compile", fileIR, "--target", tgt, "--requant", "q8_0", "--json")
	}
	if strings.HasSuffix(model, "stories260K.gguf") {
		// The split model, from the GGUF file and from the IR as built.
		for _, src := range []string{model, fileIR} {
			for _, split := range [][]string{{"--tp", "2"}, {"--pp", "2"}} {
				v := matrixJSON(t, append([]string{"compile", src, "--strategy", "greedy-size", "--json"}, split...)...)
				if ranks, _ := v["ranks"].([]any); v != nil && len(ranks) != 2 {
					t.Errorf("compile %s %v --json: %d ranks, want 2", src, split, len(ranks))
				}
			}
		}
		matrixJSON(t, "compile", model, "--tp-sweep", "1,2,4", "--json")
	}
	for _, what := range slices.Sorted(mapKeys(vizViews)) {
		// Each view's default format: DOT, SVG, or a text table.
		out := matrixRun(t, "viz", fileIR, "--what", what)
		if out != nil && !bytes.HasPrefix(out, []byte("digraph {")) && !bytes.HasPrefix(out, []byte("graph {")) &&
			!bytes.HasPrefix(out, []byte("<svg")) && !bytes.HasPrefix(out, []byte("# ")) {
			t.Errorf("viz --what %s: neither DOT, SVG nor a table:\n%.200s", what, out)
		}
	}
	// A file by its extension: .dot needs nothing, .svg Graphviz's dot.
	for _, o := range []struct{ name, want string }{{"graph.dot", "digraph {"}, {"graph.svg", "<svg"}} {
		if strings.HasSuffix(o.name, ".svg") && !viz.HaveGraphviz() {
			t.Logf("viz -o %s: skipped, Graphviz's dot is not installed", o.name)
			continue
		}
		path := filepath.Join(t.TempDir(), o.name)
		matrixRun(t, "viz", fileIR, "--what", "graph", "-o", path)
		if b, err := os.ReadFile(path); err != nil || !bytes.Contains(b, []byte(o.want)) {
			t.Errorf("viz -o %s: no %q (%v)", path, o.want, err)
		}
	}
	for _, backend := range []string{"cpu", "sim"} {
		v := matrixJSON(t, "run", fileIR, "--backend", backend, "--tokens", "1,2", "-n", "4", "--json")
		if toks, _ := v["tokens"].([]any); v != nil && len(toks) != 4 {
			t.Errorf("run --backend %s: %d tokens, want 4", backend, len(toks))
		}
	}
	matrixRunCANN(t, fileIR)
	matrixJSON(t, "bench", stdoutIR, "-p", "8", "-n", "4", "-r", "1", "--json")
	matrixJSON(t, "plan", fileIR, "--json")
	matrixJSON(t, "passes", fileIR, "--json")
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// matrixStrategies compiles and plans one model with every strategy the
// planner registers: the graph strategies (compile, plan FILE.ir) on its
// IR, and the instance strategies (plan INSTANCE.csv) on the worst-case
// problem compile exports.
func matrixStrategies(t *testing.T, model string) {
	_, fileIR := matrixIR(t, model)
	if t.Failed() {
		return
	}
	csv := filepath.Join(t.TempDir(), "buffers.csv")
	matrixRun(t, "compile", fileIR, "--export-buffers", csv)
	for _, s := range planner.GraphStrategies() {
		t.Run("graph/"+s, func(t *testing.T) {
			t.Parallel()
			matrixJSON(t, "compile", fileIR, "--strategy", s, "--budget", "200ms", "--json")
			matrixJSON(t, "plan", fileIR, "--strategy", s, "--json")
		})
	}
	for _, s := range planner.Strategies() {
		t.Run("instance/"+s, func(t *testing.T) {
			t.Parallel()
			matrixJSON(t, "plan", csv, "--strategy", s, "--budget", "200ms", "--json")
		})
	}
}
