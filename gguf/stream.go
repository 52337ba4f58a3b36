package gguf

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/irtool/irtool/internal/safeio"
)

// MaxStreamBytes is the largest GGUF file Open reads from a stream (a pipe,
// a FIFO, a device); a stream is held in memory, so larger models must be
// given as regular files, which are memory-mapped.
const MaxStreamBytes = 1 << 30

// StreamLimits bound ReadStream.
type StreamLimits struct {
	MaxBytes int64         // the most bytes read (0: MaxStreamBytes)
	Idle     time.Duration // the longest wait for more bytes (0: 5 s)
	Total    time.Duration // the longest the whole read may take (0: 5 min)
}

// ReadStream reads a GGUF file from r (stdin, a socket) and parses it.
// It checks the magic after 4 bytes and then reads only what the header
// says the file holds, never more than lim.MaxBytes; name is used in
// errors. Deadlines apply when r is an *os.File that supports them (pipes
// and FIFOs); for other readers they are the caller's business.
//
// Unlike Open, the tensor data are copies: the File owns them.
func ReadStream(r io.Reader, name string, lim StreamLimits) (*File, error) {
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = MaxStreamBytes
	}
	return decodeStream(r, name, int(min(lim.MaxBytes, int64(maxInt))))
}

const maxInt = int(^uint(0) >> 1)

func readStream(in *safeio.Input, lim safeio.Limits) (*File, error) {
	s := safeio.NewStream(in, lim)
	return decodeStream(s, in.Name, int(min(lim.MaxBytes, int64(maxInt))))
}

// decodeStream reads from r just enough to decode a GGUF file: it retries a
// partial decode of what it has, reading what the decoder asks for (ahead,
// by doubling, while in the header; exactly the data section's end after
// it), so memory is bounded by the header's own counts and limit.
func decodeStream(r io.Reader, name string, limit int) (*File, error) {
	buf := make([]byte, 0, 4096)
	want := 4
	eof := false
	for {
		for len(buf) < want && !eof {
			if len(buf) == cap(buf) {
				// Grow with what arrives, not with what the header
				// claims: a hostile length costs only the bytes sent.
				nb := make([]byte, len(buf), min(want, max(2*cap(buf), 64<<10)))
				copy(nb, buf)
				buf = nb
			}
			n, err := r.Read(buf[len(buf):min(want, cap(buf))])
			buf = buf[:len(buf)+n]
			switch {
			case err == io.EOF:
				eof = true
			case errors.Is(err, safeio.ErrTooLarge):
				eof = true // the decoder reports what does not fit
			case err != nil:
				return nil, fmt.Errorf("gguf: %w", err)
			}
		}
		d := &decoder{data: buf, name: name, partial: !eof, limit: limit}
		if eof {
			d.limit = len(buf)
		}
		f, err := parseDecoder(d)
		var nm *needMore
		if !errors.As(err, &nm) {
			if f != nil {
				f.data = buf
			}
			return f, err
		}
		switch {
		case nm.total <= len(buf):
			return nil, &FormatError{File: name, Offset: int64(len(buf)), Msg: "stream decoder made no progress", Err: ErrInternal}
		case nm.header:
			// Read ahead while in the header: each retry re-decodes
			// from the start, so the buffer grows geometrically.
			want = min(max(nm.total, 2*len(buf), 64<<10), limit)
		default:
			want = nm.total
		}
	}
}

// parseDecoder runs d.parse, turning a panic into an ErrInternal error.
func parseDecoder(d *decoder) (f *File, err error) {
	defer func() {
		if r := recover(); r != nil {
			f = nil
			err = &FormatError{File: d.name, Msg: fmt.Sprintf("parser panic: %v", r), Err: ErrInternal}
		}
	}()
	return d.parse()
}
