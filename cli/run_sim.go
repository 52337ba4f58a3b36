package cli

import (
	"flag"
	"fmt"
	"io"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
	"github.com/irtool/irtool/runtime/session"
	"github.com/irtool/irtool/target"
)

// This file holds "irtool run --backend sim": the model goes through the
// whole pipeline (passes, partition, memory plan, CANN lowering) and runs
// on the simulated Ascend device, with ACL-graph capture and the LRU graph
// cache (runtime/program, docs/RUNTIME.md).

// generator is what run needs from a backend's session.
type generator interface {
	Generate(prompt []int32, n int, keepLogits bool, onToken func(int32)) (*session.GenerateResult, error)
}

// simFlags are run's flags for the sim backend.
type simFlags struct {
	Graph        string
	PrefillGraph bool
	GraphCache   int
	Target       string
	TargetFile   string
	rules        *target.Rules // --target-file's rule set (nil: the defaults)
	// Kernels are the numeric options of the device's and the host's
	// kernels (run's --llama-build), not a flag of their own.
	Kernels kernels.Options
	// reg holds the registries of the invocation (its kernels run on
	// every backend), not a flag.
	reg *irtool.Context
}

// simOnly lists the flags that only the sim backend reads.
var simOnly = []string{"graph", "prefill-graph", "graph-cache", "target", "target-file"}

func (f *simFlags) declare(fs *flag.FlagSet) {
	fs.StringVar(&f.Graph, "graph", "", "sim, cann: ACL graph `MODE`: on (capture and replay) or off (default: $"+device.EnvACLGraph+", else on)")
	fs.BoolVar(&f.PrefillGraph, "prefill-graph", false, "sim, cann: capture prefill too, padding prompts to a bucket length (or $"+device.EnvPrefillUseGraph+")")
	fs.IntVar(&f.GraphCache, "graph-cache", 0, "sim, cann: capacity of the graph LRU cache (default: $"+device.EnvCacheCapacity+", else 12)")
	fs.StringVar(&f.Target, "target", compiler.DefaultTarget, "sim: the target profile `NAME`, as for compile (irtool targets prints them)")
	fs.StringVar(&f.TargetFile, "target-file", "", "sim: the target profile in `FILE` (the format irtool targets --json prints), under the file's own name; overrides --target")
}

// policy is the environment's graph policy with the flags set on the
// command line on top.
func (f *simFlags) policy(fs *flag.FlagSet) (device.GraphPolicy, error) {
	p, err := device.PolicyFromEnv(nil)
	if err != nil {
		return p, err
	}
	var ferr error
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "graph":
			on, err := device.ParseBool(f.Graph)
			if err != nil {
				ferr = fmt.Errorf("--graph: %w", err)
			}
			p.Graphs = on
		case "prefill-graph":
			p.PrefillGraphs = f.PrefillGraph
		case "graph-cache":
			if err := flagRange("--graph-cache", int64(f.GraphCache), 1, maxGraphCache, ""); err != nil {
				ferr = err
			}
			p.Cache.Capacity = f.GraphCache
		}
	})
	return p, ferr
}

// checkSimFlags rejects sim-only flags on another backend.
func checkSimFlags(fs *flag.FlagSet, backend string) error {
	if backend == "sim" || backend == "cann" { // cann runs the same pipeline
		return nil
	}
	var err error
	fs.Visit(func(fl *flag.Flag) {
		for _, name := range simOnly {
			if fl.Name == name && err == nil {
				err = fmt.Errorf("--%s applies to --backend sim only", name)
			}
		}
	})
	return err
}

// simBackend is a program runner on a simulated device.
type simBackend struct {
	*program.Runner
	dev *device.SimDevice
}

// newSimBackend builds the sim session for a model whose graph run has
// already optimised with the pass pipeline.
func newSimBackend(m *models.Model, f *gguf.File, flags *simFlags, fs *flag.FlagSet) (*simBackend, error) {
	pol, err := flags.policy(fs)
	if err != nil {
		return nil, err
	}
	dev, err := flags.reg.NewSimDevice(device.SimOptions{MemoryBytes: simMemory(f), Kernels: flags.Kernels})
	if err != nil {
		return nil, err
	}
	// run has applied the pipeline already: only the required passes run
	// again inside the compiler.
	s, err := flags.reg.NewRunner(m, f, dev, program.Options{Policy: pol, Kernels: flags.Kernels,
		Compile: compiler.Options{Target: flags.Target, Passes: "none", Rules: flags.rules}})
	if err != nil {
		return nil, err
	}
	return &simBackend{Runner: s, dev: dev}, nil
}

