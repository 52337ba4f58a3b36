//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly || android || ios

package gguf

import (
	"fmt"
	"math"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapFile maps fh read-only into memory. It falls back to reading the file
// when it is not a regular file or the kernel refuses the mapping.
func mapFile(fh *os.File) ([]byte, func() error, error) {
	st, err := fh.Stat()
	if err != nil {
		return nil, nil, err
	}
	size := st.Size()
	if !st.Mode().IsRegular() || size == 0 {
		return readAll(fh)
	}
	if size > math.MaxInt {
		return nil, nil, fmt.Errorf("file of %d bytes is too large to map", size)
	}
	data, err := syscall.Mmap(int(fh.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return readAll(fh)
	}
	start := uintptr(unsafe.Pointer(&data[0]))
	mappings.Lock()
	mappings.next++
	mappings.live[start] = mapping{start + uintptr(len(data)), mappings.next}
	mappings.Unlock()
	return data, func() error {
		mappings.Lock()
		defer mappings.Unlock()
		delete(mappings.live, start)
		return syscall.Munmap(data)
	}, nil
}

// mappings are the live read-only file mappings made by mapFile (start
// address -> end address and identity), for ReleasePages and MappingID.
var mappings = struct {
	sync.Mutex
	live map[uintptr]mapping
	next uint64
}{live: map[uintptr]mapping{}}

type mapping struct {
	end uintptr
	id  uint64 // unique in the process, never reused
}

// MappingID identifies the live file mapping (File.TensorData) that holds
// all of b: a number unique to that mapping in the process, never reused
// after it is unmapped (another file mapped later at the same address
// gets another one); 0 when b is not inside one. Caches keyed by the
// address of mapped data include it so that they cannot outlive the file.
func MappingID(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	lo := uintptr(unsafe.Pointer(&b[0]))
	hi := lo + uintptr(len(b))
	mappings.Lock()
	defer mappings.Unlock()
	for start, m := range mappings.live {
		if lo >= start && hi <= m.end {
			return m.id
		}
	}
	return 0
}

// ReleasePages tells the kernel that the whole memory pages inside b, a
// slice of a file this package has memory-mapped (File.TensorData), are
// not needed for now (madvise MADV_DONTNEED): they leave the process's
// resident set and are read again from the file if touched. It does
// nothing for memory it did not map (a file read into memory), and it
// never changes what b reads.
func ReleasePages(b []byte) {
	if len(b) == 0 {
		return
	}
	lo := uintptr(unsafe.Pointer(&b[0]))
	hi := lo + uintptr(len(b))
	mappings.Lock()
	defer mappings.Unlock()
	for start, m := range mappings.live {
		if lo < start || hi > m.end {
			continue
		}
		page := uintptr(os.Getpagesize())
		plo, phi := (lo+page-1)&^(page-1), hi&^(page-1)
		if phi > plo {
			_ = unix.Madvise(b[plo-lo:phi-lo], unix.MADV_DONTNEED)
		}
		return
	}
}
