package program

import (
	"bytes"
	"fmt"
	"time"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/lower/cann"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/target"
)

// Loading a Runner's programs: its regions allocated and filled at load
// (weights, placed on a device that keeps its own layout of them; zeroed
// states; constants), programs resolved against them.

// region is one allocation of a program region: device memory for NPU
// regions, host bytes for host ones.
type region struct {
	name  string
	npu   bool
	bytes int64
	ptr   device.Ptr
	host  []byte
}

// shared regions hold the same data for every bucket's program and are
// filled once; the others are rewritten by every step.
var sharedRegions = map[string]bool{
	cann.RegionWeights: true, cann.RegionKV: true, cann.RegionConsts: true,
	cann.RegionHostWeights: true, cann.RegionHostKV: true, cann.RegionHostConsts: true,
}

// loaded is a program resolved against the runner's regions.
type loaded struct {
	prog *cann.Program
	gen  int // region generation the addresses were resolved with
	segs []loadedSeg
}

type loadedSeg struct {
	seg      *cann.Segment
	npu      bool
	launches []device.KernelLaunch
	props    *device.GraphProps // capturable NPU segments
	host     []hostKernel       // CPU segments
}

type hostKernel struct {
	name string
	node *ir.Node
	fn   eval.Kernel
	dst  kernels.Tensor
	args []kernels.Tensor
}

// maxLoaded bounds the loaded-program cache (one per position in cpy mode).
const maxLoaded = 256

// load returns the program of a binding bound to the runner's regions.
func (s *Runner) load(b ir.Bindings) (*loaded, error) {
	p, err := s.comp.Program(b)
	if err != nil {
		return nil, err
	}
	key := p.Bucket
	lp := s.progs[key]
	if lp == nil {
		if len(s.progs) >= maxLoaded {
			clear(s.progs)
		}
		lp = &loaded{prog: p, gen: -1}
		s.progs[key] = lp
	}
	if err := s.ensureRegions(p); err != nil {
		return nil, err
	}
	if lp.gen != s.gen {
		if err := s.resolve(lp); err != nil {
			return nil, err
		}
		lp.gen = s.gen
	}
	return lp, nil
}

// ensureRegions allocates what p needs: shared regions once (checking that
// p lays them out as the first program did), the others grown to p's size.
// Growing a region moves it, so every loaded program is resolved again;
// graphs captured at the old addresses stop matching and age out of the
// cache.
func (s *Runner) ensureRegions(p *cann.Program) error {
	if s.ref != nil {
		if err := sameLayout(s.ref, p); err != nil {
			return err
		}
	}
	s.lock.RLock()
	defer s.lock.RUnlock()
	for _, r := range p.Regions {
		npu := r.Device == string(target.NPU)
		cur := s.regions[r.Name]
		if sharedRegions[r.Name] {
			if cur != nil {
				if cur.bytes != r.Bytes {
					return fmt.Errorf("program: bucket %s: region %q needs %d bytes, %d were loaded", p.Bucket, r.Name, r.Bytes, cur.bytes)
				}
				continue
			}
			reg, err := s.alloc(r.Name, npu, r.Bytes)
			if err != nil {
				return err
			}
			if err := s.fill(p, reg); err != nil {
				return err
			}
			continue
		}
		if cur != nil && cur.bytes >= r.Bytes {
			continue
		}
		if cur != nil {
			if err := s.release(cur); err != nil {
				return err
			}
		}
		if _, err := s.alloc(r.Name, npu, r.Bytes); err != nil {
			return err
		}
		s.gen++
		if r.Name == cann.RegionInputs {
			if err := s.growPinned(&s.stage, r.Bytes); err != nil {
				return err
			}
		}
	}
	var out int64
	for _, o := range p.Outputs {
		out = max(out, o.Desc.Bytes())
	}
	if err := s.growPinned(&s.down, out); err != nil {
		return err
	}
	if s.ref == nil {
		s.ref = p
	}
	return nil
}

func (s *Runner) growPinned(buf *[]byte, n int64) error {
	if int64(len(*buf)) >= n || n == 0 {
		return nil
	}
	if *buf != nil {
		if err := s.dev.FreeHost(*buf); err != nil {
			return fmt.Errorf("program: %w", err)
		}
		*buf = nil
	}
	b, err := s.dev.MallocHost(n)
	if err != nil {
		return fmt.Errorf("program: %w", err)
	}
	*buf = b
	return nil
}

