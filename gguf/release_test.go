package gguf

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestReleasePages drops the pages of a mapped tensor and of memory the
// package did not map: both read the same bytes afterwards.
func TestReleasePages(t *testing.T) {
	w := NewWriter()
	want := make([]byte, 4*65536)
	for i := range want {
		want[i] = byte(i*7 + i>>9)
	}
	mustAdd(t, w, "big", TypeF32, []int64{65536}, want)
	p := filepath.Join(t.TempDir(), "big.gguf")
	if err := os.WriteFile(p, writeBuf(t, w), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, err := f.TensorData("big")
	if err != nil {
		t.Fatal(err)
	}
	ReleasePages(d[100:]) // partial first page: kept
	ReleasePages(d)
	if !bytes.Equal(d, want) {
		t.Error("mapped tensor changed after ReleasePages")
	}
	heap := bytes.Clone(want)
	ReleasePages(heap)
	ReleasePages(nil)
	if !bytes.Equal(heap, want) {
		t.Error("heap memory changed after ReleasePages")
	}
}
