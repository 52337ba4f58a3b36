package program

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"sort"
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
	bytes int64 // the program's size of the region
	ptr   device.Ptr
	host  []byte
	// spans, when set, place the weights of an NPU weights region one by
	// one (takeWeights): the allocation at ptr holds alloc bytes, and
	// taken the weights the device holds in its own layouts alone.
	spans []span
	alloc int64
	taken []device.TensorDesc
}

// span is where the bytes [src, src+bytes) of a weights region live: at
// ptr, in the region's allocation or the device's copy of a taken weight.
type span struct {
	src, bytes int64
	ptr        device.Ptr
	taken      bool
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
			var reg *region
			var err error
			if npu && r.Name == cann.RegionWeights {
				reg, err = s.allocWeights(p, r.Bytes)
			} else {
				reg, err = s.alloc(r.Name, npu, r.Bytes)
			}
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
	if wt, ok := s.dev.(device.WeightTaker); ok {
		for _, t := range r.taken {
			if err := wt.DropWeight(t); err != nil {
				return fmt.Errorf("program: region %q: %w", r.name, err)
			}
		}
	}
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
		dst, err := r.at(a.Offset, int64(len(data)))
		if err != nil {
			return fmt.Errorf("program: %s: %w", what, err)
		}
		if err := s.dev.MemcpyH2D(dst, data); err != nil {
			return fmt.Errorf("program: %s: %w", what, err)
		}
		return nil
	}
	if r.npu {
		// Pool blocks are reused: clear whatever the last owner left.
		n := r.bytes
		if r.spans != nil {
			n = r.alloc
		}
		if err := s.dev.MemcpyH2D(r.ptr, make([]byte, n)); err != nil {
			return fmt.Errorf("program: clearing region %q: %w", r.name, err)
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
		if r.isTaken(w.Addr.Offset) {
			continue // converted by the device already (allocWeights)
		}
		if err := write("weight "+w.Name, w.Addr, data[:w.Bytes]); err != nil {
			return err
		}
		if r.npu {
			s.weightBytes += w.Bytes
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
	t, uses, ok := s.weightUse(w)
	use := uses.WeightUse
	if !ok || !use.Matmul && !use.Rows {
		return nil
	}
	b := t.Bytes()
	if b > int64(len(data)) {
		return fmt.Errorf("program: weight %q: %d bytes, its shape %v needs %d", w.Name, len(data), t.Ne, b)
	}
	var err error
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
	p, err := r.at(a.Offset, n)
	if err != nil {
		return 0, fmt.Errorf("address %s: %w", a, err)
	}
	return p, nil
}

// at is the device address of bytes [off, off+n) of NPU region r: in its
// allocation, or, for a region placed weight by weight, where the weight
// holding them lives.
func (r *region) at(off, n int64) (device.Ptr, error) {
	if r.spans == nil {
		return r.ptr + device.Ptr(off), nil
	}
	i := sort.Search(len(r.spans), func(i int) bool { return r.spans[i].src+r.spans[i].bytes > off })
	if i == len(r.spans) || off < r.spans[i].src || off+n > r.spans[i].src+max(r.spans[i].bytes, 1) {
		return 0, fmt.Errorf("[%d, +%d) lies outside every weight of region %q", off, n, r.name)
	}
	return r.spans[i].ptr + device.Ptr(off-r.spans[i].src), nil
}

// isTaken reports whether the weight at off is one the device took.
func (r *region) isTaken(off int64) bool {
	for _, sp := range r.spans {
		if sp.src == off {
			return sp.taken
		}
	}
	return false
}

// allocWeights makes the NPU weights region of p (bytes in the program).
// On a device that can hold a quantised weight in its own layouts alone
// (device.WeightTaker), each weight that only matmuls and get_rows read
// is handed to it first (TakeWeight: its blocks never reach the device);
// the others are laid out one after the other, at the program's
// alignment, in one allocation that leaves out the taken ones. Elsewhere
// the region is one allocation of the program's layout.
func (s *Runner) allocWeights(p *cann.Program, bytes int64) (*region, error) {
	wt, ok := s.dev.(device.WeightTaker)
	if !ok {
		return s.alloc(cann.RegionWeights, true, bytes)
	}
	r := &region{name: cann.RegionWeights, npu: true, bytes: bytes}
	fail := func(err error) (*region, error) {
		for _, t := range r.taken {
			wt.DropWeight(t)
		}
		return nil, err
	}
	ws := make([]cann.Weight, 0, len(p.Weights))
	for _, w := range p.Weights {
		if w.Addr.Region == cann.RegionWeights {
			ws = append(ws, w)
		}
	}
	slices.SortFunc(ws, func(a, b cann.Weight) int { return cmp.Compare(a.Addr.Offset, b.Addr.Offset) })
	align := max(p.Align, 1)
	for _, w := range ws {
		sp := span{src: w.Addr.Offset, bytes: w.Bytes}
		if t, use, ok := s.weightUse(w); ok && use.Only && w.DType == w.SourceDType {
			data, err := s.weights.TensorData(w.Name)
			if err != nil {
				return fail(fmt.Errorf("program: weight %q: %w", w.Name, err))
			}
			if int64(len(data)) < t.Bytes() {
				return fail(fmt.Errorf("program: weight %q holds %d bytes, its shape %v needs %d", w.Name, len(data), t.Ne, t.Bytes()))
			}
			t0 := time.Now()
			ptr, err := wt.TakeWeight(t, data[:t.Bytes()], use.WeightUse)
			s.convertNS += int64(time.Since(t0))
			if err != nil {
				return fail(fmt.Errorf("program: weight %q: %w", w.Name, err))
			}
			if ptr != 0 {
				t.Addr = ptr
				sp.ptr, sp.taken = ptr, true
				r.taken = append(r.taken, t)
			}
		}
		if !sp.taken {
			off := (r.alloc + align - 1) / align * align
			sp.ptr = device.Ptr(off) // an offset until the allocation is made
			r.alloc = off + max(w.Bytes, 1)
		}
		r.spans = append(r.spans, sp)
	}
	r.alloc = max(r.alloc, 1)
	ptr, err := s.dev.Malloc(r.alloc)
	if err != nil {
		return fail(fmt.Errorf("program: region %q (%d bytes): %w", r.name, r.alloc, err))
	}
	r.ptr = ptr
	for i := range r.spans {
		if !r.spans[i].taken {
			r.spans[i].ptr += ptr
		}
	}
	s.regions[r.name] = r
	return r, nil
}

// weightUses says which kernels read a weight (device.WeightUse) and
// whether they are all that read it (Only: every user of the weight in
// the compiled graph reads it as the matrix of a mul_mat, mul_mat_add or
// mul_mat_id, or as the table of a get_rows).
type weightUses struct {
	device.WeightUse
	Only bool
}

// weightUse finds the users of weight w in the compiled graph (whatever
// device the partition of one bucket gives them, so that a later bucket's
// program finds the weight placed) and its descriptor (Addr unset). A user
// the target never runs on the NPU (a get_rows from an int4 table, which
// the CPU gathers from the file) asks the device for no layout.
func (s *Runner) weightUse(w cann.Weight) (device.TensorDesc, weightUses, bool) {
	var node *ir.Node
	u := weightUses{Only: true}
	prof := s.comp.Profile()
	for _, n := range s.comp.Graph().Nodes {
		for i, a := range n.Args {
			if a.Op != ir.OpWeight || a.Name != w.Name {
				continue
			}
			node = a
			switch {
			case i == 0 && n.Op == ir.OpGetRows && prof != nil && !prof.Supports(n).OK:
				// read on the host only: no device layout
			case i == 0 && (n.Op == ir.OpMulMat || n.Op == ir.OpMulMatAdd || n.Op == ir.OpMulMatID):
				u.Matmul = true
			case i == 0 && n.Op == ir.OpGetRows:
				u.Rows = true
			default:
				u.Only = false
			}
		}
	}
	if node == nil || !w.DType.Quantized() {
		return device.TensorDesc{}, u, false
	}
	ne, err := node.Type.Shape.Ne()
	if err != nil {
		return device.TensorDesc{}, u, false
	}
	return device.TensorDesc{DType: w.DType, Ne: ne, Nb: ir.ContiguousStrides(w.DType, ne)}, u, true
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
