package sysmem

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	if tot := Total(); tot <= 0 {
		t.Fatalf("Total %d", tot)
	}
	if err := Check("small", 1<<20); err != nil {
		t.Errorf("1 MiB: %v", err)
	}
	err := Check(`node %7 ("x")`, 1<<62)
	if err == nil || !strings.Contains(err.Error(), `node %7 ("x") needs`) {
		t.Errorf("1<<62 bytes: %v", err)
	}
	if err := Check("neg", -1); err == nil {
		t.Error("negative size accepted")
	}
}
