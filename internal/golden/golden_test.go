package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failed []string
}

func (r *recorder) Helper()                      {}
func (r *recorder) Errorf(f string, args ...any) { r.failed = append(r.failed, f) }
func (r *recorder) Fatalf(f string, args ...any) { r.failed = append(r.failed, f) }
func (r *recorder) Fatal(args ...any)            { r.failed = append(r.failed, "fatal") }

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "x.txt")
	for _, c := range []struct {
		name    string
		update  bool
		file    string // "" = no file
		got     string
		fails   bool
		written string
	}{
		{"equal", false, "a\nb\n", "a\nb\n", false, "a\nb\n"},
		{"differs", false, "a\nb\n", "a\nc\n", true, "a\nb\n"},
		{"missing", false, "", "a\n", true, ""},
		{"update writes", true, "old\n", "new\n", false, "new\n"},
		{"update creates", true, "", "new\n", false, "new\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.RemoveAll(filepath.Join(dir, "sub"))
			if c.file != "" {
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, []byte(c.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			old := *update
			*update = c.update
			defer func() { *update = old }()
			r := &recorder{TB: t}
			Check(r, path, []byte(c.got))
			if (len(r.failed) > 0) != c.fails {
				t.Errorf("failures %q, want failing %v", r.failed, c.fails)
			}
			b, _ := os.ReadFile(path)
			if string(b) != c.written {
				t.Errorf("file holds %q, want %q", b, c.written)
			}
		})
	}
}

func TestFirstDiff(t *testing.T) {
	for _, c := range []struct{ got, want, diff string }{
		{"a\nb", "a\nc", "line 2:\n got: b\nwant: c"},
		{"a\nb\n", "a\nb", "line 3:\n got: \nwant: (end of text)"},
		{"a", "a\nx", "line 2:\n got: (end of text)\nwant: x"},
		{"same", "same", "(no line differs)"},
	} {
		if d := FirstDiff(c.got, c.want); d != c.diff {
			t.Errorf("FirstDiff(%q, %q) = %q, want %q", c.got, c.want, d, c.diff)
		}
	}
	if !strings.HasPrefix(FirstDiff("x", "y"), "line 1") {
		t.Error("first line not reported")
	}
}
