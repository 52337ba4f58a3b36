package safeio_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/irtool/irtool/internal/safeio"
)

// short writes at most n bytes, then fails with errFull.
type short struct {
	buf bytes.Buffer
	n   int
}

var errFull = errors.New("disk full")

func (s *short) Write(p []byte) (int, error) {
	if s.n == 0 {
		return 0, errFull
	}
	k := min(len(p), s.n)
	s.n -= k
	s.buf.Write(p[:k])
	return k, nil
}

// The first error sticks: a short write is io.ErrShortWrite, and no write
// reaches W after it.
func TestCheckedWriter(t *testing.T) {
	w := &short{n: 5}
	c := &safeio.CheckedWriter{W: w}
	if _, err := c.Write([]byte("abc")); err != nil || c.Err() != nil {
		t.Fatalf("first write: %v, %v", err, c.Err())
	}
	if n, err := c.Write([]byte("defg")); n != 2 || err != io.ErrShortWrite {
		t.Errorf("short write: %d, %v", n, err)
	}
	w.n = 100
	if n, err := c.Write([]byte("h")); n != 0 || err != io.ErrShortWrite || c.Err() != io.ErrShortWrite {
		t.Errorf("write after the error: %d, %v (Err %v)", n, err, c.Err())
	}
	if got := w.buf.String(); got != "abcde" {
		t.Errorf("W got %q, want %q", got, "abcde")
	}
	c = &safeio.CheckedWriter{W: &short{}}
	if _, err := c.Write([]byte("x")); err != errFull || c.Err() != errFull {
		t.Errorf("failing W: %v, %v", err, c.Err())
	}
}
