package kernels

import "golang.org/x/sys/unix"

// adviseHuge asks for transparent huge pages on b (2 MiB-aligned, a
// multiple of 2 MiB long): the decode kernels stream the repacked weights,
// and 2 MiB pages cut the TLB misses of that stream. Best effort.
func adviseHuge(b []byte) { _ = unix.Madvise(b, unix.MADV_HUGEPAGE) }