// sameLayout checks that q places weights, states and constants exactly as
// p does, so that one upload serves both.
func sameLayout(p, q *cann.Program) error {
	if len(p.Weights) != len(q.Weights) || len(p.States) != len(q.States) || len(p.Consts) != len(q.Consts) {
		return fmt.Errorf("program: buckets %s and %s hold different weights, states or constants", p.Bucket, q.Bucket)
	}
	for i := range p.Weights {
		if a, b := p.Weights[i], q.Weights[i]; a.Name != b.Name || a.Addr != b.Addr || a.DType != b.DType || a.Bytes != b.Bytes {
			return fmt.Errorf("program: buckets %s and %s place weight %q differently", p.Bucket, q.Bucket, a.Name)
		}
	}
	for i := range p.States {
		if p.States[i] != q.States[i] {
			return fmt.Errorf("program: buckets %s and %s place state %q differently", p.Bucket, q.Bucket, p.States[i].Name)
		}
	}
	for i := range p.Consts {
		a, b := p.Consts[i], q.Consts[i]
		if a.Name != b.Name || a.Addr != b.Addr || !bytes.Equal(a.Data, b.Data) {
			return fmt.Errorf("program: buckets %s and %s hold constant %q differently", p.Bucket, q.Bucket, a.Name)
		}
	}
	return nil
}

// alloc makes a region (the caller holds the device lock).
func (s *Runner) alloc(name string, npu bool, n int64) (*region, error) {
	r := &region{name: name, npu: npu, bytes: n}
	if npu {
		p, err := s.dev.Malloc(n)
		if err != nil {
			return nil, fmt.Errorf("program: region %q (%d bytes): %w", name, n, err)
		}
		r.ptr = p
	} else {
		r.host = make([]byte, n)
	}
	s.regions[name] = r
	return r, nil
}

func (s *Runner) release(r *region) error {
	delete(s.regions, r.name)
	if r.npu {
		if err := s.dev.Free(r.ptr); err != nil {
			return fmt.Errorf("program: region %q: %w", r.name, err)
		}
	}
	return nil
}

// fill writes a shared region's initial contents: weights from the model
// file, zeroed states, constants (the caller holds the device lock).
func (s *Runner) fill(p *cann.Program, r *region) error {
	write := func(what string, a cann.Addr, data []byte) error {
		if a.Offset < 0 || a.Offset+int64(len(data)) > r.bytes {
			return fmt.Errorf("program: %s: [%d, +%d) lies outside region %q (%d bytes)", what, a.Offset, len(data), r.name, r.bytes)
		}
		if !r.npu {
			copy(r.host[a.Offset:], data)
			return nil
		}
		if err := s.dev.MemcpyH2D(r.ptr+device.Ptr(a.Offset), data); err != nil {
			return fmt.Errorf("program: %s: %w", what, err)
		}
		return nil
	}
	if r.npu {
		// Pool blocks are reused: clear whatever the last owner left.
		if err := write("clearing", cann.Addr{Region: r.name}, make([]byte, r.bytes)); err != nil {
			return err
		}
	}
	for _, w := range p.Weights {
		if w.Addr.Region != r.name {
			continue
		}
		if w.DType != w.SourceDType {
			return fmt.Errorf("program: weight %q is requantised %s -> %s at load time, which this executor does not do yet",
				w.Name, w.SourceDType, w.DType)
		}
		data, err := s.weights.TensorData(w.Name)
		if err != nil {
			return fmt.Errorf("program: weight %q: %w", w.Name, err)
		}
		if int64(len(data)) < w.Bytes {
			return fmt.Errorf("program: weight %q holds %d bytes, the program places %d", w.Name, len(data), w.Bytes)
		}
		if err := write("weight "+w.Name, w.Addr, data[:w.Bytes]); err != nil {
			return err
		}
		if err := s.place(r, w, data[:w.Bytes]); err != nil {
			return err
		}
	}
	for _, c := range p.Consts {
		if c.Addr.Region == r.name {
			if err := write("constant "+c.Name, c.Addr, c.Data); err != nil {
				return err
			}
		}
	}
	return nil // states are zero: the region was cleared
}

// place hands a weight just written to an NPU region to a device that
// keeps its own layout of it (device.WeightPlacer), with the kinds of
// kernels that can read it: every user of the weight in the compiled
// graph, whatever device the partition of one bucket gives it, so that a
// later bucket's program finds its copy converted.
func (s *Runner) place(r *region, w cann.Weight, data []byte) error {
	wp, ok := s.dev.(device.WeightPlacer)
	if !ok || !r.npu || !w.DType.Quantized() {
		return nil
	}
	g := s.comp.Graph()
	var node *ir.Node
	var use device.WeightUse
	for _, n := range g.Nodes {
		if len(n.Args) == 0 || n.Args[0].Op != ir.OpWeight || n.Args[0].Name != w.Name {
			continue
		}
		node = n.Args[0]
		switch n.Op {
		case ir.OpMulMat, ir.OpMulMatAdd, ir.OpMulMatID:
			use.Matmul = true
		case ir.OpGetRows:
			use.Rows = true
		}
	}
	if node == nil || !use.Matmul && !use.Rows {
		return nil
	}
	ne, err := node.Type.Shape.Ne()
	if err != nil {
		return fmt.Errorf("program: weight %q: %w", w.Name, err)
	}
	t := device.TensorDesc{DType: w.DType, Ne: ne, Nb: ir.ContiguousStrides(w.DType, ne)}
	b := t.Bytes()
	if b > int64(len(data)) {
		return fmt.Errorf("program: weight %q: %d bytes, its shape %v needs %d", w.Name, len(data), ne, b)
	}
	if t.Addr, err = s.ptr(w.Addr, b); err != nil {
		return fmt.Errorf("program: weight %q: %w", w.Name, err)
	}
	t0 := time.Now()
	err = wp.PlaceWeight(t, data[:b], use)
	s.convertNS += int64(time.Since(t0))
	if err != nil {
		return fmt.Errorf("program: weight %q: %w", w.Name, err)
	}
	return nil
}

