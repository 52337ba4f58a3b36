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

// CompileOptions configure a Compiler.
type CompileOptions struct {
	// Target names the target profile (default "ascend910b").
	Target string
	// Passes is the pass pipeline as passes.Parse reads it ("" means
	// "default", "none" the required passes only).
	Passes string
	// Strategy is the memory planning strategy of every binding (default
	// "greedy-size": a runner compiles one program per shape bucket, so
	// planning must be fast).
	Strategy string
	// PrefillGraph lowers prefill segments as capturable (by default
	// prefill runs eagerly, as upstream).
	PrefillGraph bool
	// Driver, when set, gives the compile driver's options beyond the
	// ones above (registries, merge-qkv; a runner refuses requantised
	// weights when it loads them); its Target,
	// Passes and Strategy are those above.
	Driver compiler.Options
}

// DefaultStrategy is the planner strategy of CompileOptions.
const DefaultStrategy = planner.StrategyGreedySize

// Compiler lowers one model for any binding, caching the programs. It is
// safe for concurrent use: runners sharing a device may share it.
type Compiler struct {
	model   *models.Model
	prof    *target.Profile
	opts    CompileOptions
	res     *compiler.Result // the driver's passes and partition
	graph   *ir.Graph        // after passes and partition, symbolic
	symbols []string
	Part    *partition.Result // the partition of the symbolic graph

	mu       sync.Mutex
	progs    map[string]*cann.Program
	compiles int
	elapsed  time.Duration
}

// maxPrograms bounds the program cache (the cpy KV mode makes one program
// per position).
const maxPrograms = 256

// NewCompiler runs the pass pipeline and the partition on the model's
// graph.
func NewCompiler(m *models.Model, opts CompileOptions) (*Compiler, error) {
	if opts.Target == "" {
		opts.Target = "ascend910b"
	}
	if opts.Strategy == "" {
		opts.Strategy = DefaultStrategy
	}
	d := opts.Driver
	d.Target, d.Passes, d.Strategy = opts.Target, opts.Passes, opts.Strategy
	d.NoMemory, d.Until = true, compiler.StagePartition
	if d.Budget == 0 {
		d.Budget = planner.DefaultBudget // each bucket's plan, as planner.PlanMemory's default
	}
	if d.KVWrite == "" {
		d.KVWrite = m.Options.KVWrite.String()
	}
	res, err := compiler.Compile(context.Background(), m.Graph, d)
	if err != nil {
		return nil, fmt.Errorf("program: %w", err)
	}
	pg := res.Partitioned
	return &Compiler{model: m, prof: res.Profile, opts: opts, res: res, graph: pg, symbols: pg.Symbols(),
		Part: res.Partition, progs: map[string]*cann.Program{}}, nil
}

// Profile returns the target profile.
func (c *Compiler) Profile() *target.Profile { return c.prof }

// Graph returns the compiled (passed and partitioned) symbolic graph.
func (c *Compiler) Graph() *ir.Graph { return c.graph }

// Restrict keeps the bindings of the symbols the compiled graph uses: the
// set_rows graph has no kv_head, so every position of a bucket shares one
// program.
func (c *Compiler) Restrict(b ir.Bindings) ir.Bindings {
	out := ir.Bindings{}
	for _, s := range c.symbols {
		if v, ok := b[s]; ok {
			out[s] = v
		}
	}
	return out
}

// Program returns the program of a binding, compiling it on first use.
func (c *Compiler) Program(b ir.Bindings) (*cann.Program, error) {
	b = c.Restrict(b)
	key := b.String()
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.progs[key]; ok {
		return p, nil
	}
	t0 := time.Now()
	p, _, err := c.res.Lower(b, compiler.LowerOptions{Strategy: c.opts.Strategy, PrefillGraph: c.opts.PrefillGraph})
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
