// Package safeio opens untrusted input files without blocking or reading
// without bound, and writes output files atomically.
//
// Inputs: Open never blocks on a FIFO that has no writer (it opens
// non-blocking), refuses directories, and tells regular files (whose size is
// known and which may be memory-mapped) from streams (pipes, FIFOs, character
// devices such as /dev/stdin or /dev/zero). A Stream reads with a byte cap,
// an idle deadline per read (where the kernel lets one be set) and an overall
// deadline, so a hostile or stuck input ends in an error, not a hang or an
// unbounded allocation. ReadFile combines both for small text inputs.
//
// Outputs: WriteFile and Create write to a temporary file in the target's
// directory and rename it into place only when everything was written, so a
// failed write (a full disk) leaves the previous file untouched and no
// partial file behind. A target that exists and is not a regular file
// (/dev/stdout, a FIFO) is written directly.
package safeio

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Classes of input errors (test with errors.Is).
var (
	// ErrTooLarge: the input exceeds the caller's byte limit.
	ErrTooLarge = errors.New("input too large")
	// ErrTimeout: a stream gave no data within its deadline.
	ErrTimeout = errors.New("input timed out")
	// ErrNotFile: the path names a directory or another kind of file that
	// cannot be read as data.
	ErrNotFile = errors.New("not a readable file")
)

// Limits bound how a stream is read.
type Limits struct {
	// MaxBytes is the most bytes read; reading more fails with ErrTooLarge.
	MaxBytes int64
	// Idle is the longest wait for the next bytes (0: DefaultIdle).
	Idle time.Duration
	// Total is the longest time the whole read may take (0: DefaultTotal).
	Total time.Duration
}

// Default deadlines of a stream.
const (
	DefaultIdle  = 5 * time.Second
	DefaultTotal = 5 * time.Minute
)

// notFileError says what path is instead of a file; it matches ErrNotFile.
type notFileError struct{ path, kind string }

func (e *notFileError) Error() string        { return e.path + " is a " + e.kind + ", not a file" }
func (e *notFileError) Is(target error) bool { return target == ErrNotFile }

// Input is an opened input file.
type Input struct {
	*os.File
	Name string      // the path given to Open
	Info fs.FileInfo // what fstat said about it
}

// Regular reports whether the input is a regular file, whose size is
// Info.Size() and which may be memory-mapped.
func (in *Input) Regular() bool { return in.Info.Mode().IsRegular() }

// Kind names the type of file for messages: "regular file", "directory",
// "FIFO", "character device", ...
func (in *Input) Kind() string { return KindOf(in.Info.Mode()) }

// KindOf names the kind of file mode m is, for messages ("directory",
// "named pipe", "character device", ...).
func KindOf(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	}
	return "special file"
}

// Open opens path for reading. It does not block on a FIFO without a
// writer, and refuses directories and sockets with an error wrapping
// ErrNotFile that names the path. Errors do not repeat the path twice: they
// read "open PATH: ..." or "PATH: is a directory".
func Open(path string) (*Input, error) {
	fh, err := openNonBlocking(path)
	if err != nil {
		return nil, err
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, err
	}
	m := st.Mode()
	if m.IsDir() || m&fs.ModeSocket != 0 {
		fh.Close()
		return nil, &notFileError{path: path, kind: KindOf(m)}
	}
	return &Input{File: fh, Name: path, Info: st}, nil
}

// Stream reads a non-regular input within limits. It implements io.Reader;
// Read fails with ErrTooLarge past MaxBytes and with ErrTimeout when the
// idle or total deadline passes.
type Stream struct {
	in       *Input
	lim      Limits
	n        int64
	start    time.Time
	deadline bool // the file accepts read deadlines
	first    bool // no byte read yet
}

// NewStream wraps in (usually a FIFO, pipe or device) in a bounded reader.
// A terminal gets no idle deadline (a person is typing), only the overall
// one.
func NewStream(in *Input, lim Limits) *Stream {
	if lim.Idle <= 0 {
		lim.Idle = DefaultIdle
	}
	if lim.Total <= 0 {
		lim.Total = DefaultTotal
	}
	if in.Info.Mode()&fs.ModeCharDevice != 0 && isTerminal(in.File) {
		lim.Idle = lim.Total // someone is typing: only the overall deadline
	}
	s := &Stream{in: in, lim: lim, start: time.Now(), first: true}
	s.deadline = in.SetReadDeadline(time.Now().Add(lim.Idle)) == nil
	return s
}

// emptyFIFOWait is how long a FIFO that reports end of input before its
// first byte is polled for a writer that has not opened it yet.
const emptyFIFOWait = 500 * time.Millisecond

// Read reads up to len(p) bytes within the limits.
func (s *Stream) Read(p []byte) (int, error) {
	if s.n >= s.lim.MaxBytes {
		// Probe one byte: a stream that ends exactly at the limit is fine.
		var one [1]byte
		n, err := s.read(one[:])
		if n == 0 && err == io.EOF {
			return 0, io.EOF
		}
		if err != nil && n == 0 {
			return 0, err
		}
		return 0, fmt.Errorf("%s: more than %d bytes: %w", s.in.Name, s.lim.MaxBytes, ErrTooLarge)
	}
	if int64(len(p)) > s.lim.MaxBytes-s.n {
		p = p[:s.lim.MaxBytes-s.n]
	}
	n, err := s.read(p)
	s.n += int64(n)
	return n, err
}

