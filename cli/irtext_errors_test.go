package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/testref"
)

// TestIRTextParseErrors: a bad IR file fails the commands that read it with the
// file, line (and, for the parser, column) of what is wrong, in one short
// line.
func TestIRTextParseErrors(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(testref.Root(), "testdata", "synth-llama-Q4_0.gguf")
	ir := filepath.Join(dir, "m.ir")
	if code, _, errb := runCLI(t, "ir", model, "-o", ir); code != 0 {
		t.Fatalf("ir: exit %d\n%s", code, errb)
	}
	good, err := os.ReadFile(ir)
	if err != nil {
		t.Fatal(err)
	}
	gguf, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	text := string(good)
	// lineCol is the line and column of the first occurrence of sub.
	lineCol := func(sub string) (int, int) {
		i := strings.Index(text, sub)
		if i < 0 {
			t.Fatalf("the IR has no %q", sub)
		}
		return strings.Count(text[:i], "\n") + 1, i - strings.LastIndex(text[:i], "\n")
	}
	epsLine, epsCol := lineCol("{eps=")
	metaLine, _ := lineCol("meta n_layer=")
	for _, c := range []struct {
		name, body, want string
	}{
		// The column is that of foo, one past the brace.
		{"unknown attribute", strings.Replace(text, "{eps=", "{foo=1, eps=", 1),
			fmt.Sprintf(":%d:%d: unknown attribute \"foo\" of rms_norm (it takes eps)", epsLine, epsCol+1)},
		{"misspelt attribute", strings.Replace(text, "{eps=", "{esp=", 1), `unknown attribute "esp" of rms_norm (it takes eps); did you mean "eps"?`},
		{"ill-typed meta", strings.Replace(text, `meta n_layer="2"`, `meta n_layer="five"`, 1), fmt.Sprintf(":%d", metaLine) + `: meta n_layer="five": want a positive integer`},
		{"gguf renamed .ir", string(gguf), `:1:1: this is a GGUF file (magic "GGUF"), not IR text`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".ir")
			if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"compile", path}, {"run", path, "-n", "1"}, {"bench", path, "-p", "1", "-n", "0", "-r", "1"}, {"plan", path}} {
				code, _, errb := runCLI(t, args...)
				if code != 1 || !strings.Contains(errb, path+":") || !strings.Contains(errb, c.want) {
					t.Errorf("%s: exit %d, stderr %q; want exit 1 and %q", args[0], code, errb, c.want)
				}
				if strings.ContainsRune(errb, 0) || strings.Count(errb, "\n") > 1 {
					t.Errorf("%s: stderr is not one line of text: %q", args[0], errb)
				}
			}
		})
	}
}
