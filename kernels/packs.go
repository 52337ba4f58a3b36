package kernels

import (
	"sync"
	"unsafe"

	"github.com/irtool/irtool/gguf"
)

// WeightPacks is one holder's handle on the weight matrices repacked once
// into the layouts of the SIMD kernels (Options.Packs): a Q4_0 matrix that
// llama.cpp repacks to q4_0_8x8 kept with the blocks of each eight rows
// interleaved (q4x8i.go), a Q4_K matrix it repacks to q4_K_8x8 likewise
// (kquant.go). The copies themselves live in one cache per process,
// keyed by the weights' memory (address, shape, type) and, for weights
// memory-mapped from a file, by that mapping's identity
// (gguf.MappingID): every session and executor of the process that
// multiplies the same tensor of the same mapped model file shares one
// copy, made by the first that needs it. A copy lives as long as some
// WeightPacks holds it: Release gives up a handle's copies, and the last
// release drops the copy from the cache (eval.Workers.Close releases its
// handle). Without AVX2 (other architectures, -tags purego) nothing is
// repacked and the jobs read the weights in place; results are the same
// bits either way. The weights must not change while a copy of them
// exists. Safe for concurrent use.
type WeightPacks struct {
	mu    sync.Mutex
	held  map[packKey][]byte
	bytes int64
}

// NewWeightPacks returns an empty WeightPacks.
func NewWeightPacks() *WeightPacks { return &WeightPacks{held: map[packKey][]byte{}} }

// Bytes is the memory of the copies this handle holds (shared copies
// count in full for each holder).
func (w *WeightPacks) Bytes() int64 {
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bytes
}

// Release gives up every copy this handle holds; a copy no handle holds
// any more leaves the cache (its memory goes once no job reads it).
// The handle stays usable: a later job acquires its copies again.
func (w *WeightPacks) Release() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	packCache.Lock()
	for k := range w.held {
		if e := packCache.m[k]; e != nil {
			if e.refs--; e.refs == 0 {
				delete(packCache.m, k)
				packCache.bytes -= int64(len(e.data))
			}
		}
	}
	packCache.Unlock()
	clear(w.held)
	w.bytes = 0
}

// SharedPacks reports the repacked copies alive in the process: how many
// and their bytes.
func SharedPacks() (copies int, bytes int64) {
	packCache.Lock()
	defer packCache.Unlock()
	return len(packCache.m), packCache.bytes
}

// packCache holds the process's repacked copies.
var packCache = struct {
	sync.Mutex
	m     map[packKey]*packEntry
	bytes int64
	cur   []byte // the unused rest of the current chunk (packAlloc)
}{m: map[packKey]*packEntry{}}

type packEntry struct {
	data   []byte
	refs   int           // handles holding it
	done   chan struct{} // closed once data is filled (or failed)
	failed bool
}

type packKey struct {
	data     unsafe.Pointer
	mapping  uint64 // gguf.MappingID of the weights, 0 if not mapped
	typ      gguf.GGMLType
	ne0, ne1 int64
	nb1      int64
}

// get returns the copy of matrix a (size bytes, written by fill from a's
// data), making it on first use in the process; nil if fill failed.
func (w *WeightPacks) get(a Tensor, size int, fill func(p []byte)) []byte {
	if size == 0 {
		return nil
	}
	k := packKey{unsafe.Pointer(&a.Data[0]), gguf.MappingID(a.Data), a.Type, a.Ne[0], a.Ne[1], a.Nb[1]}
	w.mu.Lock()
	defer w.mu.Unlock()
	if p, ok := w.held[k]; ok {
		return p
	}
	packCache.Lock()
	e, ok := packCache.m[k]
	if ok {
		e.refs++
		packCache.Unlock()
		<-e.done
		if e.failed {
			return nil
		}
	} else {
		e = &packEntry{data: packAlloc(size), refs: 1, done: make(chan struct{})}
		packCache.m[k] = e
		packCache.bytes += int64(size)
		packCache.Unlock()
		func() {
			defer func() {
				if !e.failed {
					close(e.done)
					return
				}
				packCache.Lock()
				delete(packCache.m, k)
				packCache.bytes -= int64(size)
				packCache.Unlock()
				close(e.done)
			}()
			e.failed = true
			fill(e.data)
			e.failed = false
		}()
		if e.failed {
			return nil
		}
	}
	w.held[k] = e.data
	w.bytes += int64(len(e.data))
	return e.data
}

// packChunk is the size of the blocks that the copies are carved from.
const packChunk = 32 << 20

// hugePage is the size of a transparent huge page on x86-64 Linux.
const hugePage = 2 << 20

// packAlloc returns n bytes for a copy (packCache locked): carved from 2
// MiB-aligned chunks of packChunk bytes given to the kernel's huge pages
// (adviseHuge), so that matrices smaller than a huge page share them too;
// a copy of half a chunk or more gets its own, and one below 256 KiB
// (small models, whose weights fit in the caches) a plain allocation.
// Each carved copy starts on a 64-byte boundary.
func packAlloc(n int) []byte {
	if n < 256<<10 {
		return make([]byte, n)
	}
	if n >= packChunk/2 {
		return hugeAlloc(n)
	}
	n64 := (n + 63) &^ 63
	if n64 > len(packCache.cur) {
		packCache.cur = hugeAlloc(packChunk)
	}
	b := packCache.cur[:n:n]
	packCache.cur = packCache.cur[n64:]
	return b
}

// q4x8i returns the interleaved copy of Q4_0 matrix a (m.repack's
// conditions hold), repacking it on first use.
func (w *WeightPacks) q4x8i(a Tensor) []byte {
	rows, nb := int(a.Ne[1]), int(a.Ne[0])/32
	if rows == 0 || nb == 0 {
		return nil
	}
	return w.get(a, rows/8*nb*q4x8iBlock, func(p []byte) {
		repackReleasing(a, rows, 18*nb, func(dst, src []byte, n int) {
			repackQ4_0x8iFast(dst, src, int(a.Nb[1]), n, nb)
		}, p, nb*q4x8iBlock)
	})
}

// q4kx8i returns the interleaved copy of Q4_K matrix a (repackQ4K's
// conditions hold), repacking it on first use.
func (w *WeightPacks) q4kx8i(a Tensor) []byte {
	rows, nsb := int(a.Ne[1]), int(a.Ne[0])/256
	if rows == 0 || nsb == 0 {
		return nil
	}
	return w.get(a, rows/8*nsb*q4kx8Block, func(p []byte) {
		repackReleasing(a, rows, 144*nsb, func(dst, src []byte, n int) {
			repackQ4Kx8i(dst, src, int(a.Nb[1]), n, nsb)
		}, p, nsb*q4kx8Block)
	})
}

// repackReleasing repacks the rows of a (rowBytes each) into p, slabs of
// rows at a time (groupBytes of p per group of eight rows). The jobs no
// longer read the original: when it is a memory-mapped file, its pages
// leave the resident set as soon as they are copied (they are read again
// if another kernel touches them), so the copy does not double the RSS,
// not even while it is made.
func repackReleasing(a Tensor, rows, rowBytes int, repack func(dst, src []byte, n int), p []byte, groupBytes int) {
	stride := int(a.Nb[1])
	const slab = 512 // rows copied between releases
	for r := 0; r < rows; r += slab {
		n := min(slab, rows-r)
		src := a.Data[r*stride : (r+n-1)*stride+rowBytes]
		repack(p[r/8*groupBytes:], src, n)
		gguf.ReleasePages(src)
	}
}
