// Package launch starts the backends of "irtool run": a program runner on
// the simulated Ascend device (Sim), on a real one through CANN (Cann,
// -tags cann), and the ranks of a tensor- or pipeline-parallel split
// (Ranks), each rank a CPU session, a simulated device or an NPU. What a
// backend needs from its caller (the graph policy, the registries'
// constructors, the device flags) comes in Options as values, so a
// program can start the same backends irtool's run does.
package launch

import (
	"fmt"
	"io"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
	"github.com/irtool/irtool/target"
)

// Options configure a backend.
type Options struct {
	// Backend is "cpu", "sim" or "cann" (Ranks only; Sim and Cann are
	// their own).
	Backend string
	// Policy returns the ACL graph policy; it is called where a device
	// runner is built, so its error comes in the order of the run's
	// other checks.
	Policy func() (device.GraphPolicy, error)
	// Target is the target profile's name; Rules the rule set of a
	// target file (nil: the defaults). Rules applies to Sim only.
	Target string
	Rules  *target.Rules
	// Kernels are the numeric options of the device's and the host's
	// kernels; KernelSet is the registry the ranks' collective kernels
	// extend.
	Kernels   kernels.Options
	KernelSet *eval.KernelSet
	// NewSimDevice, NewRunner and CompileOptions are the registries'
	// constructors (irtool.Context's methods of the same names).
	NewSimDevice   func(device.SimOptions) (*device.SimDevice, error)
	NewRunner      func(*models.Model, eval.WeightSource, device.Device, program.Options) (*program.Runner, error)
	CompileOptions func(compiler.Options) compiler.Options
	// Threads and Check are the CPU ranks' session options (threads, and
	// the reference kernels with finite checks).
	Threads int
	Check   bool
	// Cann configures the NPU (Cann and the cann ranks).
	Cann CannOptions
}

// CannOptions configure the NPU backends.
type CannOptions struct {
	// Device is the first NPU's id; DeviceSet says it was given (with
	// RootInfo, a rank runs on device Rank otherwise).
	Device    int
	DeviceSet bool
	// Pool is the device memory pre-allocated (0: sized from the plan or
	// the model file), Workspace the aclnn workspace reserve per stream.
	Pool      int64
	Workspace int64
	// QuantMatmul is acl.Options.QuantMatmul ("wqbmm" or "ggml").
	QuantMatmul string
	// UBatch is the largest step's token count (capped at the context).
	UBatch int64
	// Rank and RootInfo run one rank per process (NewTPProc): this
	// process runs rank Rank; the ranks meet through the HCCL root info
	// in file RootInfo (written by rank 0). Agree lists the settings
	// every rank must share, checked once joined; Log receives the join's
	// progress.
	Rank     int
	RootInfo string
	Agree    []Setting
	Log      io.Writer
}

// Setting is one named setting the ranks of separate processes must
// agree on: a flag's name (one letter: a short flag; "model": the model
// file) and its value.
type Setting struct {
	Name, Value string
}

// Sim is a program runner on a simulated device.
type Sim struct {
	*program.Runner
	dev *device.SimDevice
}

// NewSim builds the sim session for a model whose graph the caller has
// already optimised with the pass pipeline.
func NewSim(m *models.Model, f *gguf.File, o Options) (*Sim, error) {
	pol, err := o.Policy()
	if err != nil {
		return nil, err
	}
	dev, err := o.NewSimDevice(device.SimOptions{MemoryBytes: SimMemory(f), Kernels: o.Kernels})
	if err != nil {
		return nil, err
	}
	// The caller has applied the pipeline already: only the required
	// passes run again inside the compiler.
	s, err := o.NewRunner(m, f, dev, program.Options{Policy: pol, Kernels: o.Kernels,
		Compile: compiler.Options{Target: o.Target, Passes: "none", Rules: o.Rules}})
	if err != nil {
		return nil, err
	}
	return &Sim{Runner: s, dev: dev}, nil
}

// SimMemory sizes the simulated device: the model file's bytes (weights)
// plus headroom for KV caches, the arena and the tables, at least 256 MiB.
func SimMemory(f *gguf.File) int64 {
	var weights int64
	for _, t := range f.Tensors {
		weights += int64(t.Size)
	}
	return max(device.DefaultSimMemory, 2*weights+(64<<20))
}

// Stats is the "stats" object of run --json with the sim and cann
// backends.
type Stats struct {
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
	Device          DeviceStats       `json:"device"`
	Pool            PoolStats         `json:"pool"`
	// QuantMatmul is the cann backend's --acl-quant-matmul mode, which
	// the weights were converted for ("" on the sim device).
	QuantMatmul string `json:"-"`
}

// DeviceStats is stats.device: the device's counters and, on the cann
// backend, the aclnn calls by operator (acl.Counters.CallsByName).
type DeviceStats struct {
	device.DeviceStats
	CallsByName map[string]int64 `json:"calls_by_name,omitempty"`
}

// PoolStats is stats.pool: the device pool and its allocations after the
// runner's load (program.Stats.AllocsAfterLoad).
type PoolStats struct {
	device.PoolStats
	AllocsAfterLoad int64 `json:"allocs_after_load"`
}

// Stats returns the runner's and the device's statistics.
func (b *Sim) Stats() Stats { return programStats(b.Runner, b.dev.Stats()) }

// WriteSummary prints one line per phase to w.
func (b *Sim) WriteSummary(w io.Writer) { WritePhases(w, "sim", b.Stats()) }

// programStats gathers the statistics of a program runner on a device
// (the sim and cann backends alike).
func programStats(s *program.Runner, ds device.DeviceStats) Stats {
	st := s.Stats()
	mode := "eager"
	if st.Graphs {
		mode = "graph"
	}
	ds.Pools = nil
	return Stats{Mode: mode, Target: s.Compiler().Profile().Name, Prefill: st.Prefill, Decode: st.Decode,
		Programs: st.Programs, WeightConvertMS: st.WeightConvertMS, Cache: s.Cache().Stats(), Device: DeviceStats{DeviceStats: ds},
		Pool: PoolStats{PoolStats: st.Pool, AllocsAfterLoad: st.AllocsAfterLoad}}
}

// convertedFor says what the weights were converted for at load in
// --acl-quant-matmul mode (runtime/acl's Options.QuantMatmul).
func convertedFor(mode string) string {
	if mode == "ggml" {
		return "to the integer and f32 layouts of the ggml mode's matmuls (aclnnBatchMatMul over ggml's blocks)"
	}
	return "for aclnnWeightQuantBatchMatmulV2"
}

// WritePhases prints one "irtool run:" line per phase that ran, after the
// conversion of the weights at load when there was one; backend names the
// device (and rank) in each line.
func WritePhases(w io.Writer, backend string, st Stats) {
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