// ptr resolves an address in an NPU region, checking that n bytes fit.
func (s *Runner) ptr(a cann.Addr, n int64) (device.Ptr, error) {
	r := s.regions[a.Region]
	if r == nil || !r.npu {
		return 0, fmt.Errorf("address %s: no device region %q", a, a.Region)
	}
	if a.Offset < 0 || a.Offset+n > r.bytes {
		return 0, fmt.Errorf("address %s: [%d, +%d) lies outside region %q (%d bytes)", a, a.Offset, n, a.Region, r.bytes)
	}
	return r.ptr + device.Ptr(a.Offset), nil
}

// hostBytes resolves an address in a host region.
func (s *Runner) hostBytes(a cann.Addr, n int64) ([]byte, error) {
	r := s.regions[a.Region]
	if r == nil || r.npu {
		return nil, fmt.Errorf("address %s: no host region %q", a, a.Region)
	}
	if a.Offset < 0 || a.Offset+n > r.bytes {
		return nil, fmt.Errorf("address %s: [%d, +%d) lies outside region %q (%d bytes)", a, a.Offset, n, a.Region, r.bytes)
	}
	return r.host[a.Offset : a.Offset+n : a.Offset+n], nil
}

func (s *Runner) devDesc(t cann.TensorDesc) (device.TensorDesc, error) {
	p, err := s.ptr(t.Addr, t.Bytes())
	return device.TensorDesc{DType: t.DType, Ne: t.Ne, Nb: t.Nb, Addr: p}, err
}

func (s *Runner) hostTensor(t cann.TensorDesc) (kernels.Tensor, error) {
	b, err := s.hostBytes(t.Addr, t.Bytes())
	return kernels.Tensor{Type: gguf.GGMLType(t.DType), Ne: t.Ne, Nb: t.Nb, Data: b}, err
}

// resolve turns a program's region addresses into device pointers and
// host views, and records the properties of its capturable segments.
func (s *Runner) resolve(lp *loaded) error {
	p := lp.prog
	lp.segs = make([]loadedSeg, len(p.Segments))
	for i := range p.Segments {
		seg := &p.Segments[i]
		ls := loadedSeg{seg: seg, npu: seg.Device == string(target.NPU)}
		for j := range seg.Kernels {
			k := &seg.Kernels[j]
			fail := func(err error) error {
				return fmt.Errorf("program: bucket %s segment %d kernel %s (node %d %q): %w", p.Bucket, seg.ID, k.Name, k.Node, k.NodeName, err)
			}
			if ls.npu {
				l := device.KernelLaunch{Name: k.Name, Op: k.Op, Attrs: k.Attrs, Node: k.Node, WorkspaceBytes: k.WorkspaceBytes}
				var err error
				if l.Output, err = s.devDesc(k.Output); err != nil {
					return fail(err)
				}
				for _, in := range k.Inputs {
					d, err := s.devDesc(in)
					if err != nil {
						return fail(err)
					}
					l.Inputs = append(l.Inputs, d)
				}
				for _, x := range k.Extra {
					d, err := s.devDesc(x)
					if err != nil {
						return fail(err)
					}
					l.Extra = append(l.Extra, d)
				}
				if k.WorkspaceBytes > 0 {
					if l.Workspace, err = s.ptr(k.Workspace, k.WorkspaceBytes); err != nil {
						return fail(err)
					}
				}
				ls.launches = append(ls.launches, l)
				continue
			}
			ks := s.opts.KernelSet
			if ks == nil {
				ks = eval.DefaultKernels()
			}
			fn, ok := ks.Lookup(k.Op)
			if !ok {
				return fail(fmt.Errorf("no CPU kernel for op %q", k.Op))
			}
			hk := hostKernel{name: k.Name, fn: fn}
			var err error
			if hk.dst, err = s.hostTensor(k.Output); err != nil {
				return fail(err)
			}
			l := device.KernelLaunch{Name: k.Name, Op: k.Op, Attrs: k.Attrs, Node: k.Node, Output: device.TensorDesc{DType: k.Output.DType, Ne: k.Output.Ne, Nb: k.Output.Nb}}
			for _, in := range k.Inputs {
				t, err := s.hostTensor(in)
				if err != nil {
					return fail(err)
				}
				hk.args = append(hk.args, t)
				l.Inputs = append(l.Inputs, device.TensorDesc{DType: in.DType, Ne: in.Ne, Nb: in.Nb})
			}
			hk.node = device.KernelNode(&l)
			ls.host = append(ls.host, hk)
		}
		if ls.npu && seg.Capturable {
			ls.props = device.NewGraphProps(ls.launches)
		}
		lp.segs[i] = ls
	}
	return nil
}
