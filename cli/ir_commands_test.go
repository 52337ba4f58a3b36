package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/testref"
)

// irOf writes the IR of a testdata model to a file in a new directory
// (with -o, or through stdout when toStdout) and returns its path.
func irOf(t *testing.T, model string, toStdout bool, extra ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.ir")
	args := append([]string{"ir", filepath.Join(testref.Root(), "testdata", model)}, extra...)
	if !toStdout {
		args = append(args, "-o", path)
	}
	code, out, errb := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("%q: exit %d\n%s", args, code, errb)
	}
	if toStdout {
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestIRWeightsPath: IR written to stdout names its weights by absolute
// path (so it reads back from any directory); with -o, relative to the
// file's directory (so the two move together).
func TestIRWeightsPath(t *testing.T) {
	model := filepath.Join(testref.Root(), "testdata", "synth-llama-Q4_0.gguf")
	code, out, _ := runCLI(t, "ir", "../testdata/synth-llama-Q4_0.gguf")
	if want := `meta weights="` + filepath.ToSlash(model) + `"`; code != 0 || !strings.Contains(out, want) {
		t.Errorf("ir to stdout: exit %d, want %s", code, want)
	}
	dir := t.TempDir()
	sub := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(model, filepath.Join(dir, "model.gguf")); err != nil {
		t.Skip("no symlinks:", err)
	}
	code, _, errb := runCLI(t, "ir", filepath.Join(dir, "model.gguf"), "-o", filepath.Join(sub, "m.ir"))
	b, _ := os.ReadFile(filepath.Join(sub, "m.ir"))
	if code != 0 || !strings.Contains(string(b), `meta weights="../../model.gguf"`) {
		t.Errorf("ir -o: exit %d %s\n%.300s", code, errb, b)
	}
	// Written again elsewhere, the graph names its weights anew.
	other := filepath.Join(dir, "other.ir")
	code, _, errb = runCLI(t, "passes", filepath.Join(sub, "m.ir"), "-o", other)
	b, _ = os.ReadFile(other)
	if code != 0 || !strings.Contains(string(b), `meta weights="model.gguf"`) {
		t.Errorf("passes -o: exit %d %s\n%.300s", code, errb, b)
	}
	if code, _, errb := runCLI(t, "run", other, "--passes", "none", "-n", "2"); code != 0 {
		t.Errorf("run %s: exit %d\n%s", other, code, errb)
	}
}

// TestPlanIRProof: plan FILE.ir reports the bound and the proof as for an
// instance: a plan at the lower bound is proven optimal.
func TestPlanIRProof(t *testing.T) {
	ir := irOf(t, "synth-llama-Q4_0.gguf", true)
	code, out, errb := runCLI(t, "plan", ir, "--json")
	var rep struct {
		LowerBound int64 `json:"lower_bound"`
		Arena      int64 `json:"arena"`
		Bound      int64 `json:"bound"`
		Optimal    bool  `json:"proven_optimal"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("plan: exit %d %s\n%s", code, out, errb)
	}
	if rep.Bound != rep.LowerBound || rep.Optimal != (rep.Arena == rep.Bound) || rep.Bound == 0 {
		t.Errorf("plan --json: %+v", rep)
	}
	code, out, _ = runCLI(t, "plan", ir)
	if rep.Optimal && (code != 0 || !strings.Contains(out, "optimal      proven")) {
		t.Errorf("plan: exit %d\n%s", code, out)
	}
}

// TestBenchIR: bench reads IR text, whose cache bounds the tests.
func TestBenchIR(t *testing.T) {
	ir := irOf(t, "synth-llama-Q4_0.gguf", false, "--ctx", "32")
	if code, out, errb := runCLI(t, "bench", ir, "-p", "8", "-n", "4", "-r", "1", "--json"); code != 0 || !json.Valid([]byte(out)) {
		t.Errorf("bench: exit %d %s\n%s", code, out, errb)
	}
	if code, _, errb := runCLI(t, "bench", ir, "-p", "64", "-n", "0", "-r", "1"); code != 2 || !strings.Contains(errb, "n_ctx=32") {
		t.Errorf("bench -p 64 on n_ctx 32: exit %d\n%s", code, errb)
	}
}

// TestCompileDumpDirIRWeights: compile --dump-dir on IR input names the
// weights relative to the dump directory (not the input's own relative
// "weights", which is relative to the input file), so every dumped file
// reads back, wherever the dump directory is.
func TestCompileDumpDirIRWeights(t *testing.T) {
	in := irOf(t, "synth-llama-Q4_0.gguf", false, "--ctx", "32")
	raw, err := os.ReadFile(in)
	if err != nil || !strings.Contains(string(raw), `meta weights="../`) {
		t.Fatalf("the input should name its weights by a relative path: %v\n%.300s", err, raw)
	}
	dump := filepath.Join(t.TempDir(), "a", "b", "dump")
	if code, _, errb := runCLI(t, "compile", in, "--passes", "cse", "--dump-dir", dump, "--strategy", "greedy-size"); code != 0 {
		t.Fatalf("compile --dump-dir: exit %d\n%s", code, errb)
	}
	for _, f := range []string{"00-input.ir", "01-cse.ir"} {
		p := filepath.Join(dump, f)
		if code, _, errb := runCLI(t, "run", p, "--passes", "none", "-n", "2"); code != 0 {
			raw, _ := os.ReadFile(p)
			t.Errorf("run %s: exit %d\n%s\n%.400s", f, code, errb, raw)
		}
	}
}
