package cli

import (
	"flag"
	"fmt"
	"io"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/launch"
	"github.com/irtool/irtool/target"
)

// This file holds the flags of "irtool run --backend sim" (and cann's,
// which runs the same pipeline) and the options they give the backends of
// runtime/launch: the model goes through the whole pipeline (passes,
// partition, memory plan, CANN lowering) and runs on the simulated Ascend
// device, with ACL-graph capture and the LRU graph cache
// (runtime/program, docs/RUNTIME.md).

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

// launchOptions are the options of run's backend (runtime/launch): the
// flags, the graph policy read from them and the registries'
// constructors; stderr receives a joining rank's progress.
func (f *runFlags) launchOptions(stderr io.Writer) launch.Options {
	reg, cf := f.sim.reg, f.cann
	o := launch.Options{Backend: *f.backend, Target: f.sim.Target, Rules: f.sim.rules, Kernels: f.sim.Kernels,
		KernelSet: reg.Kernels, NewSimDevice: reg.NewSimDevice, NewRunner: reg.NewRunner, CompileOptions: reg.CompileOptions,
		Threads: *f.threads, Check: *f.check,
		Cann: launch.CannOptions{Device: cf.Device, Pool: cf.Pool, Workspace: cf.Workspace, QuantMatmul: cf.QuantMatmul,
			UBatch: defaultUBatch, Rank: f.tp.Rank, RootInfo: f.tp.RootInfo, Log: stderr}}
	o.Policy = func() (device.GraphPolicy, error) { return f.sim.policy(f.fs) }
	f.fs.Visit(func(fl *flag.Flag) { o.Cann.DeviceSet = o.Cann.DeviceSet || fl.Name == "device" })
	// The flags that shape the run, which the ranks of separate processes
	// (--root-info) must share: all but --rank, --device, --json,
	// --logits, --root-info and the CPU's --threads and --check-numerics.
	for _, name := range []string{"ctx", "n", "p", "tokens", "ubatch", "kv-type", "kv-write", "passes", "tp", "tp-exact",
		"graph", "prefill-graph", "graph-cache", "target", "llama-build", "acl-quant-matmul", "acl-workspace", "acl-pool"} {
		st := launch.Setting{Name: name}
		if fl := f.fs.Lookup(name); fl != nil {
			st.Value = fl.Value.String()
		}
		o.Cann.Agree = append(o.Cann.Agree, st)
	}
	return o
}
