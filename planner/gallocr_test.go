package planner

import (
	"errors"
	"testing"
)

// gop is one call on a Gallocr: an allocation (want = expected offset) or a
// free of an earlier allocation (ref = its index in the sequence).
type gop struct {
	alloc bool
	size  int64
	ref   int
	want  int64
}

func galloc(size, want int64) gop { return gop{alloc: true, size: size, want: want} }
func gfree(ref int) gop           { return gop{ref: ref} }

// TestGallocrSequences replays hand-made call sequences whose offsets follow
// from the rules of ggml_dyn_tallocr (ggml/src/ggml-alloc.c, llama.cpp
// c392e50); each case's comment walks through the free list.
func TestGallocrSequences(t *testing.T) {
	tests := []struct {
		name    string
		align   int64
		ops     []gop
		maxSize int64
		blocks  int // free blocks once every allocation is freed again
	}{
		{
			// Sizes pad to 32. a@0, b@128, c@192; freeing a leaves [0,128)
			// before the tail; 64 best-fits there (the tail is only the last
			// resort); freeing c merges it into the tail's front; freeing b
			// joins [64,128), b and the tail into one block; 16 -> 32 bytes
			// at 64, and the heap never exceeded 224.
			name: "pad, reuse, merge both ways", align: 32,
			ops: []gop{
				galloc(100, 0), galloc(64, 128), galloc(32, 192),
				gfree(0), galloc(64, 0), gfree(2), gfree(1), galloc(16, 64),
			},
			maxSize: 224, blocks: 1,
		},
		{
			// Two equal 32-byte holes at 0 and 64: the scan keeps the later
			// one on ties (size <= best_fit_size), so 32 lands at 64.
			name: "ties go to the later block", align: 32,
			ops: []gop{
				galloc(32, 0), galloc(32, 32), galloc(32, 64), galloc(32, 96), galloc(32, 128),
				gfree(0), gfree(2), galloc(32, 64), galloc(32, 0),
			},
			maxSize: 160, blocks: 1,
		},
		{
			// Holes of 64 at 0 and 32 at 96: best fit, not first fit, takes
			// the 32-byte one for 32, then the 64-byte one for 48 (-> 64).
			name: "best fit over first fit", align: 32,
			ops: []gop{
				galloc(64, 0), galloc(32, 64), galloc(32, 96), galloc(32, 128),
				gfree(0), gfree(2), galloc(32, 96), galloc(48, 0),
			},
			maxSize: 160, blocks: 1,
		},
		{
			// Nothing but the tail fits 96 while a 64-byte hole exists: the
			// tail block hands out its first bytes and the heap grows.
			name: "tail is the fallback", align: 32,
			ops: []gop{
				galloc(64, 0), galloc(64, 64), gfree(0), galloc(96, 128), galloc(64, 0),
			},
			maxSize: 224, blocks: 1,
		},
		{
			// Freeing the top allocation merges it into the tail, which
			// then starts lower; MaxSize keeps the high-water mark.
			name: "free at the top rejoins the tail", align: 32,
			ops: []gop{
				galloc(64, 0), galloc(64, 64), gfree(1), galloc(128, 64),
			},
			maxSize: 192, blocks: 1,
		},
		{
			// Alignment 1 keeps sizes as they are; a block that becomes
			// empty is removed from the list.
			name: "exact fit removes the block", align: 1,
			ops: []gop{
				galloc(10, 0), galloc(5, 10), galloc(7, 15),
				gfree(1), galloc(5, 10), gfree(0), galloc(3, 0), galloc(7, 3), galloc(1, 22),
			},
			maxSize: 23, blocks: 1,
		},
		{
			// Freeing a range that touches a block on both sides merges all
			// three (the block before it first, then the one after).
			name: "three-way merge", align: 8,
			ops: []gop{
				galloc(8, 0), galloc(8, 8), galloc(8, 16), galloc(8, 24),
				gfree(0), gfree(2), gfree(1), galloc(24, 0),
			},
			maxSize: 32, blocks: 1,
		},
	}
	for _, tt := range tests {
		g := NewGallocr(tt.align)
		offs := make([]int64, len(tt.ops))
		for k, op := range tt.ops {
			if op.alloc {
				off, err := g.Alloc(op.size)
				if err != nil {
					t.Fatalf("%s: op %d: %v", tt.name, k, err)
				}
				if off != op.want {
					t.Errorf("%s: op %d: Alloc(%d) = %d, want %d", tt.name, k, op.size, off, op.want)
				}
				offs[k] = off
				continue
			}
			if err := g.Free(offs[op.ref], tt.ops[op.ref].size); err != nil {
				t.Fatalf("%s: op %d: %v", tt.name, k, err)
			}
		}
		if g.MaxSize() != tt.maxSize {
			t.Errorf("%s: MaxSize = %d, want %d", tt.name, g.MaxSize(), tt.maxSize)
		}
		// Free the survivors: everything must merge back into tt.blocks.
		for k, op := range tt.ops {
			if op.alloc && !freed(tt.ops, k) {
				if err := g.Free(offs[k], op.size); err != nil {
					t.Fatal(err)
				}
			}
		}
		if g.FreeBlocks() != tt.blocks {
			t.Errorf("%s: %d free blocks after freeing everything, want %d", tt.name, g.FreeBlocks(), tt.blocks)
		}
	}
}

