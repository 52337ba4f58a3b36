package device

import (
	"container/list"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/irtool/irtool/ir"
)

// This file holds the ACL-graph cache of llama.cpp's CANN backend
// (ggml-cann's graph LRU cache; llama.cpp PRs #15065, #15814): captured kernel
// sequences kept in an LRU list, matched against the sequence about to run,
// replayed on a hit and captured on a miss; plus the policy deciding when a
// step uses graphs at all.

// KernelProps are the properties of one kernel ggml-cann matches on: the op
// (and aclnn name), the output's and every input's dtype, ne, nb and device
// address, the workspace, and all op params.
type KernelProps struct {
	Name           string
	Op             ir.Op
	Output         TensorDesc
	Inputs         []TensorDesc
	Extra          []TensorDesc
	Params         string // the op params in canonical text form
	Workspace      Ptr
	WorkspaceBytes int64
}

// GraphProps are the properties of a kernel sequence, plus their
// fingerprint. Build them once per sequence (NewGraphProps) and reuse them:
// they are immutable.
type GraphProps struct {
	Kernels []KernelProps
	fp      uint64
}

// NewGraphProps records the properties of a launch sequence.
func NewGraphProps(ks []KernelLaunch) *GraphProps {
	p := &GraphProps{Kernels: make([]KernelProps, len(ks))}
	for i := range ks {
		k := &ks[i]
		p.Kernels[i] = KernelProps{Name: k.Name, Op: k.Op, Output: k.Output,
			Inputs: append([]TensorDesc(nil), k.Inputs...), Extra: append([]TensorDesc(nil), k.Extra...), Params: k.Attrs.String(),
			Workspace: k.Workspace, WorkspaceBytes: k.WorkspaceBytes}
	}
	p.fp = p.fingerprint()
	return p
}

// Fingerprint is a 64-bit FNV-1a hash of every property: equal properties
// give equal fingerprints.
func (p *GraphProps) Fingerprint() uint64 { return p.fp }

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvWord(h, v uint64) uint64 {
	for i := 0; i < 8; i++ {
		h ^= v & 0xff
		h *= fnvPrime
		v >>= 8
	}
	return h
}

