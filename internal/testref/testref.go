// Package testref locates the project's test inputs: the small models and
// trimmed llama.cpp outputs copied into testdata/ (testdata/README.md gives
// their provenance) and the external reference data directory, which holds
// the full set of llama.cpp's own outputs. Tests that need a file only the
// external directory has call Shared and skip, saying so, when it is absent,
// so the repository stands alone.
package testref

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
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

// EnvReference names the external reference data directory; EnvRequire,
// when set to a non-empty value other than 0, makes its absence a test
// failure instead of a skip (CI sets it: .ci/run).
const (
	EnvReference = "IRTOOL_REFERENCE"
	EnvRequire   = "IRTOOL_REQUIRE_REFERENCE"
)

// SharedDir returns the external reference data directory, or "" if absent:
// $IRTOOL_REFERENCE when set, else reference/ inside the directory "shared"
// that sits beside the repository (where CI places the reference data).
func SharedDir() string {
	d := os.Getenv(EnvReference)
	if d == "" {
		d = filepath.Join(Root(), "..", "shared", "reference")
	}
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		return d
	}
	return ""
}

// CopyDir is testdata/reference, the trimmed copies of the external
// reference data (testdata/README.md).
func CopyDir() string { return filepath.Join(Root(), "testdata", "reference") }

// Dir returns the directory reference files are read from: the external
// reference data directory when present, else CopyDir.
func Dir() string {
	if d := SharedDir(); d != "" {
		return d
	}
	return CopyDir()
}

// Required reports whether the external reference data directory must be
// present ($IRTOOL_REQUIRE_REFERENCE).
func Required() bool {
	v := os.Getenv(EnvRequire)
	return v != "" && v != "0"
}

var noteOnce sync.Once

// absent skips (or, when Required, fails) a test whose reference file is
// missing, and says once per test binary on stderr why tests skip.
func absent(t testing.TB, what string) {
	t.Helper()
	if Required() {
		t.Fatalf("%s, and %s is set: the external reference data directory is expected ($%s, or its default place beside the repository)", what, EnvRequire, EnvReference)
	}
	noteOnce.Do(func() {
		fmt.Fprintf(os.Stderr, "testref: the external reference data directory ($%s, or its default place beside the repository) is absent; tests that need a file without a copy in testdata/reference skip (run go test -v to see which)\n", EnvReference)
	})
	t.Skip(what)
}

// Shared returns the path of a reference file (for example
// "llamacpp/stories260K.llamacpp.json" or "models/synth-llama-Q4_0.gguf"):
// in the external reference data directory when it is present, else its
// copy in testdata/ (models) or testdata/reference (the rest). When neither
// has it the test is skipped, or fails when Required.
func Shared(t testing.TB, rel string) string {
	t.Helper()
	if d := SharedDir(); d != "" {
		p := filepath.Join(d, rel)
		if _, err := os.Stat(p); err != nil {
			absent(t, "reference file "+p+" is absent")
		}
		return p
	}
	p := filepath.Join(CopyDir(), rel)
	if m, ok := strings.CutPrefix(filepath.ToSlash(rel), "models/"); ok {
		p = Testdata(m)
	}
	if _, err := os.Stat(p); err != nil {
		absent(t, "reference file "+rel+" has no copy in testdata/ and the external reference data directory is absent")
	}
	return p
}

// Models lists the GGUF model files of the external reference data
// directory (full paths), or, when it is absent, the models copied into
// testdata/.
func Models(t testing.TB) []string {
	t.Helper()
	var dir string
	if d := SharedDir(); d != "" {
		dir = filepath.Join(d, "models")
	} else {
		if Required() {
			absent(t, "no external reference data directory")
		}
		dir = filepath.Join(Root(), "testdata")
	}
	m, _ := filepath.Glob(filepath.Join(dir, "*.gguf"))
	if len(m) == 0 {
		t.Fatalf("no reference models in %s", dir)
	}
	return m
}
