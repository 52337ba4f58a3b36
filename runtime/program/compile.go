// Package program runs lowered programs (lower/cann) on a device.Device:
// the whole pipeline from a model to tokens on a simulated (or real)
// Ascend device, with ACL-graph capture, replay and the LRU graph cache.
//
// A Compiler takes a model graph through the compiler once (the pass
// pipeline and the CPU/NPU partition, both on the symbolic graph) and then,
// per symbol binding (one shape bucket: n_tokens, n_kv, ...), specialises,
// plans memory and lowers it to a cann.Program, caching the result. A
// Runner binds programs to a device: it allocates each program region
// once (weights, KV caches and constants are uploaded once and shared by
// every bucket's program; the arena, inputs and outputs are one allocation
// each, sized for the largest program seen), runs each step's upload, segment,
// copy and download steps on its own stream, and sends every capturable NPU
// segment through a device.GraphCache: captured on the first run of its
// properties, replayed with one ExecuteAsync afterwards.
//
// It is the one runtime package that imports the compiler: the compile
// driver (package compiler) runs the passes and the partition once and
// lowers each bucket (compiler.Result.Lower); the device layer
// (runtime/device, runtime/acl) imports none of it.
package program

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/lower/cann"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/partition"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/target"
)

// DefaultStrategy is the planner strategy of a Compiler whose
// compiler.Options.Strategy is empty: a runner compiles one program per
// shape bucket, so planning must be fast.
const DefaultStrategy = planner.StrategyGreedySize

// Compiler lowers one model for any binding, caching the programs. It is
// safe for concurrent use: runners sharing a device may share it.
type Compiler struct {
	model *models.Model
	prof  *target.Profile
	res   *compiler.Result  // the driver's passes and partition
	graph *ir.Graph         // after passes and partition, symbolic
	Part  *partition.Result // the partition of the symbolic graph

	mu       sync.Mutex
	progs    map[string]*cann.Program
	compiles int
	elapsed  time.Duration
}

// maxPrograms bounds the program cache (the cpy KV mode makes one program
// per position).
const maxPrograms = 256

// NewCompiler runs the compile driver's passes and partition on the
// model's graph with opts (target, pass pipeline, registries, prefill
// capture: the driver's defaults, except an empty Strategy, which is
// DefaultStrategy, and an empty KVWrite, which is the model's). Each
// bucket is then one compiler.Result.Lower. A runner refuses requantised
// weights when it loads them.
func NewCompiler(m *models.Model, opts compiler.Options) (*Compiler, error) {
	if opts.Strategy == "" {
		opts.Strategy = DefaultStrategy
	}
	if opts.KVWrite == "" {
		opts.KVWrite = m.Options.KVWrite.String()
	}
	opts.NoMemory, opts.Until = true, compiler.StagePartition
	res, err := compiler.Compile(context.Background(), m.Graph, opts)
	if err != nil {
		return nil, fmt.Errorf("program: %w", err)
	}
	pg := res.Partitioned
	return &Compiler{model: m, prof: res.Profile, res: res, graph: pg,
		Part: res.Partition, progs: map[string]*cann.Program{}}, nil
}

// DeviceMemory is the device memory of the runner's largest step
// (compiler.Result.DeviceMemory with the compiler's Ctx and UBatch).
func (c *Compiler) DeviceMemory() (*compiler.DeviceMemory, error) { return c.res.DeviceMemory() }

// Profile returns the target profile.
func (c *Compiler) Profile() *target.Profile { return c.prof }

// Graph returns the compiled (passed and partitioned) symbolic graph.
func (c *Compiler) Graph() *ir.Graph { return c.graph }

// Bucket restricts b to the symbols the compiled graph uses
// (ir.Bindings.For): the bindings of b's shape bucket. The set_rows graph
// has no kv_head, so every position of a bucket shares one program; a
// symbol the graph uses and b lacks is an error.
func (c *Compiler) Bucket(b ir.Bindings) (ir.Bindings, error) {
	out, err := b.For(c.graph)
	if err != nil {
		return nil, fmt.Errorf("program: %w", err)
	}
	return out, nil
}

// Program returns the program of a binding, compiling it on first use.
func (c *Compiler) Program(b ir.Bindings) (*cann.Program, error) {
	b, err := c.Bucket(b)
	if err != nil {
		return nil, err
	}
	key := b.String()
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.progs[key]; ok {
		return p, nil
	}
	t0 := time.Now()
	p, _, err := c.res.Lower(b)
	if err != nil {
		return nil, fmt.Errorf("program: bucket %s: %w", key, err)
	}
	if len(c.progs) >= maxPrograms {
		clear(c.progs)
	}
	c.progs[key] = p
	c.compiles++
	c.elapsed += time.Since(t0)
	return p, nil
}

// Compiled returns how many programs were compiled and the time spent.
func (c *Compiler) Compiled() (int, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.compiles, c.elapsed
}

// Buckets lists the cached programs' bucket keys, sorted.
func (c *Compiler) Buckets() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.progs))
	for k := range c.progs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
