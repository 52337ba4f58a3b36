//go:build cann

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/gguf/wqconv"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/acl"
	"github.com/irtool/irtool/runtime/program"
)

// This file holds the CANN side of the CLI, built with -tags cann:
// "irtool run --backend cann" (the sim backend's pipeline, on a real NPU
// through runtime/acl) and the probe of "irtool doctor".

// cannBackend is a program runner on an Ascend device.
type cannBackend struct {
	*program.Runner
	dev *acl.Device
}

// newCannBackend opens device cf.Device through CANN and builds the same
// session as the sim backend on it (graph flags shared with sim).
// cannUnavailable is nil: this binary has the CANN binding (whether a
// device is present is found when the backend starts).
func cannUnavailable() error { return nil }

func newCannBackend(m *models.Model, f *gguf.File, sim *simFlags, cf *cannFlags, fs *flag.FlagSet) (*cannBackend, error) {
	pol, err := sim.policy(fs)
	if err != nil {
		return nil, err
	}
	dev, err := acl.New(acl.Options{PoolBytes: cannPool(f, cf), WorkspaceReserve: cf.Workspace, QuantMatmul: cf.QuantMatmul})
	if err != nil {
		return nil, fmt.Errorf("--backend cann: %w (irtool doctor explains what is missing)", err)
	}
	s, err := program.NewRunner(m, f, dev, program.Options{Policy: pol, DeviceID: cf.Device, Kernels: sim.Kernels,
		Compile: program.CompileOptions{Target: sim.Target, Passes: "none"}})
	if err != nil {
		return nil, errors.Join(err, dev.Close())
	}
	return &cannBackend{Runner: s, dev: dev}, nil
}

// cannPool is the device memory pre-allocated for the model: --acl-pool,
// or sized from the model file.
func cannPool(f *gguf.File, cf *cannFlags) int64 {
	pool := cf.Pool
	if pool == 0 {
		pool = simMemory(f) + 2*cf.Workspace + (16 << 20) + convertedBytes(f)
		if cf.QuantMatmul == acl.QuantMatmulGGML {
			// f32 copies of the q4_0/q8_0 weights: at most 4/0.5625 bytes per byte.
			pool += 8 * simMemory(f)
		}
	}
	return pool
}

// convertedBytes bounds the device bytes of the copies runtime/acl
// converts quantised weights to at load (gguf/wqconv's layouts, an int4
// layout counted as the int8 copy get_rows reads, plus the int4 one).
func convertedBytes(f *gguf.File) int64 {
	var n int64
	for _, t := range f.Tensors {
		l, err := wqconv.LayoutOf(t.Type)
		if err != nil {
			continue
		}
		rows := int(t.Ne[1] * t.Ne[2] * t.Ne[3])
		n += l.DeviceBytes(rows, int(t.Ne[0]))
		if l.Dtype == wqconv.Int4 {
			l.Dtype = wqconv.Int8
			n += l.DeviceBytes(rows, int(t.Ne[0]))
		}
	}
	return n
}

// Close ends the session, then releases the device.
func (b *cannBackend) Close() error {
	return errors.Join(b.Runner.Close(), b.dev.Close())
}

func (b *cannBackend) stats() any { return programStats(b.Runner, b.dev.Stats()) }

// summary prints one line per phase to w.
func (b *cannBackend) summary(w io.Writer) {
	printPhases(w, "cann", programStats(b.Runner, b.dev.Stats()))
}

// probeCANN loads CANN and inspects one device for doctor.
func probeCANN(device int) doctorReport {
	rep := doctorReport{CANNSupport: true, Device: device}
	info, err := acl.Probe(nil, device)
	rep.Libraries, rep.Devices, rep.SoC = info.Libraries, info.Devices, info.SoC
	rep.FreeBytes, rep.Total = info.FreeBytes, info.TotalBytes
	rep.CaptureAPI, rep.GraphCapture, rep.CaptureError, rep.Missing = info.CaptureAPI, info.Capture, info.CaptureError, info.Missing
	rep.Found = acl.Loaded() != nil
	rep.Emulated = info.Emulated
	if err != nil {
		rep.Error = err.Error()
	}
	return rep
}
