// Package registry is the one layered registry behind the extension
// points: ir.OpSet (ops), eval.KernelSet (CPU kernels), passes.Registry
// (passes), target.Rules (op rules and target profiles) and
// planner.StrategySet (offset strategies). Each keeps a package default
// and makes fresh sets layered over it: lookups fall through to the
// parent, registrations stay in the layer that made them, so two
// experiments in one process never see each other's. The typed wrappers
// check their values and word their errors; this type only stores.
package registry

import (
	"cmp"
	"slices"
	"sync"
)

// Layered maps keys to values, over an optional parent. It is safe for
// concurrent use.
type Layered[K cmp.Ordered, V any] struct {
	parent *Layered[K, V]
	mu     sync.RWMutex
	m      map[K]V
	order  []K // this layer's keys in registration order
}

// New returns an empty layer over parent (nil: a root).
func New[K cmp.Ordered, V any](parent *Layered[K, V]) *Layered[K, V] {
	return &Layered[K, V]{parent: parent, m: map[K]V{}}
}

// Parent returns the layer r sits over (nil for a root).
func (r *Layered[K, V]) Parent() *Layered[K, V] { return r.parent }

// Add registers v under k in r. It reports false, changing nothing, when
// k is registered already, in r or in a layer below it.
func (r *Layered[K, V]) Add(k K, v V) bool {
	if r.parent != nil {
		if _, dup := r.parent.Lookup(k); dup {
			return false
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[k]; dup {
		return false
	}
	r.m[k] = v
	r.order = append(r.order, k)
	return true
}

// Set registers v under k in r, replacing r's own value and hiding a
// lower layer's (an override that only r and the layers over it see).
func (r *Layered[K, V]) Set(k K, v V) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.m[k]; !ok {
		r.order = append(r.order, k)
	}
	r.m[k] = v
}

// Lookup returns the value of k in r or, failing that, in the layers
// below it.
func (r *Layered[K, V]) Lookup(k K) (V, bool) {
	for x := r; x != nil; x = x.parent {
		x.mu.RLock()
		v, ok := x.m[k]
		x.mu.RUnlock()
		if ok {
			return v, true
		}
	}
	var zero V
	return zero, false
}

// Keys lists every key r sees, sorted.
func (r *Layered[K, V]) Keys() []K {
	out := r.Ordered()
	slices.Sort(out)
	return out
}

// Ordered lists every key r sees in registration order: the lowest
// layer's first, each key once.
func (r *Layered[K, V]) Ordered() []K {
	var layers []*Layered[K, V]
	for x := r; x != nil; x = x.parent {
		layers = append(layers, x)
	}
	var out []K
	seen := map[K]bool{}
	for i := len(layers) - 1; i >= 0; i-- {
		x := layers[i]
		x.mu.RLock()
		for _, k := range x.order {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
		x.mu.RUnlock()
	}
	return out
}

// Values returns the value of every key r sees, in the order of Ordered
// (a key a higher layer overrides gives that layer's value).
func (r *Layered[K, V]) Values() []V {
	keys := r.Ordered()
	out := make([]V, 0, len(keys))
	for _, k := range keys {
		v, _ := r.Lookup(k)
		out = append(out, v)
	}
	return out
}
