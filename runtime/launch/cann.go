//go:build cann

package launch

import (
	"errors"
	"fmt"
	"io"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/acl"
	"github.com/irtool/irtool/runtime/program"
)

// This file holds the cann backend, built with -tags cann: the sim
// backend's pipeline, on a real NPU through runtime/acl.

// Cann is a program runner on an Ascend device.
type Cann struct {
	*program.Runner
	dev  *acl.Device
	mode string // QuantMatmul
}

// NewCann opens device o.Cann.Device through CANN and builds the same
// session as the sim backend on it (the graph policy shared with sim).
func NewCann(m *models.Model, f *gguf.File, o Options) (*Cann, error) {
	pol, err := o.Policy()
	if err != nil {
		return nil, err
	}
	cf := o.Cann
	if err := checkCannPool(f, cf); err != nil {
		return nil, err
	}
	// The pool is the compiler's device_memory.pool_bytes for the largest
	// step (ubatch tokens over the context), which the runner loads.
	ub := min(cf.UBatch, m.Options.NCtx)
	comp, err := program.NewCompiler(m, o.CompileOptions(compiler.Options{Target: o.Target, Passes: "none", UBatch: ub,
		PrefillGraph: pol.Graphs && pol.PrefillGraphs}))
	if err != nil {
		return nil, err
	}
	pool := cf.Pool
	dm, err := comp.DeviceMemory()
	if err != nil {
		return nil, fmt.Errorf("--backend cann: %w", err)
	}
	if pool == 0 {
		pool = dm.PoolBytes - dm.ReserveBytes + compiler.ReservedStreams*cf.Workspace
		if cf.QuantMatmul == "ggml" {
			pool += placedBytes(f, cf.QuantMatmul) // the f32 copies of the ggml mode
		}
	}
	dev, err := acl.New(acl.Options{PoolBytes: pool, WorkspaceReserve: cf.Workspace, QuantMatmul: cf.QuantMatmul,
		LlamaBuild: o.Kernels.LlamaBuild, TableBytes: dm.TablesBytes, MaxTokens: ub})
	if err != nil {
		return nil, fmt.Errorf("--backend cann: %w (irtool doctor explains what is missing)", err)
	}
	s, err := o.NewRunner(m, f, dev, program.Options{Policy: pol, DeviceID: cf.Device, Kernels: o.Kernels,
		Compiler: comp, UBatch: ub})
	if err != nil {
		return nil, errors.Join(err, dev.Close())
	}
	return &Cann{Runner: s, dev: dev, mode: cf.QuantMatmul}, nil
}

// cannPool is the device memory pre-allocated for a rank of run --tp/--pp:
// Pool, or sized from the model file.
func cannPool(f *gguf.File, cf CannOptions) int64 {
	pool := cf.Pool
	if pool == 0 {
		pool = SimMemory(f) + 2*cf.Workspace + (16 << 20) + placedBytes(f, cf.QuantMatmul)
	}
	return pool
}

// checkCannPool refuses, before the device is touched, a Pool (run's
// --acl-pool) too small for the model's weights and the copies made of
// them at load, which no run could fit, naming the flag to raise.
func checkCannPool(f *gguf.File, cf CannOptions) error {
	if cf.Pool == 0 {
		return nil
	}
	need := placedBytes(f, cf.QuantMatmul)
	for _, t := range f.Tensors {
		need += int64(t.Size)
	}
	if cf.Pool < need {
		return fmt.Errorf("--acl-pool %d: the model's weights need %d B of device memory (more with the KV cache and the compute arenas); raise --acl-pool, or give 0 for the plan's pool (irtool compile --json: device_memory.pool_bytes)", cf.Pool, need)
	}
	return nil
}

// placedBytes bounds the device bytes of the copies runtime/acl makes of
// the quantised weights at load in QuantMatmul mode mode (acl.PlacedBytes:
// gguf/wqconv's layouts in "wqbmm" mode, f32 copies in "ggml" mode).
func placedBytes(f *gguf.File, mode string) int64 {
	var n int64
	for _, t := range f.Tensors {
		n += acl.PlacedBytes(ir.DType(t.Type), t.Ne[0], t.Ne[1]*t.Ne[2]*t.Ne[3], mode)
	}
	return n
}

// Close ends the session, then releases the device.
func (b *Cann) Close() error {
	return errors.Join(b.Runner.Close(), b.dev.Close())
}

// Stats returns the runner's and the device's statistics, with the aclnn
// calls by operator.
func (b *Cann) Stats() Stats {
	st := programStats(b.Runner, b.dev.Stats())
	st.QuantMatmul = b.mode
	st.Device.CallsByName = b.dev.Counters().CallsByName
	return st
}

// WriteSummary prints one line per phase to w.
func (b *Cann) WriteSummary(w io.Writer) {
	WritePhases(w, "cann", b.Stats())
}
