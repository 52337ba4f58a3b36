package cann

import (
	"fmt"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/partition"
)

// hostRuntime executes Programs on the host, kernel by kernel: every region
// is a byte slice, every kernel (NPU or CPU) runs through the shared kernel
// table, and copy steps run the transfer kernel. It keeps the KV regions
// across programs, as a device keeps its caches across steps, so a session
// can switch programs (prefill, then decode) like a real runtime.
type hostRuntime struct {
	w       eval.WeightSource
	regions map[string][]byte
	loaded  *Program
	// launched counts kernels run, by device.
	launched map[string]int
}

func newHostRuntime(w eval.WeightSource) *hostRuntime {
	return &hostRuntime{w: w, regions: map[string][]byte{}, launched: map[string]int{}}
}

// load allocates the program's regions and writes weights and constants.
// State regions survive when a program of the same layout is loaded.
func (h *hostRuntime) load(p *Program) error {
	if h.loaded == p {
		return nil
	}
	keep := map[string]bool{RegionKV: true, RegionHostKV: true}
	for _, r := range p.Regions {
		if old, ok := h.regions[r.Name]; ok && keep[r.Name] {
			if int64(len(old)) != r.Bytes {
				return fmt.Errorf("region %s changed size %d -> %d between programs", r.Name, len(old), r.Bytes)
			}
			continue
		}
		h.regions[r.Name] = make([]byte, r.Bytes)
	}
	for _, w := range p.Weights {
		data, err := h.w.TensorData(w.Name)
		if err != nil {
			return err
		}
		if w.DType != w.SourceDType {
			if data, err = partition.Convert(data, w.SourceDType, w.DType); err != nil {
				return fmt.Errorf("weight %q: %w", w.Name, err)
			}
		}
		if int64(len(data)) < w.Bytes {
			return fmt.Errorf("weight %q: %d bytes, want %d", w.Name, len(data), w.Bytes)
		}
		if err := h.write(w.Addr, data[:w.Bytes]); err != nil {
			return fmt.Errorf("weight %q: %w", w.Name, err)
		}
	}
	for _, c := range p.Consts {
		if err := h.write(c.Addr, c.Data); err != nil {
			return fmt.Errorf("const %q: %w", c.Name, err)
		}
	}
	h.loaded = p
	return nil
}

func (h *hostRuntime) write(a Addr, data []byte) error {
	buf, ok := h.regions[a.Region]
	if !ok {
		return fmt.Errorf("no region %q", a.Region)
	}
	if a.Offset < 0 || a.Offset+int64(len(data)) > int64(len(buf)) {
		return fmt.Errorf("%d bytes at %s overflow the %d-byte region", len(data), a, len(buf))
	}
	copy(buf[a.Offset:], data)
	return nil
}

func (h *hostRuntime) tensor(d TensorDesc) (kernels.Tensor, error) {
	buf, ok := h.regions[d.Addr.Region]
	if !ok {
		return kernels.Tensor{}, fmt.Errorf("no region %q", d.Addr.Region)
	}
	if d.Addr.Offset < 0 || d.Addr.Offset+d.Bytes() > int64(len(buf)) {
		return kernels.Tensor{}, fmt.Errorf("tensor of %d bytes at %s overflows the %d-byte region", d.Bytes(), d.Addr, len(buf))
	}
	return kernels.Tensor{Type: gguf.GGMLType(d.DType), Ne: d.Ne, Nb: d.Nb, Data: buf[d.Addr.Offset:]}, nil
}

func descType(d TensorDesc) ir.Type {
	return ir.Type{DType: d.DType, Shape: ir.Sh(d.Ne[0], d.Ne[1], d.Ne[2], d.Ne[3])}
}

func (h *hostRuntime) launch(k *Kernel) error {
	fn, ok := eval.LookupKernel(k.Op)
	if !ok {
		return fmt.Errorf("kernel %s (node %d): no kernel for op %q", k.Name, k.Node, k.Op)
	}
	n := &ir.Node{ID: k.Node, Op: k.Op, Attrs: k.Attrs, Name: k.NodeName, Type: descType(k.Output)}
	args := make([]kernels.Tensor, len(k.Inputs))
	for i, in := range k.Inputs {
		t, err := h.tensor(in)
		if err != nil {
			return fmt.Errorf("kernel %s (node %d) operand %d: %w", k.Name, k.Node, i, err)
		}
		args[i] = t
		n.Args = append(n.Args, &ir.Node{ID: -1, Op: ir.OpInput, Type: descType(in)})
	}
	for _, x := range k.Extra { // gamma and rstd must be addressable too
		if _, err := h.tensor(x); err != nil {
			return fmt.Errorf("kernel %s (node %d) %s: %w", k.Name, k.Node, x.Role, err)
		}
	}
	if k.WorkspaceBytes > 0 {
		if err := h.check(k.Workspace, k.WorkspaceBytes); err != nil {
			return fmt.Errorf("kernel %s (node %d) workspace: %w", k.Name, k.Node, err)
		}
	}
	dst, err := h.tensor(k.Output)
	if err != nil {
		return fmt.Errorf("kernel %s (node %d) output: %w", k.Name, k.Node, err)
	}
	if err := fn(n, dst, args, kernels.Options{}); err != nil {
		return fmt.Errorf("kernel %s (node %d %q): %w", k.Name, k.Node, k.NodeName, err)
	}
	return nil
}

func (h *hostRuntime) check(a Addr, n int64) error {
	buf, ok := h.regions[a.Region]
	if !ok || a.Offset < 0 || a.Offset+n > int64(len(buf)) {
		return fmt.Errorf("%d bytes at %s are outside the region", n, a)
	}
	return nil
}

// run feeds the inputs, performs the steps in order and returns output 0
// as f32 rows.
func (h *hostRuntime) run(p *Program, inputs map[string][]byte) ([]float32, [4]int64, error) {
	if err := h.load(p); err != nil {
		return nil, [4]int64{}, err
	}
	for _, in := range p.Inputs {
		data, ok := inputs[in.Name]
		if !ok {
			return nil, [4]int64{}, fmt.Errorf("input %q not given", in.Name)
		}
		if int64(len(data)) != in.Bytes {
			return nil, [4]int64{}, fmt.Errorf("input %q: %d bytes, want %d", in.Name, len(data), in.Bytes)
		}
		if err := h.write(in.Desc.Addr, data); err != nil {
			return nil, [4]int64{}, err
		}
	}
	for _, st := range p.Steps {
		switch st.Kind {
		case StepSegment:
			s := &p.Segments[st.Segment]
			for i := range s.Kernels {
				if err := h.launch(&s.Kernels[i]); err != nil {
					return nil, [4]int64{}, fmt.Errorf("segment %d: %w", s.ID, err)
				}
				h.launched[s.Device]++
			}
		case StepCopy:
			if err := h.launch(st.Copy); err != nil {
				return nil, [4]int64{}, fmt.Errorf("copy: %w", err)
			}
			h.launched["copy"]++
		case StepUpload, StepDownload:
			// Host and device memory are the same bytes here.
		default:
			return nil, [4]int64{}, fmt.Errorf("unknown step %q", st.Kind)
		}
	}
	t, err := h.tensor(p.Outputs[0].Desc)
	if err != nil {
		return nil, [4]int64{}, err
	}
	v, err := kernels.ToF32(t)
	return v, t.Ne, err
}
