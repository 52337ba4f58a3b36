package gguf_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/irtool/irtool/gguf"
)

// TestMapped: Open maps a regular file; a stream (a pipe) and Parse hold
// the bytes in memory instead.
func TestMapped(t *testing.T) {
	path := filepath.Join("..", "testdata", "stories260K.gguf")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := gguf.Parse(data, "bytes")
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { w.Write(data); w.Close() }()
	s, err := gguf.Open("/dev/fd/" + strconv.Itoa(int(r.Fd())))
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		f    *gguf.File
		want bool
	}{{"regular file", f, true}, {"Parse", p, false}, {"pipe", s, false}, {"nil", nil, false}} {
		if got := c.f.Mapped(); got != c.want {
			t.Errorf("%s: Mapped() = %v, want %v", c.name, got, c.want)
		}
	}
}
