package cann

import (
	"fmt"

	"github.com/irtool/irtool/target"
)

// Prediction is the cost model's estimate of one run of a Program.
type Prediction struct {
	// EagerUS launches every aclnn call from the host; GraphUS replays
	// every capturable segment with one launch (others stay eager).
	EagerUS float64 `json:"eager_us"`
	GraphUS float64 `json:"graph_us"`
	// DeviceUS is the NPU busy time; HostLaunchUS the eager launch time
	// of its kernels; CopyUS the uploads, copies and downloads; CPUUS the
	// CPU kernels.
	DeviceUS     float64 `json:"device_us"`
	HostLaunchUS float64 `json:"host_launch_us"`
	CopyUS       float64 `json:"copy_us"`
	CPUUS        float64 `json:"cpu_us"`
	// Launches counts eager aclnn calls; GraphLaunches the calls left
	// (replays plus eager segments) in graph mode.
	Launches      int `json:"launches"`
	GraphLaunches int `json:"graph_launches"`
}

// Predict runs the cost model over the program's steps. The host issues
// aclnn calls asynchronously (each costs Overheads.LaunchUS of host time;
// the device starts a kernel when both the launch and the previous kernel
// are done), a captured segment costs one GraphLaunchUS, a copy waits for
// the device and the host both, and CPU kernels run on the host.
func Predict(p *Program, prof *target.Profile) (Prediction, error) {
	var pr Prediction
	if p == nil || prof == nil {
		return pr, fmt.Errorf("cann: predict: nil program or profile")
	}
	for _, s := range p.Segments {
		for _, k := range s.Kernels {
			if s.Device == string(target.NPU) {
				pr.DeviceUS += k.DeviceUS
				pr.HostLaunchUS += k.LaunchUS
				pr.Launches += len(k.Calls)
			} else {
				pr.CPUUS += k.DeviceUS
			}
		}
	}
	var err error
	if pr.EagerUS, _, err = simulate(p, prof, false); err != nil {
		return pr, err
	}
	if pr.GraphUS, pr.GraphLaunches, err = simulate(p, prof, true); err != nil {
		return pr, err
	}
	for _, st := range p.Steps {
		switch st.Kind {
		case StepUpload:
			pr.CopyUS += prof.CopyUS(float64(ioBytes(p.Inputs, st.Input)))
		case StepDownload:
			pr.CopyUS += prof.CopyUS(float64(p.Outputs[st.Output].Bytes))
		case StepCopy:
			pr.CopyUS += st.Copy.DeviceUS
		}
	}
	return pr, nil
}

func ioBytes(ios []IO, name string) int64 {
	for _, io := range ios {
		if io.Name == name && io.Desc.Addr.Region == RegionInputs {
			return io.Bytes
		}
	}
	return 0
}

// simulate returns the modelled wall time of one run and the number of
// host launches it makes.
func simulate(p *Program, prof *target.Profile, graph bool) (float64, int, error) {
	o := prof.Overheads
	host, dev := 0.0, 0.0 // when the host and the NPU are next free
	launches := 0
	sync := func(cost float64) {
		t := max(host, dev) + cost
		host, dev = t, t
	}
	for _, st := range p.Steps {
		switch st.Kind {
		case StepUpload:
			sync(prof.CopyUS(float64(ioBytes(p.Inputs, st.Input))))
		case StepDownload:
			if st.Output < 0 || st.Output >= len(p.Outputs) {
				return 0, 0, fmt.Errorf("cann: predict: download of output %d of %d", st.Output, len(p.Outputs))
			}
			sync(prof.CopyUS(float64(p.Outputs[st.Output].Bytes)))
		case StepCopy:
			sync(st.Copy.DeviceUS)
		case StepSegment:
			if st.Segment < 0 || st.Segment >= len(p.Segments) {
				return 0, 0, fmt.Errorf("cann: predict: step runs segment %d of %d", st.Segment, len(p.Segments))
			}
			s := p.Segments[st.Segment]
			switch {
			case s.Device != string(target.NPU):
				// The host runs CPU kernels after the NPU work it depends on,
				// which a copy step has already waited for.
				for _, k := range s.Kernels {
					host += k.DeviceUS
				}
			case graph && s.Capturable:
				host += o.GraphLaunchUS
				launches++
				start := max(host, dev)
				for _, k := range s.Kernels {
					start += k.DeviceUS
				}
				dev = start
			default:
				for _, k := range s.Kernels {
					host += k.LaunchUS
					launches += len(k.Calls)
					dev = max(host, dev) + k.DeviceUS
				}
			}
		}
	}
	return max(host, dev), launches, nil
}