func fnvString(h uint64, s string) uint64 {
	h = fnvWord(h, uint64(len(s)))
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

func fnvDesc(h uint64, t TensorDesc) uint64 {
	h = fnvWord(h, uint64(t.DType))
	for i := range t.Ne {
		h = fnvWord(h, uint64(t.Ne[i]))
		h = fnvWord(h, uint64(t.Nb[i]))
	}
	return fnvWord(h, uint64(t.Addr))
}

func (p *GraphProps) fingerprint() uint64 {
	h := fnvWord(fnvOffset, uint64(len(p.Kernels)))
	for i := range p.Kernels {
		k := &p.Kernels[i]
		h = fnvString(h, k.Name)
		h = fnvString(h, string(k.Op))
		h = fnvDesc(h, k.Output)
		h = fnvWord(h, uint64(len(k.Inputs)))
		for _, in := range k.Inputs {
			h = fnvDesc(h, in)
		}
		h = fnvWord(h, uint64(len(k.Extra)))
		for _, x := range k.Extra {
			h = fnvDesc(h, x)
		}
		h = fnvString(h, k.Params)
		h = fnvWord(h, uint64(k.Workspace))
		h = fnvWord(h, uint64(k.WorkspaceBytes))
	}
	return h
}

// Matches is ggml-cann's test (ggml-cann's is_matched_graph): the kernel
// counts are equal and, kernel by kernel, the op, output and input
// descriptors (dtype, ne, nb, address), workspace and op params are equal.
// It returns the number of kernels compared, the cost of the test.
func (p *GraphProps) Matches(q *GraphProps) (bool, int) {
	if len(p.Kernels) != len(q.Kernels) {
		return false, 0
	}
	for i := range p.Kernels {
		a, b := &p.Kernels[i], &q.Kernels[i]
		if a.Op != b.Op || a.Name != b.Name || a.Output != b.Output || len(a.Inputs) != len(b.Inputs) ||
			len(a.Extra) != len(b.Extra) || a.Workspace != b.Workspace || a.WorkspaceBytes != b.WorkspaceBytes {
			return false, i + 1
		}
		for j := range a.Inputs {
			if a.Inputs[j] != b.Inputs[j] {
				return false, i + 1
			}
		}
		for j := range a.Extra {
			if a.Extra[j] != b.Extra[j] {
				return false, i + 1
			}
		}
		if a.Params != b.Params {
			return false, i + 1
		}
	}
	return true, len(p.Kernels)
}

// Matcher selects how the cache finds a graph.
type Matcher int

const (
	// MatchProperties walks the LRU list front to back and compares each
	// cached graph property by property (ggml-cann's linear scan).
	MatchProperties Matcher = iota
	// MatchFingerprint looks the fingerprint up in a hash index and
	// compares only the candidates found there (skipping even that when
	// the very same GraphProps value was cached), so a lookup costs the
	// same whatever the cache size.
	MatchFingerprint
)

// String is "properties" or "fingerprint".
func (m Matcher) String() string {
	if m == MatchFingerprint {
		return "fingerprint"
	}
	return "properties"
}

// ParseMatcher parses "properties" or "fingerprint".
func ParseMatcher(s string) (Matcher, error) {
	switch strings.ToLower(s) {
	case "properties", "props", "":
		return MatchProperties, nil
	case "fingerprint", "fp":
		return MatchFingerprint, nil
	}
	return 0, fmt.Errorf("device: unknown graph matcher %q (want properties or fingerprint)", s)
}

// DefaultGraphCacheCapacity is ggml-cann's LRU size
// (GGML_CANN_GRAPH_CACHE_CAPACITY's default).
const DefaultGraphCacheCapacity = 12

// CacheOptions configure a GraphCache.
type CacheOptions struct {
	// Capacity is the number of graphs kept (default 12).
	Capacity int
	// Matcher selects the lookup (default MatchProperties).
	Matcher Matcher
	// Warmup captures a sequence only when it is seen twice in a row with
	// unchanged properties, running it eagerly the first time (ggml-cuda's
	// warm-up; ggml-cuda's graph warm-up, llama.cpp PR #19754).
	Warmup bool
	// Mode is the capture mode (default CaptureGlobal, as ggml-cann).
	Mode CaptureMode
}

// CacheStats are a cache's counters.
type CacheStats struct {
	Lookups     int64 `json:"lookups"`
	Hits        int64 `json:"cache_hits"`
	Misses      int64 `json:"cache_misses"`
	Captures    int64 `json:"captures"`
	Replays     int64 `json:"replays"`
	Evictions   int64 `json:"evictions"`
	Destroyed   int64 `json:"destroyed"`    // graphs destroyed (evictions and Close)
	WarmupEager int64 `json:"warmup_eager"` // misses run eagerly by the warm-up rule
	Compared    int64 `json:"compared"`     // kernels compared by Matches
}

// Outcome says how Execute ran a sequence.
type Outcome int

const (
	// Replayed: a cached graph matched and was replayed.
	Replayed Outcome = iota
	// Captured: no graph matched; the sequence was captured, cached and
	// replayed.
	Captured
	// WarmupEager: no graph matched and the warm-up rule ran the sequence
	// eagerly.
	WarmupEager
)

// String names the outcome as the stats report it.
func (o Outcome) String() string {
	return [...]string{"replayed", "captured", "warmup-eager"}[o]
}

type cacheEntry struct {
	props  *GraphProps
	graph  GraphHandle
	stream Stream // where it last ran: synchronised before destroying
}

// GraphCache is the LRU list of captured graphs of one device. It is safe
// for concurrent use; a session normally owns one.
type GraphCache struct {
	dev  Device
	opts CacheOptions

	mu      sync.Mutex
	lru     *list.List                 // of *cacheEntry, most recent first
	index   map[uint64][]*list.Element // fingerprint -> entries (MatchFingerprint)
	pending *GraphProps                // warm-up: the last sequence run eagerly
	stats   CacheStats
	// devLock is the device's lock, registered until Close.
	devLock  *sync.RWMutex
	released bool
}

// NewGraphCache returns an empty cache on dev.
func NewGraphCache(dev Device, opts CacheOptions) (*GraphCache, error) {
	if opts.Capacity == 0 {
		opts.Capacity = DefaultGraphCacheCapacity
	}
	if opts.Capacity < 1 {
		return nil, fmt.Errorf("device: graph cache capacity %d: must be at least 1", opts.Capacity)
	}
	if opts.Matcher != MatchProperties && opts.Matcher != MatchFingerprint {
		return nil, fmt.Errorf("device: unknown graph matcher %d", opts.Matcher)
	}
	return &GraphCache{dev: dev, opts: opts, lru: list.New(), index: map[uint64][]*list.Element{},
		devLock: AcquireDeviceLock(dev)}, nil
}

// Capacity returns the cache's capacity.
func (c *GraphCache) Capacity() int { return c.opts.Capacity }

// Len returns the number of cached graphs.
func (c *GraphCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// Stats returns the cache's counters.
func (c *GraphCache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats
}

// Fingerprints lists the cached graphs' fingerprints, most recent first.
func (c *GraphCache) Fingerprints() []uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []uint64
	for e := c.lru.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(*cacheEntry).props.fp)
	}
	return out
}

