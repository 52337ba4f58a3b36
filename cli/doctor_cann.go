//go:build cann

package cli

import "github.com/irtool/irtool/runtime/acl"

// This file holds the CANN side of the CLI, built with -tags cann: the
// probe of "irtool doctor" (run --backend cann is runtime/launch's Cann).

// cannUnavailable is nil: this binary has the CANN binding (whether a
// device is present is found when the backend starts).
func cannUnavailable() error { return nil }

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
