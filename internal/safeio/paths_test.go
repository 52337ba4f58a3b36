package safeio_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/safeio"
)

// CheckPaths refuses an output that is an input (by file, through a
// symlink too), two outputs naming one file, a file an output directory
// writes, and outputs that cannot be written, naming the flags; it
// accepts new files and directories.
func TestCheckPaths(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "model.gguf")
	if err := os.WriteFile(model, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.gguf")
	if err := os.Symlink(model, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "out"), 0o755); err != nil {
		t.Fatal(err)
	}
	in := []safeio.Path{{Flag: "MODEL", Path: model}}
	out := func(flag, path string) safeio.Path { return safeio.Path{Flag: flag, Path: path} }
	outDir := safeio.Path{Flag: "--out", Path: filepath.Join(dir, "out"), Dir: true, Names: []string{"program.json"}}
	for _, c := range []struct {
		name string
		outs []safeio.Path
		want string // "" accepts
	}{
		{"new files", []safeio.Path{out("-o", filepath.Join(dir, "a.dot")), out("--report", filepath.Join(dir, "r.html")), outDir}, ""},
		{"stdout", safeio.Outputs(out("-o", "-"), out("--report", "")), ""},
		{"input", []safeio.Path{out("-o", model)}, "-o " + model + " is the same file as MODEL " + model},
		{"symlink to input", []safeio.Path{out("-o", link)}, "-o " + link + " is the same file as MODEL"},
		{"two outputs", []safeio.Path{out("-o", filepath.Join(dir, "a")), out("--report", filepath.Join(dir, ".", "a"))}, "name the same file"},
		{"file in output dir", []safeio.Path{outDir, out("--report", filepath.Join(dir, "out", "program.json"))}, "is a file --out"},
		{"missing dir", []safeio.Path{out("-o", filepath.Join(dir, "no", "a.dot"))}, "directory " + filepath.Join(dir, "no") + " does not exist"},
		{"a directory", []safeio.Path{out("-o", dir)}, "-o " + dir + ": is a directory"},
		{"dir is a file", []safeio.Path{{Flag: "--out", Path: model, Dir: true}}, "exists and is not a directory"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := safeio.CheckPaths(in, c.outs)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("CheckPaths: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("CheckPaths: %v, want %q", err, c.want)
			}
		})
	}
	if n := len(safeio.Outputs(out("-o", "-"), out("x", ""), out("y", "f"))); n != 1 {
		t.Errorf("Outputs kept %d paths, want 1", n)
	}
}