// Lookup finds the graph matching p and moves it to the front. It counts
// a hit or a miss.
func (c *GraphCache) Lookup(p *GraphProps) (GraphHandle, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.find(p)
	if e == nil {
		c.stats.Misses++
		return 0, false
	}
	c.stats.Hits++
	c.lru.MoveToFront(e)
	return e.Value.(*cacheEntry).graph, true
}

func (c *GraphCache) find(p *GraphProps) *list.Element {
	c.stats.Lookups++
	if c.opts.Matcher == MatchFingerprint {
		for _, e := range c.index[p.fp] {
			q := e.Value.(*cacheEntry).props
			if q == p {
				return e
			}
			ok, n := q.Matches(p)
			c.stats.Compared += int64(n)
			if ok {
				return e
			}
		}
		return nil
	}
	for e := c.lru.Front(); e != nil; e = e.Next() {
		ok, n := e.Value.(*cacheEntry).props.Matches(p)
		c.stats.Compared += int64(n)
		if ok {
			return e
		}
	}
	return nil
}

// Insert caches graph g (captured from the sequence p, run on stream s) at
// the front, evicting the back when the cache is full: the evicted graph's
// stream is synchronised, then the graph destroyed.
func (c *GraphCache) Insert(p *GraphProps, g GraphHandle, s Stream) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.insert(p, g, s)
}

func (c *GraphCache) insert(p *GraphProps, g GraphHandle, s Stream) error {
	var err error
	for c.lru.Len() >= c.opts.Capacity {
		if e := c.evictBack(); e != nil && err == nil {
			err = e
		}
	}
	el := c.lru.PushFront(&cacheEntry{props: p, graph: g, stream: s})
	c.index[p.fp] = append(c.index[p.fp], el)
	return err
}

func (c *GraphCache) remove(el *list.Element) *cacheEntry {
	ent := el.Value.(*cacheEntry)
	c.lru.Remove(el)
	bucket := c.index[ent.props.fp]
	for i, x := range bucket {
		if x == el {
			bucket = append(bucket[:i], bucket[i+1:]...)
			break
		}
	}
	if len(bucket) == 0 {
		delete(c.index, ent.props.fp)
	} else {
		c.index[ent.props.fp] = bucket
	}
	return ent
}

func (c *GraphCache) destroy(ent *cacheEntry) error {
	if err := c.dev.SynchronizeStream(ent.stream); err != nil {
		return fmt.Errorf("device: graph cache: synchronising before destroying graph %#x: %w", uint64(ent.graph), err)
	}
	if err := c.dev.DestroyGraph(ent.graph); err != nil {
		return fmt.Errorf("device: graph cache: %w", err)
	}
	c.stats.Destroyed++
	return nil
}

func (c *GraphCache) evictBack() error {
	ent := c.remove(c.lru.Back())
	c.stats.Evictions++
	return c.destroy(ent)
}

