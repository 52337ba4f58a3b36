package gocount

import (
	"sync"
	"testing"
)

func TestCreatedCounts(t *testing.T) {
	before := Created(t)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() { wg.Done() }()
	}
	wg.Wait()
	if d := Created(t) - before; d < 3 {
		t.Errorf("3 goroutines started, counted %d", d)
	}
}
