package acl

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/irtool/irtool/internal/safeio"
)

// This file holds what a rank reads before it joins a communicator of
// ranks in several processes: the root info file rank 0 wrote, and the
// HCCL environment variables bounding the waits. It needs no CANN
// library (no cgo), so its fuzz target runs in every build.

// RootInfoBytes is the size of HCCL's HcclRootInfo (HCCL_ROOT_INFO_BYTES
// of the HCCL API reference; hccl.go checks it against irtool_hccl.h).
const RootInfoBytes = 4108

// ErrRootInfoNotRegular is the error ReadRootInfo wraps when the path is
// not a regular file (a directory, a named pipe, a device such as
// /dev/zero): nothing there can become a root info.
var ErrRootInfoNotRegular = errors.New("not a regular file")

// RootInfoSizeError is ReadRootInfo's error for a regular file of
// another size than RootInfoBytes.
type RootInfoSizeError struct {
	Size    int64
	ModTime time.Time
}

func (e *RootInfoSizeError) Error() string {
	return fmt.Sprintf("%d bytes, a root info has %d", e.Size, RootInfoBytes)
}

// ReadRootInfo reads the root info in the file at path, bounded: the
// file is opened without blocking (a named pipe opens at once), must be a
// regular file of exactly RootInfoBytes bytes (checked with fstat before
// reading; ErrRootInfoNotRegular or a *RootInfoSizeError otherwise), and
// at most RootInfoBytes+1 bytes are read. A missing file is an error
// satisfying errors.Is(err, fs.ErrNotExist).
func ReadRootInfo(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		if errors.Is(err, syscall.ENXIO) || errors.Is(err, syscall.ENODEV) || errors.Is(err, syscall.EISDIR) {
			return nil, fmt.Errorf("%w (%v)", ErrRootInfoNotRegular, err)
		}
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w (%s)", ErrRootInfoNotRegular, "a "+safeio.KindOf(st.Mode()))
	}
	if st.Size() != RootInfoBytes {
		return nil, &RootInfoSizeError{Size: st.Size(), ModTime: st.ModTime()}
	}
	b, err := io.ReadAll(io.LimitReader(f, RootInfoBytes+1))
	if err != nil {
		return nil, err
	}
	if err := ParseRootInfo(b); err != nil {
		return nil, err
	}
	return b, nil
}

// ParseRootInfo checks the bytes of a root info file: exactly
// RootInfoBytes bytes (HCCL's HcclRootInfo is otherwise opaque; the
// library that made it checks its contents when a rank joins).
func ParseRootInfo(b []byte) error {
	if len(b) != RootInfoBytes {
		return &RootInfoSizeError{Size: int64(len(b))}
	}
	return nil
}

// DescribeRootInfo names what a root info points at, for messages: the
// shared memory segment of irtool's emulator ("segment
// /irtool-fakehccl-…"), else "an HCCL root info". b must have passed
// ParseRootInfo.
func DescribeRootInfo(b []byte) string {
	const tag = "irtool-fakehccl-v1 "
	s := string(b)
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	if name, ok := strings.CutPrefix(s, tag); ok && len(name) < 96 && strings.HasPrefix(name, "/irtool-fakehccl-") && isPrintable(name) {
		return "the emulator's segment " + name
	}
	return "an HCCL root info"
}

func isPrintable(s string) bool {
	for _, c := range []byte(s) {
		if c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}