// Execute runs the kernel sequence whose properties are p on stream s
// through the cache, following ggml-cann's graph_compute: on a hit the
// cached graph is replayed with one ExecuteAsync; on a miss launch is
// called between CaptureBegin and CaptureEnd, the new graph is cached at
// the front (evicting the back) and replayed. With the warm-up option, a
// miss whose properties differ from the previous miss runs launch eagerly
// instead. launch must enqueue exactly the kernels p describes on the
// stream it is given, and nothing capture-unsafe.
func (c *GraphCache) Execute(s Stream, p *GraphProps, launch func(Stream) error) (Outcome, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.find(p); e != nil {
		c.stats.Hits++
		c.lru.MoveToFront(e)
		ent := e.Value.(*cacheEntry)
		ent.stream = s
		if err := c.dev.ExecuteAsync(ent.graph, s); err != nil {
			return Replayed, fmt.Errorf("device: graph cache: replay: %w", err)
		}
		c.stats.Replays++
		return Replayed, nil
	}
	c.stats.Misses++
	if c.opts.Warmup {
		same := c.pending == p
		if !same && c.pending != nil {
			same, _ = c.pending.Matches(p)
		}
		if !same {
			c.pending = p
			c.stats.WarmupEager++
			if err := launch(s); err != nil {
				return WarmupEager, err
			}
			return WarmupEager, nil
		}
		c.pending = nil
	}
	c.devLock.Lock()
	g, err := c.capture(s, launch)
	c.devLock.Unlock()
	if err != nil {
		return Captured, err
	}
	c.stats.Captures++
	if err := c.insert(p, g, s); err != nil {
		return Captured, err
	}
	if err := c.dev.ExecuteAsync(g, s); err != nil {
		return Captured, fmt.Errorf("device: graph cache: replay after capture: %w", err)
	}
	c.stats.Replays++
	return Captured, nil
}

func (c *GraphCache) capture(s Stream, launch func(Stream) error) (GraphHandle, error) {
	if err := c.dev.CaptureBegin(s, c.opts.Mode); err != nil {
		return 0, fmt.Errorf("device: graph cache: %w", err)
	}
	lerr := launch(s)
	g, err := c.dev.CaptureEnd(s)
	if lerr != nil {
		if err == nil {
			c.dev.DestroyGraph(g)
		}
		return 0, fmt.Errorf("device: graph cache: capturing: %w", lerr)
	}
	if err != nil {
		return 0, fmt.Errorf("device: graph cache: %w", err)
	}
	return g, nil
}

// Close destroys every cached graph (after synchronising its stream),
// empties the cache and ends its registration with the device's lock.
func (c *GraphCache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.released {
		c.released = true
		defer ReleaseDeviceLock(c.dev)
	}
	var first error
	for c.lru.Len() > 0 {
		if err := c.destroy(c.remove(c.lru.Front())); err != nil && first == nil {
			first = err
		}
	}
	c.pending = nil
	return first
}

// deviceLocks holds the lock of every device that has registered users
// (AcquireDeviceLock), with their count. An entry goes when its last user
// releases it, so the registry never keeps a closed device (and its
// memory) alive.
var (
	deviceLocksMu sync.Mutex
	deviceLocks   = map[Device]*deviceLock{}
)

type deviceLock struct {
	mu   sync.RWMutex
	refs int
}

// DeviceLock returns the lock that orders captures on dev against the
// capture-unsafe calls (malloc, free, synchronous copies, device
// synchronisation) of every user of dev. In GLOBAL mode ACL refuses such a
// call from any thread while a stream captures and invalidates the
// capture; users sharing a device therefore hold the read lock around
// those calls and the write lock around a capture (xLLM's device-wide
// capture lock; xLLM PR #604).
//
// The lock is shared by the users registered with AcquireDeviceLock (every
// GraphCache and program session registers for its lifetime). A device
// with no registered user gets a lock of its own, not kept: there is no
// one to order against.
func DeviceLock(dev Device) *sync.RWMutex {
	deviceLocksMu.Lock()
	defer deviceLocksMu.Unlock()
	if l, ok := deviceLocks[dev]; ok {
		return &l.mu
	}
	return new(sync.RWMutex)
}

// AcquireDeviceLock registers a user of dev and returns the device's lock
// (see DeviceLock). Every call must be paired with one ReleaseDeviceLock,
// typically in the user's Close.
func AcquireDeviceLock(dev Device) *sync.RWMutex {
	deviceLocksMu.Lock()
	defer deviceLocksMu.Unlock()
	l, ok := deviceLocks[dev]
	if !ok {
		l = &deviceLock{}
		deviceLocks[dev] = l
	}
	l.refs++
	return &l.mu
}

// ReleaseDeviceLock ends a registration made by AcquireDeviceLock; the last
// one forgets the device.
func ReleaseDeviceLock(dev Device) {
	deviceLocksMu.Lock()
	defer deviceLocksMu.Unlock()
	l, ok := deviceLocks[dev]
	if !ok {
		return
	}
	if l.refs--; l.refs <= 0 {
		delete(deviceLocks, dev)
	}
}

// registered reports whether dev has registered users (for tests).
func registered(dev Device) bool {
	deviceLocksMu.Lock()
	defer deviceLocksMu.Unlock()
	_, ok := deviceLocks[dev]
	return ok
}

