package cli

import (
	"io"
	"sync"
)

// This file holds the output helpers every command shares:
// stdout goes through a checkedWriter so that a failed write (stdout on a
// full disk, "> /dev/full", a closed pipe) turns into exit status 1 even
// where a command ignores fmt.Fprintf's error; files are written with
// internal/safeio (a temporary file renamed into place on success).

// checkedWriter passes writes to w and remembers the first error; after it
// every write fails with that error without writing.
type checkedWriter struct {
	mu  sync.Mutex
	w   io.Writer
	err error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	c.err = err
	return n, err
}

// Err returns the first write error, or nil.
func (c *checkedWriter) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}
