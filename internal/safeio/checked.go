package safeio

import (
	"io"
	"sync"
)

// CheckedWriter passes writes to W and remembers the first error; after it
// every write fails with that error without writing. A command's stdout
// goes through one, so that a failed write (stdout on a full disk,
// "> /dev/full", a closed pipe) is seen even where fmt.Fprintf's error is
// ignored.
type CheckedWriter struct {
	W   io.Writer
	mu  sync.Mutex
	err error
}

// Write writes p to W unless an earlier write failed; a short write is
// io.ErrShortWrite.
func (c *CheckedWriter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.W.Write(p)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	c.err = err
	return n, err
}

// Err returns the first write error, or nil.
func (c *CheckedWriter) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}
