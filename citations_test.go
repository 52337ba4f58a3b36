package irtool_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// privateCitations match references a reader of this repository cannot
// resolve: the project's own issue tracker numbers, its design and notes
// files outside the repository, the directory of reference data beside it,
// and helper branch names. Public sources are cited by URL instead
// (github.com/ggml-org/llama.cpp/issues/N, "llama.cpp PR #N").
var privateCitations = []struct {
	re   *regexp.Regexp
	what string
}{
	{regexp.MustCompile(`(?i)\bissues? #?[0-9]+`), "an issue number"},
	{regexp.MustCompile(`(?i)\b(this|the foundation|the planner) issue\b|\bissue's\b`), "an issue of this project"},
	{regexp.MustCompile(`DESIGN\.md`), "a design file outside the repository"},
	{regexp.MustCompile(`\.\./shared|(?i)\bshared[/]notes\b|\bthe notes\b`), "files outside the repository"},
	{regexp.MustCompile(`(?i)\bthis (session|stop)\b`), "a work session"},
	{regexp.MustCompile(`\bh-[a-z]{3,}\b`), "a branch name"},
}

// citedFile reports whether path is code, a script or documentation.
func citedFile(path string) bool {
	switch filepath.Ext(path) {
	case ".go", ".md", ".c", ".h", ".s", ".sh", ".py":
		return true
	}
	return filepath.ToSlash(path) == ".ci/run"
}

// TestNoPrivateCitations keeps code, scripts and docs free of references
// that only make sense inside the project's own history: each line that
// cites one is named with what it cites. testdata/ holds recorded outputs
// and is not checked.
func TestNoPrivateCitations(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") && d.Name() != ".ci" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !citedFile(path) {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		checked++
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for line := 1; sc.Scan(); line++ {
			for _, c := range privateCitations {
				if m := c.re.FindString(sc.Text()); m != "" {
					t.Errorf("%s:%d cites %s (%q); say what it guards against or cite a public source", path, line, c.what, m)
				}
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d files; is the test running at the repository root?", checked)
	}
}