func freed(ops []gop, k int) bool {
	for _, op := range ops {
		if !op.alloc && op.ref == k {
			return true
		}
	}
	return false
}

// TestGallocrFreeBlockLimit checks ggml's MAX_FREE_BLOCKS: the 256th free
// block cannot be created (ggml asserts; we return an error).
func TestGallocrFreeBlockLimit(t *testing.T) {
	g := NewGallocr(32)
	offs := make([]int64, 600)
	for i := range offs {
		offs[i], _ = g.Alloc(32)
	}
	// Freeing every other allocation creates one isolated block each; the
	// tail is the first block, so 255 frees fill the list.
	for k := 0; k < GallocrMaxFreeBlocks-1; k++ {
		if err := g.Free(offs[2*k], 32); err != nil {
			t.Fatalf("free %d: %v", k, err)
		}
	}
	if g.FreeBlocks() != GallocrMaxFreeBlocks {
		t.Fatalf("FreeBlocks = %d, want %d", g.FreeBlocks(), GallocrMaxFreeBlocks)
	}
	err := g.Free(offs[2*(GallocrMaxFreeBlocks-1)], 32)
	if !errors.Is(err, ErrGallocrFreeBlocks) {
		t.Fatalf("256th block: error %v, want ErrGallocrFreeBlocks", err)
	}
	// A free that merges needs no new block and still works.
	if err := g.Free(offs[1], 32); err != nil {
		t.Fatalf("merging free: %v", err)
	}
	if g.FreeBlocks() != GallocrMaxFreeBlocks-1 {
		t.Errorf("FreeBlocks = %d after a merge, want %d", g.FreeBlocks(), GallocrMaxFreeBlocks-1)
	}
}

func TestGallocrErrorsAndReset(t *testing.T) {
	g := NewGallocr(0)
	if _, err := g.Alloc(-1); err == nil {
		t.Error("Alloc(-1) succeeded")
	}
	if err := g.Free(-4, 4); err == nil {
		t.Error("Free at a negative offset succeeded")
	}
	if off, _ := g.Alloc(7); off != 0 || g.MaxSize() != 7 {
		t.Errorf("alignment 0 behaves as 1: offset %d, max %d", off, g.MaxSize())
	}
	g.Reset()
	if g.MaxSize() != 0 || g.FreeBlocks() != 1 {
		t.Errorf("after Reset: MaxSize %d, %d blocks", g.MaxSize(), g.FreeBlocks())
	}
	if off, _ := g.Alloc(0); off != 0 {
		t.Errorf("Alloc(0) = %d, want 0", off)
	}
}