// GraphPolicy decides when steps use graphs, and configures the cache
// (ggml-cann: graph mode on/off, prefill eager by default, cache capacity).
type GraphPolicy struct {
	// Graphs enables graph mode; off means every step runs eagerly.
	Graphs bool
	// PrefillGraphs lets prefill steps (more than one token) use graphs
	// too; their length is padded to a bucket so that a few graphs cover
	// every prompt length.
	PrefillGraphs bool
	// PrefillBuckets are the lengths prompts are padded to when
	// PrefillGraphs is set (default: powers of two from 16).
	PrefillBuckets []int64
	// Cache configures the LRU.
	Cache CacheOptions
}

// Environment variables read by PolicyFromEnv.
const (
	EnvACLGraph        = "IRTOOL_ACL_GRAPH"            // graph mode, default on
	EnvCacheCapacity   = "IRTOOL_GRAPH_CACHE_CAPACITY" // LRU capacity, default 12
	EnvPrefillUseGraph = "IRTOOL_PREFILL_USE_GRAPH"    // prefill graphs, default off
	EnvGraphWarmup     = "IRTOOL_GRAPH_WARMUP"         // capture on the second identical call, default off
	EnvGraphMatcher    = "IRTOOL_GRAPH_MATCHER"        // properties (default) or fingerprint
)

// DefaultGraphPolicy is graph mode on, prefill eager, capacity 12, the
// ggml-cann's property matcher, no warm-up.
func DefaultGraphPolicy() GraphPolicy {
	return GraphPolicy{Graphs: true, Cache: CacheOptions{Capacity: DefaultGraphCacheCapacity}}
}

// ParseBool parses a boolean the way ggml-cann reads its switches:
// on/1/yes/y/enable/true and off/0/no/n/disable/false, case-insensitive.
func ParseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "on", "1", "yes", "y", "enable", "true":
		return true, nil
	case "off", "0", "no", "n", "disable", "false":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean (on/off, 1/0, yes/no, true/false)", s)
}

// PolicyFromEnv returns DefaultGraphPolicy overridden by the IRTOOL_*
// variables; getenv is os.Getenv when nil. A malformed value is an error
// naming the variable.
func PolicyFromEnv(getenv func(string) string) (GraphPolicy, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	p := DefaultGraphPolicy()
	for _, b := range []struct {
		env string
		dst *bool
	}{{EnvACLGraph, &p.Graphs}, {EnvPrefillUseGraph, &p.PrefillGraphs}, {EnvGraphWarmup, &p.Cache.Warmup}} {
		if v := getenv(b.env); v != "" {
			x, err := ParseBool(v)
			if err != nil {
				return p, fmt.Errorf("device: %s: %w", b.env, err)
			}
			*b.dst = x
		}
	}
	if v := getenv(EnvCacheCapacity); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return p, fmt.Errorf("device: %s=%q: want a positive integer", EnvCacheCapacity, v)
		}
		p.Cache.Capacity = n
	}
	if v := getenv(EnvGraphMatcher); v != "" {
		m, err := ParseMatcher(v)
		if err != nil {
			return p, fmt.Errorf("device: %s: %w", EnvGraphMatcher, err)
		}
		p.Cache.Matcher = m
	}
	return p, nil
}

// UseGraph reports whether a step of nTokens tokens runs through the graph
// cache: never with graph mode off; decode steps (one token) always;
// prefill steps only with PrefillGraphs.
func (p GraphPolicy) UseGraph(nTokens int64) bool {
	if !p.Graphs {
		return false
	}
	return nTokens == 1 || p.PrefillGraphs
}

// PrefillLength returns the length a prefill of n tokens is padded to: the
// smallest bucket holding n that fits in limit tokens, or n itself when
// prefill graphs are off, n is a decode step, or no bucket fits.
func (p GraphPolicy) PrefillLength(n, limit int64) int64 {
	if !p.Graphs || !p.PrefillGraphs || n <= 1 {
		return n
	}
	buckets := p.PrefillBuckets
	if buckets == nil {
		for b := int64(16); b <= limit && b > 0 && b < math.MaxInt64/2; b *= 2 {
			buckets = append(buckets, b)
		}
	}
	best := int64(-1)
	for _, b := range buckets {
		if b >= n && b <= limit && (best < 0 || b < best) {
			best = b
		}
	}
	if best < 0 {
		return n
	}
	return best
}
