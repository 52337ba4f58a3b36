package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/kernels"
)

// TestFlagErrorIsOneLine: an unknown flag prints one line and the hint
// "irtool help CMD", never the whole help, for every command.
func TestFlagErrorIsOneLine(t *testing.T) {
	for _, c := range sortedCommands() {
		code, out, errb := runCLI(t, c.Name, "--no-such-flag")
		want := fmt.Sprintf("irtool %s: flag provided but not defined: -no-such-flag\nrun \"irtool help %s\" for the flags\n", c.Name, c.Name)
		if code != 2 || errb != want || out != "" {
			t.Errorf("%s --no-such-flag: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.Name, code, out, errb, want)
		}
	}
}

// TestLlamaCppSpellings: llama.cpp's flag names work where they mean the
// same, with the model given by -m.
func TestLlamaCppSpellings(t *testing.T) {
	model := filepath.Join(testref.Root(), "testdata", "synth-llama-Q4_0.gguf")
	var want []any
	for i, args := range [][]string{
		{"run", model, "-p", "Once", "-n", "2", "--ctx", "64", "--threads", "1", "--json"},
		{"run", "-m", model, "--prompt", "Once", "--n-predict", "2", "-c", "64", "--threads", "1", "--json"},
		{"run", "--model", model, "-p", "Once", "-n", "2", "--ctx-size", "64", "-t", "1", "--json"},
	} {
		code, out, errb := runCLI(t, args...)
		var v struct {
			Tokens []any `json:"tokens"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil || len(v.Tokens) != 2 {
			t.Fatalf("%q: exit %d, %s\n%s", args, code, out, errb)
		}
		if i == 0 {
			want = v.Tokens
		} else if fmt.Sprint(v.Tokens) != fmt.Sprint(want) {
			t.Errorf("%q: tokens %v, want %v", args, v.Tokens, want)
		}
	}
	// -m and a positional model: two models.
	if code, _, errb := runCLI(t, "run", "-m", model, model, "-n", "1"); code != 2 || !strings.Contains(errb, "at most one model path") {
		t.Errorf("run -m M M: exit %d, %s", code, errb)
	}
	for _, cmd := range []string{"inspect", "ir", "compile", "passes"} {
		if code, _, errb := runCLI(t, cmd, "-m", model); code != 0 {
			t.Errorf("%s -m: exit %d\n%s", cmd, code, errb)
		}
	}
}

func TestVersion(t *testing.T) {
	code, out, errb := runCLI(t, "version", "--json")
	var v versionInfo
	if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
		t.Fatalf("version --json: exit %d, %s\n%s", code, out, errb)
	}
	if v.Go != runtime.Version() || v.Module == "" || v.Kernels == "" || v.Arch != runtime.GOARCH {
		t.Errorf("version: %+v", v)
	}
	if runtime.GOARCH == "amd64" && len(v.CPUFeatures) != 3 {
		t.Errorf("version: cpu features %v, want avx2, fma, f16c", v.CPUFeatures)
	}
	if kernels.Purego && !strings.HasPrefix(v.Kernels, "pure Go") {
		t.Errorf("version: kernels %q in a purego build", v.Kernels)
	}
	code, out, _ = runCLI(t, "version")
	for _, want := range []string{"revision", "go        " + runtime.Version(), "kernels   "} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("version: exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
}