// simMemory sizes the simulated device: the model file's bytes (weights)
// plus headroom for KV caches, the arena and the tables, at least 256 MiB.
func simMemory(f *gguf.File) int64 {
	var weights int64
	for _, t := range f.Tensors {
		weights += int64(t.Size)
	}
	return max(device.DefaultSimMemory, 2*weights+(64<<20))
}

// simStatsJSON is the "stats" object of run --json with the sim backend.
type simStatsJSON struct {
	Mode     string             `json:"mode"` // "graph" or "eager"
	Target   string             `json:"target"`
	Prefill  program.PhaseStats `json:"prefill"`
	Decode   program.PhaseStats `json:"decode"`
	Programs int                `json:"programs"`
	// WeightConvertMS is the host time of the conversion of quantised
	// weights at load (program.Stats; 0 on the sim device, which reads
	// ggml's blocks).
	WeightConvertMS float64           `json:"weight_convert_ms"`
	Cache           device.CacheStats `json:"cache"`
	Device          deviceStatsJSON   `json:"device"`
	Pool            poolStatsJSON     `json:"pool"`
	// QuantMatmul is the cann backend's --acl-quant-matmul mode, which
	// the weights were converted for ("" on the sim device).
	QuantMatmul string `json:"-"`
}

// deviceStatsJSON is stats.device: the device's counters and, on the
// cann backend, the aclnn calls by operator (acl.Counters.CallsByName).
type deviceStatsJSON struct {
	device.DeviceStats
	CallsByName map[string]int64 `json:"calls_by_name,omitempty"`
}

// poolStatsJSON is stats.pool: the device pool and its allocations after
// the runner's load (program.Stats.AllocsAfterLoad).
type poolStatsJSON struct {
	device.PoolStats
	AllocsAfterLoad int64 `json:"allocs_after_load"`
}

func (b *simBackend) stats() simStatsJSON { return programStats(b.Runner, b.dev.Stats()) }

// summary prints one line per phase to w.
func (b *simBackend) summary(w io.Writer) { printPhases(w, "sim", b.stats()) }

// programStats gathers the "stats" object of a program runner on a device
// (the sim and cann backends alike).
func programStats(s *program.Runner, ds device.DeviceStats) simStatsJSON {
	st := s.Stats()
	mode := "eager"
	if st.Graphs {
		mode = "graph"
	}
	ds.Pools = nil
	return simStatsJSON{Mode: mode, Target: s.Compiler().Profile().Name, Prefill: st.Prefill, Decode: st.Decode,
		Programs: st.Programs, WeightConvertMS: st.WeightConvertMS, Cache: s.Cache().Stats(), Device: deviceStatsJSON{DeviceStats: ds},
		Pool: poolStatsJSON{PoolStats: st.Pool, AllocsAfterLoad: st.AllocsAfterLoad}}
}

// convertedFor says what the weights were converted for at load in
// --acl-quant-matmul mode (runtime/acl's Options.QuantMatmul).
func convertedFor(mode string) string {
	if mode == "ggml" {
		return "to the integer and f32 layouts of the ggml mode's matmuls (aclnnBatchMatMul over ggml's blocks)"
	}
	return "for aclnnWeightQuantBatchMatmulV2"
}

// printPhases prints one stderr line per phase that ran, after the
// conversion of the weights at load when there was one.
func printPhases(w io.Writer, backend string, st simStatsJSON) {
	if st.WeightConvertMS > 0 {
		fmt.Fprintf(w, "irtool run: %s load: quantised weights converted %s in %.1f ms (host)\n", backend, convertedFor(st.QuantMatmul), st.WeightConvertMS)
	}
	for _, ph := range []struct {
		name string
		p    program.PhaseStats
	}{{"prefill", st.Prefill}, {"decode", st.Decode}} {
		if ph.p.Steps == 0 {
			continue
		}
		fmt.Fprintf(w, "irtool run: %s %s (%s): %d steps, %d captures, %d replays, %d hits / %d misses (%.1f%%), %d evictions, %d kernel launches, host dispatch %.0f ns/token\n",
			backend, ph.name, st.Mode, ph.p.Steps, ph.p.Captures, ph.p.Replays, ph.p.CacheHits, ph.p.CacheMisses, 100*ph.p.HitRate,
			ph.p.Evictions, ph.p.KernelLaunches, ph.p.HostDispatchNSPerToken)
	}
}
