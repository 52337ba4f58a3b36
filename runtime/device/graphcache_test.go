package device

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/irtool/irtool/ir"
)

// variantSeq returns a copy of the test sequence with kernel k's output
// address shifted by delta bytes (delta 0: unchanged).
func variantLaunches(base []KernelLaunch, k int, delta Ptr) []KernelLaunch {
	out := make([]KernelLaunch, len(base))
	copy(out, base)
	for i := range out {
		out[i].Inputs = append([]TensorDesc(nil), base[i].Inputs...)
	}
	out[k].Output.Addr += delta
	return out
}

func TestGraphCacheLRU(t *testing.T) {
	for _, m := range []Matcher{MatchProperties, MatchFingerprint} {
		t.Run(m.String(), func(t *testing.T) {
			d := newTestDevice(t)
			st, _ := d.CreateStream()
			s := newTestSeq(t, d)
			c, err := NewGraphCache(d, CacheOptions{Capacity: 3, Matcher: m})
			if err != nil {
				t.Fatal(err)
			}
			// Four sequences differing only in the last kernel's output
			// address (inside the out buffer's 128-byte block: 0 or 32 B
			// in, over 8 rows of 4 floats... all writes stay in device
			// memory).
			var props []*GraphProps
			var seqs [][]KernelLaunch
			for v := 0; v < 4; v++ {
				l := variantLaunches(s.launches, 3, Ptr(v*64))
				seqs = append(seqs, l)
				props = append(props, NewGraphProps(l))
			}
			run := func(v int) Outcome {
				t.Helper()
				o, err := c.Execute(st, props[v], func(st Stream) error {
					for i := range seqs[v] {
						if err := d.Launch(st, &seqs[v][i]); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				return o
			}
			want := []struct {
				v     int
				out   Outcome
				order []int // LRU order afterwards, most recent first
			}{
				{0, Captured, []int{0}},
				{1, Captured, []int{1, 0}},
				{0, Replayed, []int{0, 1}},
				{2, Captured, []int{2, 0, 1}},
				{3, Captured, []int{3, 2, 0}}, // evicts 1, the back
				{1, Captured, []int{1, 3, 2}}, // evicts 0
				{2, Replayed, []int{2, 1, 3}},
			}
			for i, w := range want {
				if got := run(w.v); got != w.out {
					t.Fatalf("step %d (seq %d): %v, want %v", i, w.v, got, w.out)
				}
				var order []uint64
				for _, v := range w.order {
					order = append(order, props[v].Fingerprint())
				}
				if got := c.Fingerprints(); !reflect.DeepEqual(got, order) {
					t.Fatalf("step %d: LRU order %x, want %x", i, got, order)
				}
			}
			cs := c.Stats()
			if cs.Hits != 2 || cs.Misses != 5 || cs.Captures != 5 || cs.Replays != 7 || cs.Evictions != 2 || cs.Destroyed != 2 {
				t.Errorf("stats %+v", cs)
			}
			if ds := d.Stats(); ds.GraphsDestroyed != 2 || d.LiveGraphs() != 3 {
				t.Errorf("device: %d destroyed, %d live; want 2 and 3", ds.GraphsDestroyed, d.LiveGraphs())
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if d.LiveGraphs() != 0 || c.Len() != 0 {
				t.Errorf("after Close: %d live graphs, %d cached", d.LiveGraphs(), c.Len())
			}
		})
	}
}

// The two matchers must give the same answer for every lookup: same
// outcomes, same LRU order, same evictions, on random workloads mixing
// every kind of property change.
func TestMatchersAgree(t *testing.T) {
	base := (&testSeq{x: 0x1000, w: 0x2000, b: 0x3000, t1: 0x4000, t2: 0x5000, t3: 0x6000, out: 0x7000})
	base.relaunch()
	mutations := []func(l []KernelLaunch, r *rand.Rand){
		func(l []KernelLaunch, r *rand.Rand) { l[r.Intn(len(l))].Output.Addr += 64 },     // address
		func(l []KernelLaunch, r *rand.Rand) { l[r.Intn(len(l))].Inputs[0].Addr += 128 }, // src address
		func(l []KernelLaunch, r *rand.Rand) { l[r.Intn(len(l))].Output.Ne[1]++ },        // shape
		func(l []KernelLaunch, r *rand.Rand) { l[r.Intn(len(l))].Inputs[0].Nb[2] *= 2 },  // src stride
		func(l []KernelLaunch, r *rand.Rand) { l[r.Intn(len(l))].Output.DType = ir.F16 }, // dtype
		func(l []KernelLaunch, r *rand.Rand) { l[0].Attrs = ir.Attrs{"eps": 1e-6} },      // op params
		func(l []KernelLaunch, r *rand.Rand) { l[r.Intn(len(l))].Op = ir.OpScale },       // op
		func(l []KernelLaunch, r *rand.Rand) { l[r.Intn(len(l))].WorkspaceBytes = 256 },  // workspace
		func(l []KernelLaunch, r *rand.Rand) { l[1].Inputs = l[1].Inputs[:1] },           // src count
	}
	r := rand.New(rand.NewSource(7))
	// A pool of 24 sequences, some equal in content but distinct values.
	var pool []*GraphProps
	for len(pool) < 24 {
		l := variantLaunches(base.launches, 0, 0)
		for i, n := 0, r.Intn(3); i < n; i++ {
			mutations[r.Intn(len(mutations))](l, r)
		}
		pool = append(pool, NewGraphProps(l))
	}
	// Matches agrees with deep equality, and equal properties have equal
	// fingerprints.
	for _, a := range pool {
		for _, b := range pool {
			ok, _ := a.Matches(b)
			if eq := reflect.DeepEqual(a.Kernels, b.Kernels); ok != eq {
				t.Fatalf("Matches = %v but deep equality = %v", ok, eq)
			}
			if ok && a.Fingerprint() != b.Fingerprint() {
				t.Fatal("equal properties, different fingerprints")
			}
		}
	}
	for _, capacity := range []int{1, 3, 12} {
		caches := map[Matcher]*GraphCache{}
		devs := map[Matcher]*fakeDevice{}
		for _, m := range []Matcher{MatchProperties, MatchFingerprint} {
			devs[m] = &fakeDevice{}
			caches[m], _ = NewGraphCache(devs[m], CacheOptions{Capacity: capacity, Matcher: m, Warmup: capacity == 3})
		}
		for step := 0; step < 2000; step++ {
			p := pool[r.Intn(len(pool))]
			if r.Intn(4) == 0 { // a fresh but equal value: no pointer shortcut
				p = &GraphProps{Kernels: p.Kernels, fp: p.fp}
			}
			var outs []Outcome
			for _, m := range []Matcher{MatchProperties, MatchFingerprint} {
				o, err := caches[m].Execute(1, p, func(Stream) error { return nil })
				if err != nil {
					t.Fatal(err)
				}
				outs = append(outs, o)
			}
			if outs[0] != outs[1] {
				t.Fatalf("capacity %d step %d: properties %v, fingerprint %v", capacity, step, outs[0], outs[1])
			}
			if a, b := caches[MatchProperties].Fingerprints(), caches[MatchFingerprint].Fingerprints(); !reflect.DeepEqual(a, b) {
				t.Fatalf("capacity %d step %d: LRU orders differ", capacity, step)
			}
		}
		a, b := caches[MatchProperties].Stats(), caches[MatchFingerprint].Stats()
		if a.Hits != b.Hits || a.Misses != b.Misses || a.Evictions != b.Evictions || a.Captures != b.Captures {
			t.Errorf("capacity %d: stats differ: %+v vs %+v", capacity, a, b)
		}
		if a.Compared <= b.Compared {
			t.Errorf("capacity %d: the fingerprint index compared %d kernels, the scan %d: no saving", capacity, b.Compared, a.Compared)
		}
		if a.Hits == 0 || a.Evictions == 0 && capacity < len(pool) {
			t.Errorf("capacity %d: workload exercised nothing: %+v", capacity, a)
		}
		t.Logf("capacity %d: %d hits, %d misses, %d evictions; kernels compared: scan %d, index %d",
			capacity, a.Hits, a.Misses, a.Evictions, a.Compared, b.Compared)
	}
}

// fakeDevice records graph calls for cache tests that need no numbers.
type fakeDevice struct {
	Device
	next      GraphHandle
	live      map[GraphHandle]bool
	synced    []Stream
	destroyed int
}

func (f *fakeDevice) CaptureBegin(Stream, CaptureMode) error { return nil }
func (f *fakeDevice) CaptureEnd(Stream) (GraphHandle, error) {
	if f.live == nil {
		f.live = map[GraphHandle]bool{}
	}
	f.next++
	f.live[f.next] = true
	return f.next, nil
}
func (f *fakeDevice) ExecuteAsync(g GraphHandle, _ Stream) error {
	if !f.live[g] {
		return fmt.Errorf("graph %d is not live", g)
	}
	return nil
}
func (f *fakeDevice) SynchronizeStream(s Stream) error { f.synced = append(f.synced, s); return nil }
func (f *fakeDevice) DestroyGraph(g GraphHandle) error {
	if !f.live[g] {
		return fmt.Errorf("graph %d is not live", g)
	}
	delete(f.live, g)
	f.destroyed++
	return nil
}

func TestGraphCacheWarmup(t *testing.T) {
	f := &fakeDevice{}
	c, _ := NewGraphCache(f, CacheOptions{Capacity: 4, Warmup: true})
	a := NewGraphProps([]KernelLaunch{{Op: ir.OpAdd, Output: f32Desc(64, 4)}})
	b := NewGraphProps([]KernelLaunch{{Op: ir.OpMul, Output: f32Desc(64, 4)}})
	eager := 0
	launch := func(Stream) error { eager++; return nil }
	seq := []struct {
		p    *GraphProps
		want Outcome
	}{
		{a, WarmupEager}, {b, WarmupEager}, {a, WarmupEager}, // alternating never settles
		{a, Captured}, {a, Replayed}, // seen twice in a row: captured
		{b, WarmupEager}, {b, Captured}, {a, Replayed}, {b, Replayed},
	}
	for i, s := range seq {
		o, err := c.Execute(5, s.p, launch)
		if err != nil {
			t.Fatal(err)
		}
		if o != s.want {
			t.Fatalf("call %d: %v, want %v", i, o, s.want)
		}
	}
	if eager != 6 { // 4 warm-up runs + 2 captures (launch runs inside the capture)
		t.Errorf("launch called %d times, want 6", eager)
	}
	if st := c.Stats(); st.WarmupEager != 4 || st.Captures != 2 {
		t.Errorf("stats %+v", st)
	}
}

// Eviction synchronises the evicted graph's stream before destroying it,
// so a graph still queued there is destroyed without error 107037.
func TestEvictionSyncsBeforeDestroy(t *testing.T) {
	d := newTestDevice(t)
	st, _ := d.CreateStream()
	s := newTestSeq(t, d)
	c, _ := NewGraphCache(d, CacheOptions{Capacity: 1})
	for v := 0; v < 3; v++ {
		l := variantLaunches(s.launches, 3, Ptr(v*64))
		_, err := c.Execute(st, NewGraphProps(l), func(st Stream) error {
			for i := range l {
				if err := d.Launch(st, &l[i]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("variant %d: %v", v, err)
		}
	}
	if cs := c.Stats(); cs.Evictions != 2 || cs.Destroyed != 2 {
		t.Errorf("stats %+v", cs)
	}
	if d.LiveGraphs() != 1 {
		t.Errorf("%d live graphs, want 1", d.LiveGraphs())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestPolicyFromEnv(t *testing.T) {
	tests := []struct {
		env     map[string]string
		want    GraphPolicy
		wantErr bool
	}{
		{env: nil, want: DefaultGraphPolicy()},
		{env: map[string]string{EnvACLGraph: "0"}, want: GraphPolicy{Cache: CacheOptions{Capacity: 12}}},
		{env: map[string]string{EnvACLGraph: "OFF"}, want: GraphPolicy{Cache: CacheOptions{Capacity: 12}}},
		{env: map[string]string{EnvPrefillUseGraph: "yes", EnvCacheCapacity: "32"}, want: GraphPolicy{Graphs: true, PrefillGraphs: true, Cache: CacheOptions{Capacity: 32}}},
		{env: map[string]string{EnvGraphWarmup: "enable", EnvGraphMatcher: "fingerprint"}, want: GraphPolicy{Graphs: true, Cache: CacheOptions{Capacity: 12, Warmup: true, Matcher: MatchFingerprint}}},
		{env: map[string]string{EnvCacheCapacity: "zero"}, wantErr: true},
		{env: map[string]string{EnvCacheCapacity: "0"}, wantErr: true},
		{env: map[string]string{EnvACLGraph: "maybe"}, wantErr: true},
		{env: map[string]string{EnvGraphMatcher: "magic"}, wantErr: true},
	}
	for i, tc := range tests {
		got, err := PolicyFromEnv(func(k string) string { return tc.env[k] })
		if (err != nil) != tc.wantErr {
			t.Errorf("case %d: err %v", i, err)
			continue
		}
		if err == nil && !reflect.DeepEqual(got, tc.want) {
			t.Errorf("case %d: %+v, want %+v", i, got, tc.want)
		}
	}
}

func TestGraphPolicyDecisions(t *testing.T) {
	def := DefaultGraphPolicy()
	off := GraphPolicy{}
	pre := DefaultGraphPolicy()
	pre.PrefillGraphs = true
	tests := []struct {
		p        GraphPolicy
		n, limit int64
		graph    bool
		padded   int64
	}{
		{def, 1, 256, true, 1},
		{def, 5, 256, false, 5},
		{off, 1, 256, false, 1},
		{off, 5, 256, false, 5},
		{pre, 5, 256, true, 16},
		{pre, 17, 256, true, 32},
		{pre, 64, 256, true, 64},
		{pre, 200, 256, true, 256},
		{pre, 200, 240, true, 200}, // no bucket fits: exact length
		{pre, 1, 256, true, 1},
	}
	for i, tc := range tests {
		if got := tc.p.UseGraph(tc.n); got != tc.graph {
			t.Errorf("case %d: UseGraph(%d) = %v", i, tc.n, got)
		}
		if got := tc.p.PrefillLength(tc.n, tc.limit); got != tc.padded {
			t.Errorf("case %d: PrefillLength(%d, %d) = %d, want %d", i, tc.n, tc.limit, got, tc.padded)
		}
	}
	custom := pre
	custom.PrefillBuckets = []int64{8, 24}
	if got := custom.PrefillLength(9, 100); got != 24 {
		t.Errorf("custom buckets: %d", got)
	}
}

// benchProps builds n cached sequences of k kernels that differ only in
// the last kernel (the worst case for a front-to-back scan).
func benchProps(n, k int) []*GraphProps {
	var out []*GraphProps
	for i := 0; i < n; i++ {
		var ls []KernelLaunch
		for j := 0; j < k; j++ {
			out := f32Desc(Ptr(0x10000+j*4096), 64, 1)
			if j == k-1 {
				out.Addr += Ptr(i * 256)
			}
			ls = append(ls, KernelLaunch{Name: "aclnnMul", Op: ir.OpMul, Attrs: ir.Attrs{"k": int64(j)},
				Inputs: []TensorDesc{f32Desc(Ptr(0x9000+j*4096), 64, 1), f32Desc(0x8000, 64)}, Output: out})
		}
		out = append(out, NewGraphProps(ls))
	}
	return out
}

// BenchmarkCacheLookup measures one lookup against the cache size, for both
// matchers, with 150 kernels per graph (a small decode step). "hit" cycles
// through the cached graphs in LRU order, so every lookup finds the back
// entry; "hit-copy" does the same with an equal but distinct GraphProps
// value (no pointer shortcut); "miss" looks up a graph that differs from
// every cached one only in its last kernel.
func BenchmarkCacheLookup(b *testing.B) {
	const kernels = 150
	for _, m := range []Matcher{MatchProperties, MatchFingerprint} {
		for _, size := range []int{1, 4, 12, 32, 128} {
			props := benchProps(size+1, kernels)
			c, _ := NewGraphCache(&fakeDevice{}, CacheOptions{Capacity: size, Matcher: m})
			for _, p := range props[:size] {
				c.Insert(p, 0, 0)
			}
			copies := make([]*GraphProps, size)
			for i, p := range props[:size] {
				copies[i] = &GraphProps{Kernels: append([]KernelProps(nil), p.Kernels...), fp: p.fp}
			}
			b.Run(fmt.Sprintf("%s/size=%d/hit", m, size), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, ok := c.Lookup(props[i%size]); !ok {
						b.Fatal("miss")
					}
				}
			})
			b.Run(fmt.Sprintf("%s/size=%d/hit-copy", m, size), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, ok := c.Lookup(copies[i%size]); !ok {
						b.Fatal("miss")
					}
				}
			})
			b.Run(fmt.Sprintf("%s/size=%d/miss", m, size), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					if _, ok := c.Lookup(props[size]); ok {
						b.Fatal("hit")
					}
				}
			})
		}
	}
}

// BenchmarkNewGraphProps measures recording the properties (and the
// fingerprint) of a 150-kernel sequence: paid once per loaded program, not
// per lookup.
func BenchmarkNewGraphProps(b *testing.B) {
	var ls []KernelLaunch
	for j := 0; j < 150; j++ {
		ls = append(ls, KernelLaunch{Name: "aclnnMul", Op: ir.OpMul, Attrs: ir.Attrs{"k": int64(j)},
			Inputs: []TensorDesc{f32Desc(Ptr(0x9000+j*4096), 64, 1), f32Desc(0x8000, 64)}, Output: f32Desc(Ptr(0x10000+j*4096), 64, 1)})
	}
	for i := 0; i < b.N; i++ {
		NewGraphProps(ls)
	}
}

// TestDeviceLockRegistry: the registry holds a device only while it has
// registered users, so a closed device can be garbage-collected.
func TestDeviceLockRegistry(t *testing.T) {
	dev, err := NewSimDevice(SimOptions{MemoryBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewGraphCache(dev, CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewGraphCache(dev, CacheOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if DeviceLock(dev) != AcquireDeviceLock(dev) {
		t.Error("users of one device see different locks")
	}
	ReleaseDeviceLock(dev)
	if !registered(dev) {
		t.Error("device with two caches is not registered")
	}
	a.Close()
	a.Close() // idempotent: releases once
	if !registered(dev) {
		t.Error("device forgotten while a cache still uses it")
	}
	b.Close()
	if registered(dev) {
		t.Error("device still registered after its last cache closed")
	}
}
