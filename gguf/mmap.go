package gguf

import (
	"io"
	"os"
)

// readAll is the fallback when a file cannot be memory-mapped.
func readAll(fh *os.File) ([]byte, func() error, error) {
	data, err := io.ReadAll(fh)
	if err != nil {
		return nil, nil, err
	}
	return data, nil, nil
}
