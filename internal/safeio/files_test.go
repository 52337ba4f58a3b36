package safeio_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/irtool/irtool/internal/safeio"
)

// WriteFiles writes every file, in name order; when one cannot be
// written, none replaces the old files and no temporary stays.
func TestWriteFiles(t *testing.T) {
	dir := t.TempDir()
	var got []string
	if err := safeio.WriteFiles(dir, map[string][]byte{"b.txt": []byte("B"), "a.txt": []byte("A")}, func(p string) { got = append(got, p) }); err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")}; !slices.Equal(got, want) {
		t.Errorf("committed %v, want %v", got, want)
	}
	// A name in a missing directory fails before any file is replaced.
	err := safeio.WriteFiles(dir, map[string][]byte{"a.txt": []byte("new"), "no/c.txt": []byte("C")}, nil)
	if err == nil {
		t.Fatal("WriteFiles into a missing directory: no error")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "A" {
		t.Errorf("a.txt = %q after a failed write, want the old %q", b, "A")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("%d entries left in the directory, want 2 (no temporaries)", len(ents))
	}
}
