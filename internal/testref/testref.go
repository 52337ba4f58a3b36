// Package testref locates the project's test inputs: the small models and
// trimmed llama.cpp outputs copied into testdata/ (testdata/README.md gives
// their provenance) and the external reference data directory, which holds
// the full set of llama.cpp's own outputs. Tests that need a file only the
// external directory has call Shared and skip, saying so, when it is absent,
// so the repository stands alone.
package testref

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Root returns the repository root (the directory holding go.mod).
func Root() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "."
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Testdata returns the path of a file in the repository's testdata/ directory.
func Testdata(name string) string {
	return filepath.Join(Root(), "testdata", name)
}

// SharedDir returns the external reference data directory, or "" if absent:
// $IRTOOL_REFERENCE when set, else the directory ../shared/reference beside
// the repository.
func SharedDir() string {
	if d := os.Getenv("IRTOOL_REFERENCE"); d != "" {
		return d
	}
	d := filepath.Join(Root(), "..", "shared", "reference")
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return d
	}
	return ""
}

// Shared returns the path of a file in the external reference data directory (for example
// "llamacpp/stories260K.llamacpp.json"), skipping the test when it is absent.
func Shared(t testing.TB, rel string) string {
	t.Helper()
	d := SharedDir()
	if d == "" {
		t.Skip("the external reference data directory is absent (set IRTOOL_REFERENCE); skipping a test that needs llama.cpp reference data")
	}
	p := filepath.Join(d, rel)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("reference file %s is absent", p)
	}
	return p
}

// Models lists the GGUF model files of the external reference data directory (full paths),
// or, when it is absent, the models copied into testdata/.
func Models(t testing.TB) []string {
	t.Helper()
	var dir string
	if d := SharedDir(); d != "" {
		dir = filepath.Join(d, "models")
	} else {
		dir = filepath.Join(Root(), "testdata")
	}
	m, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
	if len(m) == 0 {
		t.Skip("no reference models found")
	}
	return m
}
