package registry

import (
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestLayered(t *testing.T) {
	base := New[string, int](nil)
	for i, k := range []string{"b", "a", "c"} {
		if !base.Add(k, i) {
			t.Fatalf("Add(%q) refused on an empty root", k)
		}
	}
	if base.Add("a", 9) {
		t.Error("Add of a key the layer holds succeeded")
	}
	x, y := New(base), New(base)
	if x.Add("a", 9) {
		t.Error("Add of a key the parent holds succeeded")
	}
	if !x.Add("d", 3) || !y.Add("d", 4) {
		t.Error("two layers over one parent could not each add the same new key")
	}
	x.Set("b", 7)
	for _, c := range []struct {
		r    *Layered[string, int]
		k    string
		want int
		ok   bool
	}{
		{base, "b", 0, true}, {base, "d", 0, false}, {x, "b", 7, true}, {x, "a", 1, true},
		{x, "d", 3, true}, {y, "d", 4, true}, {y, "b", 0, true}, {y, "z", 0, false},
	} {
		if v, ok := c.r.Lookup(c.k); v != c.want || ok != c.ok {
			t.Errorf("Lookup(%q) = %d, %v; want %d, %v", c.k, v, ok, c.want, c.ok)
		}
	}
	if got, want := x.Ordered(), []string{"b", "a", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("Ordered = %v, want %v", got, want)
	}
	if got, want := x.Keys(), []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("Keys = %v, want %v", got, want)
	}
	if got, want := x.Values(), []int{7, 1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("Values = %v, want %v", got, want)
	}
	if got, want := base.Keys(), []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("the parent sees a child's keys: %v, want %v", got, want)
	}
	if x.Parent() != base || base.Parent() != nil {
		t.Error("Parent")
	}
}

// TestLayeredConcurrent adds the same keys from many goroutines: each key
// is taken exactly once (run with -race).
func TestLayeredConcurrent(t *testing.T) {
	r := New[string, int](New[string, int](nil))
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := map[string]int{}
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				k := fmt.Sprint(i)
				if r.Add(k, g) {
					mu.Lock()
					won[k]++
					mu.Unlock()
				}
				r.Lookup(k)
				r.Keys()
			}
		}()
	}
	wg.Wait()
	for k, n := range won {
		if n != 1 {
			t.Errorf("key %s added %d times", k, n)
		}
	}
	if len(won) != 50 || len(r.Keys()) != 50 {
		t.Errorf("%d keys won, %d listed; want 50", len(won), len(r.Keys()))
	}
}
