//go:build unix

package safeio

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hangGuard bounds calls that must return promptly instead of blocking (an
// endless device, a FIFO with no writer). It catches a hang, not a slow
// machine: the calls take milliseconds, and a loaded CI runner must not
// turn a correct refusal into a failure.
const hangGuard = 20 * time.Second

func mkfifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return p
}

func TestReadFileInputs(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small.txt")
	if err := os.WriteFile(small, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		max        int64
		want       string // "" = success with "hello"
		class      error
	}{
		{"regular", small, 5, "", nil},
		{"regular over the limit", small, 4, "more than the limit of 4", ErrTooLarge},
		{"directory", dir, 1 << 20, "is a directory, not a file", ErrNotFile},
		{"endless device", "/dev/zero", 1 << 20, "more than 1048576 bytes", ErrTooLarge},
		{"empty device", "/dev/null", 1 << 20, "", nil},
		{"missing", filepath.Join(dir, "none"), 10, "no such file", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := os.Stat(c.path); c.class != nil && err != nil {
				t.Skip(err)
			}
			start := time.Now()
			b, err := ReadFile(c.path, c.max)
			if d := time.Since(start); d > hangGuard {
				t.Errorf("took %v", d)
			}
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.path == small && string(b) != "hello" {
					t.Errorf("got %q", b)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err %v, want %q", err, c.want)
			}
			if c.class != nil && !errors.Is(err, c.class) {
				t.Errorf("err %v is not %v", err, c.class)
			}
		})
	}
}

func TestFIFONoWriter(t *testing.T) {
	p := mkfifo(t)
	start := time.Now()
	_, err := ReadFile(p, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "FIFO has no writer") {
		t.Fatalf("err %v", err)
	}
	if d := time.Since(start); d > hangGuard {
		t.Errorf("took %v", d)
	}
}

func TestFIFOWithWriter(t *testing.T) {
	p := mkfifo(t)
	go func() {
		time.Sleep(50 * time.Millisecond) // the writer comes after the reader
		w, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		w.Write([]byte("hello fifo"))
		w.Close()
	}()
	b, err := ReadFile(p, 1<<20)
	if err != nil || string(b) != "hello fifo" {
		t.Fatalf("got %q, %v", b, err)
	}
}

func TestFIFOSilentWriterTimesOut(t *testing.T) {
	p := mkfifo(t)
	done := make(chan struct{})
	defer close(done)
	go func() {
		w, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		w.Write([]byte("x"))
		<-done // holds the FIFO open without writing more
		w.Close()
	}()
	in, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	start := time.Now()
	_, err = io.ReadAll(NewStream(in, Limits{MaxBytes: 100, Idle: 200 * time.Millisecond}))
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err %v, want a timeout", err)
	}
	if d := time.Since(start); d > hangGuard {
		t.Errorf("took %v", d)
	}
}

// tempFiles lists the leftovers of Create in dir.
func tempFiles(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestAtomicWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.html")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	check := func(want string) {
		t.Helper()
		b, err := os.ReadFile(p)
		if err != nil || string(b) != want {
			t.Fatalf("target holds %q (%v), want %q", b, err, want)
		}
		if tmp := tempFiles(t, dir); len(tmp) != 0 {
			t.Fatalf("temporary files left: %v", tmp)
		}
	}

	// Aborted: the old file stays.
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("partial"))
	f.Abort()
	check("old")

	// A write that fails (as on a full disk): Commit fails, the old file
	// stays, nothing is left behind.
	f, err = Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("partial"))
	f.f.Close() // the next write fails
	if _, err := f.Write([]byte("more")); err == nil {
		t.Fatal("write to a closed file succeeded")
	}
	if err := f.Commit(); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("Commit: %v, want an error naming %s", err, p)
	}
	check("old")

	// Committed: the new content, with the old file's permissions.
	if err := WriteFile(p, []byte("new")); err != nil {
		t.Fatal(err)
	}
	check("new")
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600 kept", st.Mode().Perm())
	}

	// A directory target is refused; a missing directory fails cleanly.
	if err := WriteFile(dir, []byte("x")); err == nil {
		t.Error("writing over a directory succeeded")
	}
	if err := WriteFile(filepath.Join(dir, "no", "such"), []byte("x")); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
}

func TestWriteToDevice(t *testing.T) {
	// A target that is not a regular file is written in place, not
	// replaced: /dev/full reports the failure.
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip(err)
	}
	if err := WriteFile("/dev/full", []byte("x")); err == nil {
		t.Error("writing /dev/full succeeded")
	}
	if err := WriteFile("/dev/null", []byte("x")); err != nil {
		t.Errorf("writing /dev/null: %v", err)
	}
}