func (s *Stream) read(p []byte) (int, error) {
	for {
		if time.Since(s.start) > s.lim.Total {
			return 0, fmt.Errorf("%s: no end of input after %v: %w", s.in.Name, s.lim.Total, ErrTimeout)
		}
		if s.deadline {
			_ = s.in.SetReadDeadline(time.Now().Add(min(s.lim.Idle, s.lim.Total-time.Since(s.start))))
		}
		n, err := s.in.Read(p)
		if n > 0 {
			s.first = false
		}
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return n, fmt.Errorf("%s: no data for %v: %w", s.in.Name, s.lim.Idle, ErrTimeout)
		case err == io.EOF && n == 0 && s.first && s.in.Info.Mode()&fs.ModeNamedPipe != 0:
			// A FIFO opened without blocking reads as empty until a
			// writer opens it: give a writer a moment to appear.
			if time.Since(s.start) < emptyFIFOWait {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			return 0, fmt.Errorf("%s: FIFO has no writer (nothing to read after %v): %w", s.in.Name, emptyFIFOWait, io.ErrUnexpectedEOF)
		}
		return n, err
	}
}

// ReadFile reads the whole file at path, refusing more than maxBytes: a
// regular file by its size, anything else (a FIFO, /dev/stdin, a device)
// through a Stream with the default deadlines.
func ReadFile(path string, maxBytes int64) ([]byte, error) {
	in, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	if in.Regular() {
		if sz := in.Info.Size(); sz > maxBytes {
			return nil, fmt.Errorf("%s: %d bytes, more than the limit of %d: %w", path, sz, maxBytes, ErrTooLarge)
		}
	}
	return readAll(NewStream(in, Limits{MaxBytes: maxBytes}), maxBytes)
}

// readAll is io.ReadAll whose buffer never grows past limit bytes; r must
// itself fail with ErrTooLarge past the limit (a Stream does).
func readAll(r io.Reader, limit int64) ([]byte, error) {
	b := make([]byte, 0, int(min(512, limit)))
	for {
		if len(b) == cap(b) && int64(cap(b)) < limit {
			nb := make([]byte, len(b), int(min(2*int64(cap(b))+512, limit)))
			copy(nb, b)
			b = nb
		}
		var n int
		var err error
		if len(b) == cap(b) {
			var one [1]byte // at the limit: EOF, or ErrTooLarge from r
			n, err = r.Read(one[:])
			if n > 0 {
				return nil, fmt.Errorf("more than %d bytes: %w", limit, ErrTooLarge)
			}
		} else {
			n, err = r.Read(b[len(b):cap(b)])
			b = b[:len(b)+n]
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// WriteFile writes data to path atomically (see Create).
func WriteFile(path string, data []byte) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// File is an output file being written: a temporary file in the target's
// directory that Commit renames into place. Exactly one of Commit or Abort
// must be called (Abort after Commit is a no-op, so `defer f.Abort()` is the
// usual pattern).
type File struct {
	f       *os.File
	target  string
	direct  bool  // the target is not a regular file: written in place
	done    bool  // committed or aborted
	flushed bool  // the temporary file is closed
	err     error // first write error
}

// Create starts writing path. The permissions of an existing target are
// kept; a new file gets 0644.
func Create(path string) (*File, error) {
	perm := fs.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		if !st.Mode().IsRegular() {
			if st.IsDir() {
				return nil, fmt.Errorf("%s: is a directory", path)
			}
			fh, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				return nil, err
			}
			return &File{f: fh, target: path, direct: true}, nil
		}
		perm = st.Mode().Perm()
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	fh, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, unwrapPath(err))
	}
	if err := fh.Chmod(perm); err != nil {
		fh.Close()
		os.Remove(fh.Name())
		return nil, fmt.Errorf("%s: %w", path, unwrapPath(err))
	}
	return &File{f: fh, target: path}, nil
}

// Name returns the path the file will have once committed.
func (f *File) Name() string { return f.target }

// Write writes to the temporary file; the first error is kept and returned
// again by Commit.
func (f *File) Write(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	n, err := f.f.Write(p)
	if err != nil {
		f.err = fmt.Errorf("%s: %w", f.target, unwrapPath(err))
	}
	return n, f.err
}

// Flush writes the temporary file to disk and closes it; the target is not
// touched yet. Callers writing several files flush them all before
// committing any, so that a full disk leaves every target as it was.
// Commit flushes when the caller did not.
func (f *File) Flush() error {
	if f.flushed {
		return f.err
	}
	f.flushed = true
	if f.err == nil && !f.direct {
		if e := f.f.Sync(); e != nil {
			f.err = fmt.Errorf("%s: %w", f.target, unwrapPath(e))
		}
	}
	if e := f.f.Close(); e != nil && f.err == nil {
		f.err = fmt.Errorf("%s: %w", f.target, unwrapPath(e))
	}
	return f.err
}

// Commit flushes the file and renames it into place. On any error the
// temporary file is removed and the target is left as it was.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("%s: already committed or aborted", f.target)
	}
	err := f.Flush()
	f.done = true
	if f.direct {
		return err
	}
	if err == nil {
		if e := os.Rename(f.f.Name(), f.target); e != nil {
			err = fmt.Errorf("%s: %w", f.target, unwrapPath(e))
		}
	}
	if err != nil {
		os.Remove(f.f.Name())
	}
	return err
}

// Abort discards the temporary file; the target is left as it was. It does
// nothing after Commit.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	if !f.flushed {
		f.flushed = true
		f.f.Close()
	}
	if !f.direct {
		os.Remove(f.f.Name())
	}
}

// unwrapPath drops the temporary file's name from a *fs.PathError, since
// messages name the target instead.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
