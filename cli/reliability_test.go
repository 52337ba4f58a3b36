//go:build unix

package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fullWriter fails every write, as stdout redirected to /dev/full does.
type fullWriter struct{}

// hangGuard bounds calls that must return promptly instead of blocking (an
// endless device, a FIFO with no writer). It catches a hang, not a slow
// machine: the calls take milliseconds, and a loaded CI runner must not
// turn a correct refusal into a failure.
const hangGuard = 20 * time.Second

func (fullWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestStdoutWriteFailure: a command whose output cannot be written exits
// non-zero and says why.
func TestStdoutWriteFailure(t *testing.T) {
	csv := filepath.Join(t.TempDir(), "p.csv")
	if err := os.WriteFile(csv, []byte("id,lower,upper,size\n0,0,2,8\n1,1,3,8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"inspect"}, {"inspect", "--json"}, {"help"}, {"help", "run"}, {"passes"},
		{"tokenize", "hello"}, {"tokenize", "--json", "hello"},
		{"compile", "--ctx", "32", "--strategy", "greedy-size"},
		{"run", "--tokens", "1,2", "-n", "2"}, {"run", "-p", "Once", "-n", "2"},
		{"plan", csv, "--strategy", "naive"}, {"ir"},
	} {
		var errb bytes.Buffer
		code := run(args, fullWriter{}, &errb)
		if code != 1 || !strings.Contains(errb.String(), "no space left on device") {
			t.Errorf("%q: exit %d, stderr %q; want exit 1 naming the write error", args, code, errb.String())
		}
	}
}

// TestHostileInputPaths: devices, FIFOs without a writer and directories
// given where a file is expected fail fast with a message naming the path
// instead of reading forever or hanging.
func TestHostileInputPaths(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for _, p := range []string{"/dev/zero", fifo, dir} {
		if _, err := os.Stat(p); err != nil {
			continue
		}
		for _, args := range [][]string{
			{"inspect", p}, {"run", p, "--tokens", "1"}, {"compile", p}, {"tokenize", p, "hi"},
			{"tokenize", "--file", p}, {"plan", p}, {"viz", p},
		} {
			start := time.Now()
			code, _, stderr := runCLI(t, args...)
			if d := time.Since(start); d > hangGuard {
				t.Errorf("%q took %v", args, d)
			}
			if code == 0 || !strings.Contains(stderr, p) {
				t.Errorf("%q: exit %d, stderr %q; want a failure naming %s", args, code, stderr, p)
			}
		}
	}
}

// TestCompileOutputsKeepOldFiles: when an output cannot be written, the old
// file stays and no partial file is left (a directory in the way of the
// report's temporary rename stands in for a full disk).
func TestCompileOutputsAtomic(t *testing.T) {
	dir := t.TempDir()
	report := filepath.Join(dir, "r.html")
	if err := os.WriteFile(report, []byte("old report"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Success replaces the file whole.
	if code, _, stderr := runCLI(t, "compile", "--ctx", "32", "--strategy", "greedy-size", "--report", report); code != 0 {
		t.Fatalf("compile: %s", stderr)
	}
	b, _ := os.ReadFile(report)
	if !bytes.HasPrefix(b, []byte("<!DOCTYPE html>")) && !bytes.Contains(b[:min(len(b), 200)], []byte("<html")) {
		t.Fatalf("report starts %q", b[:min(len(b), 40)])
	}
	// Failure in a read-only directory: the old file stays whole.
	if os.Getuid() == 0 {
		t.Skip("root ignores directory permissions")
	}
	if err := os.WriteFile(report, []byte("old report"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	code, _, stderr := runCLI(t, "compile", "--ctx", "32", "--strategy", "greedy-size", "--report", report)
	if code == 0 || !strings.Contains(stderr, "--report") {
		t.Errorf("compile into a read-only directory: exit %d, %q", code, stderr)
	}
	if b, _ := os.ReadFile(report); string(b) != "old report" {
		t.Errorf("old report replaced by %d bytes", len(b))
	}
	m, _ := filepath.Glob(filepath.Join(dir, ".*tmp*"))
	if len(m) != 0 {
		t.Errorf("partial files left: %v", m)
	}
}
