package cann

import (
	"fmt"
	"sort"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/partition"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/target"
)

// Options tune Lower.
type Options struct {
	// Devices gives every node's device, as partition.Result.Device does
	// for the partitioned graph (Specialize keeps node IDs, so the result
	// of the symbolic graph applies to its specialisations). Nil means every
	// compute node runs on the NPU, which must support it, or on the CPU for
	// a target without an NPU.
	Devices []target.Device
	// Bindings are the symbol values g was specialised with; they name the
	// bucket in every segment key. Nil means "static".
	Bindings ir.Bindings
	// KVWrite records the KV-cache write mode ("set_rows" or "cpy"); empty
	// means g.Meta["kv_write"].
	KVWrite string
	// PrefillGraph lets segments of a prefill step (n_tokens > 1) be
	// captured; by default prefill runs eagerly, as upstream (llama.cpp PR #15933).
	PrefillGraph bool
	// SourceDTypes gives, per weight name, the dtype stored in the model
	// file when it differs from the graph's (requantised weights).
	SourceDTypes map[string]ir.DType
}

type lowerer struct {
	g     *ir.Graph
	plan  *planner.MemoryPlan
	prof  *target.Profile
	opts  Options
	lay   []ir.Layout
	dev   []target.Device
	p     *Program
	sizes map[string]int64                 // region name -> bytes used
	leaf  map[int]map[target.Device]Addr   // leaf node -> base address per device
	out   map[int]Addr                     // graph output root -> address
	ones  map[int64]map[target.Device]Addr // RMSNorm gamma tables by length
}

// kernelExtras complete the NPU kernel of an op beyond its operands,
// result and workspace (the constant tables and attributes its recipe
// needs); the op families' files (norm.go, rope.go) register them.
var kernelExtras = map[ir.Op]func(l *lowerer, n *ir.Node, k *Kernel, d target.Device){}

// Lower turns a static graph, its memory plan (planner.PlanMemory of the
// same graph with the target's alignment, in-place policy and kernel
// workspaces: the compile driver's bucket step, compiler.Result.Lower,
// plans and lowers) and a target profile into a Program. Every compute node becomes one kernel: an aclnn call on the NPU
// (target.Support says which), a CPU kernel otherwise; every partition
// transfer becomes a copy step. Errors name the node at fault.
func Lower(g *ir.Graph, plan *planner.MemoryPlan, prof *target.Profile, opts Options) (*Program, error) {
	if g == nil || plan == nil || prof == nil {
		return nil, fmt.Errorf("cann: lower: nil graph, plan or profile")
	}
	if !g.IsStatic() {
		return nil, fmt.Errorf("cann: lower %q: graph is not static (symbols %v); specialise it first", g.Name, g.Symbols())
	}
	if plan.Graph != nil && plan.Graph != g {
		return nil, fmt.Errorf("cann: lower %q: the plan is for graph %q, not this one", g.Name, plan.Graph.Name)
	}
	kv := opts.KVWrite
	switch meta := g.Meta["kv_write"]; {
	case kv == "":
		kv = meta
	case meta != "" && meta != kv:
		return nil, fmt.Errorf("cann: lower %q: KV write mode %q, but the graph was built with %q (the mode is chosen when the graph is built: models.Options.KVWrite)", g.Name, kv, meta)
	}
	lay, err := ir.Layouts(g)
	if err != nil {
		return nil, fmt.Errorf("cann: lower %q: %w", g.Name, err)
	}
	l := &lowerer{g: g, plan: plan, prof: prof, opts: opts, lay: lay, sizes: map[string]int64{},
		leaf: map[int]map[target.Device]Addr{}, out: map[int]Addr{}, ones: map[int64]map[target.Device]Addr{}}
	if err := l.devices(); err != nil {
		return nil, err
	}
	bucket := "static"
	if len(opts.Bindings) > 0 {
		bucket = opts.Bindings.String()
	}
	l.p = &Program{Version: Version, Graph: g.Name, Target: prof.Name, KVWrite: kv, Bindings: opts.Bindings,
		Bucket: bucket, GraphCapture: prof.GraphCapture, Align: prof.Align,
		Regions: []Region{}, Weights: []Weight{}, States: []State{}, Consts: []Const{},
		Inputs: []IO{}, Outputs: []IO{}, Segments: []Segment{}, Steps: []Step{}}
	if err := l.placeLeaves(); err != nil {
		return nil, err
	}
	if err := l.placeOutputs(); err != nil {
		return nil, err
	}
	if err := l.schedule(); err != nil {
		return nil, err
	}
	l.regions()
	return l.p, nil
}

func kindOf(n *ir.Node) (leaf, view, compute bool) {
	info, ok := n.Info()
	if !ok {
		return false, false, false
	}
	switch {
	case info.Kind == ir.KindLeaf:
		return true, false, false
	case info.Kind == ir.KindView && !info.SideEffect:
		return false, true, false
	}
	return false, false, true
}

func otherDev(d target.Device) target.Device {
	if d == target.NPU {
		return target.CPU
	}
	return target.NPU
}

// devices fills l.dev for compute nodes and checks the placement: NPU
// nodes must be supported and every operand must live on the node's device
// (or be a weight, constant or input, which are placed per device).
func (l *lowerer) devices() error {
	g, prof := l.g, l.prof
	l.dev = make([]target.Device, len(g.Nodes))
	if l.opts.Devices != nil && len(l.opts.Devices) != len(g.Nodes) {
		return fmt.Errorf("cann: lower %q: %d devices for %d nodes (was the graph changed after partitioning?)", g.Name, len(l.opts.Devices), len(g.Nodes))
	}
	for i, n := range g.Nodes {
		if _, ok := n.Info(); !ok {
			return fmt.Errorf("cann: lower: %s: unknown op %q", n, n.Op)
		}
		_, _, compute := kindOf(n)
		if !compute {
			continue
		}
		d := target.CPU
		switch {
		case n.Op == ir.OpTransfer:
			to := n.Attrs.To()
			d = target.Device(to)
		case l.opts.Devices != nil:
			d = l.opts.Devices[i]
		case prof.HasNPU():
			d = target.NPU
		}
		if d == target.NPU {
			if !prof.HasNPU() {
				return fmt.Errorf("cann: lower: %s (%s %q) is placed on the npu but target %s has none", n, n.Op, n.Name, prof.Name)
			}
			if n.Op != ir.OpTransfer {
				if s := prof.Supports(n); !s.OK {
					return fmt.Errorf("cann: lower: %s (%s %q) cannot run on the npu of %s: %s (partition the graph first)", n, n.Op, n.Name, prof.Name, s.Reason)
				}
			}
		} else if d != target.CPU {
			return fmt.Errorf("cann: lower: %s (%s %q): unknown device %q", n, n.Op, n.Name, d)
		}
		l.dev[i] = d
	}
	// Operands must be on the reading device.
	for i, n := range g.Nodes {
		if l.dev[i] == "" {
			continue
		}
		rd := l.readDev(n)
		for j, a := range n.Args {
			r := l.lay[a.ID].Root
			if isLeaf, _, _ := kindOf(r); isLeaf {
				continue // placed per reading device; states are checked in placeLeaves
			}
			if l.dev[r.ID] != rd {
				return fmt.Errorf("cann: lower: %s (%s %q) on the %s reads operand %d (%s %q), which lives on the %s; a transfer is missing",
					n, n.Op, n.Name, rd, j, a, a.Name, l.dev[r.ID])
			}
		}
	}
	return nil
}

// readDev is the device a node reads its operands on: a transfer reads on
// its source device.
func (l *lowerer) readDev(n *ir.Node) target.Device {
	if n.Op == ir.OpTransfer {
		from := n.Attrs.From()
		return target.Device(from)
	}
	return l.dev[n.ID]
}

func regionFor(dev target.Device, npu, host string) string {
	if dev == target.NPU {
		return npu
	}
	return host
}

// alloc reserves bytes in a region, aligned, and returns the address.
func (l *lowerer) alloc(region string, bytes int64) Addr {
	a := l.prof.Align
	if a <= 0 {
		a = 1
	}
	off := (l.sizes[region] + a - 1) / a * a
	l.sizes[region] = off + max(bytes, 1)
	return Addr{Region: region, Offset: off}
}

// placeLeaves gives every weight, constant, input and state an address on
// each device that reads it.
func (l *lowerer) placeLeaves() error {
	g := l.g
	uses := map[int]map[target.Device]bool{}
	for _, n := range g.Nodes {
		if l.dev[n.ID] == "" {
			continue
		}
		rd := l.readDev(n)
		for _, a := range n.Args {
			r := l.lay[a.ID].Root
			if isLeaf, _, _ := kindOf(r); isLeaf {
				if uses[r.ID] == nil {
					uses[r.ID] = map[target.Device]bool{}
				}
				uses[r.ID][rd] = true
			}
		}
	}
	// The NPU's weights take what partition.DeviceWeights says: a weight
	// the device holds in its converted copy alone takes that copy's bytes
	// in the weights region, not its blocks'.
	var onNPU map[int]partition.WeightBytes
	if l.prof.HasNPU() {
		rds := make([]target.Device, len(g.Nodes))
		for i, n := range g.Nodes {
			if l.dev[i] != "" {
				rds[i] = l.readDev(n)
			}
		}
		var err error
		if onNPU, err = partition.DeviceWeights(g, rds, l.prof); err != nil {
			return fmt.Errorf("cann: lower: %w", err)
		}
	}
	for _, n := range g.Nodes {
		isLeaf, _, _ := kindOf(n)
		if !isLeaf {
			continue
		}
		bytes, err := n.Type.Bytes()
		if err != nil {
			return fmt.Errorf("cann: lower: %s (%s %q): %w", n, n.Op, n.Name, err)
		}
		devs := []target.Device{}
		for _, d := range []target.Device{target.NPU, target.CPU} {
			if uses[n.ID][d] {
				devs = append(devs, d)
			}
		}
		if n.Op == ir.OpState {
			switch len(devs) {
			case 0:
				d := target.CPU
				if l.prof.HasNPU() {
					d = target.NPU
				}
				devs = []target.Device{d}
			case 2:
				return fmt.Errorf("cann: lower: state %q is used on both devices; its writers and readers must share one (partition the graph)", n.Name)
			}
		}
		l.leaf[n.ID] = map[target.Device]Addr{}
		for _, d := range devs {
			switch n.Op {
			case ir.OpWeight:
				held := bytes
				if w, ok := onNPU[n.ID]; ok && d == target.NPU {
					held = w.Bytes()
				}
				a := l.alloc(regionFor(d, RegionWeights, RegionHostWeights), max(held, bytes))
				src := n.Type.DType
				if s, ok := l.opts.SourceDTypes[n.Name]; ok {
					src = s
				}
				l.p.Weights = append(l.p.Weights, Weight{Name: n.Name, DType: n.Type.DType, SourceDType: src, Bytes: bytes, DeviceBytes: held, Addr: a})
				l.leaf[n.ID][d] = a
			case ir.OpConst:
				a := l.alloc(regionFor(d, RegionConsts, RegionHostConsts), bytes)
				l.p.Consts = append(l.p.Consts, Const{Name: n.Name, Addr: a, Data: n.Data})
				l.leaf[n.ID][d] = a
			case ir.OpState:
				a := l.alloc(regionFor(d, RegionKV, RegionHostKV), bytes)
				l.p.States = append(l.p.States, State{Name: n.Name, Bytes: bytes, Addr: a})
				l.leaf[n.ID][d] = a
			case ir.OpInput:
				a := l.alloc(regionFor(d, RegionInputs, RegionHostInputs), bytes)
				l.p.Inputs = append(l.p.Inputs, IO{Name: n.Name, Bytes: bytes, Desc: l.descAt(n, l.lay[n.ID], a)})
				l.leaf[n.ID][d] = a
			default:
				return fmt.Errorf("cann: lower: %s: leaf op %q is not placed", n, n.Op)
			}
		}
	}
	return nil
}

// placeOutputs gives graph outputs addresses of their own, as the planner
// leaves them out of the arena.
func (l *lowerer) placeOutputs() error {
	for i, o := range l.g.Outputs {
		r := l.lay[o.ID].Root
		if _, planned := l.plan.Offsets[r.ID]; planned {
			continue // a window of a planned value
		}
		if _, done := l.out[r.ID]; done {
			continue
		}
		d := l.dev[r.ID]
		if d == "" {
			return fmt.Errorf("cann: lower: output %d (%s %q) is not computed by the graph", i, o, o.Name)
		}
		bytes, err := r.Type.Bytes()
		if err != nil {
			return fmt.Errorf("cann: lower: output %s: %w", r, err)
		}
		l.out[r.ID] = l.alloc(regionFor(d, RegionOutputs, RegionHostOutputs), bytes)
	}
	for i, o := range l.g.Outputs {
		d := l.dev[l.lay[o.ID].Root.ID]
		desc, err := l.desc(o, d)
		if err != nil {
			return err
		}
		b, _ := o.Type.Bytes()
		l.p.Outputs = append(l.p.Outputs, IO{Name: fmt.Sprintf("%d:%s", i, o.Name), Bytes: b, Desc: desc})
	}
	return nil
}

// base is the address of a storage root as read on device d.
func (l *lowerer) base(r *ir.Node, d target.Device) (Addr, error) {
	if isLeaf, _, _ := kindOf(r); isLeaf {
		a, ok := l.leaf[r.ID][d]
		if !ok {
			return Addr{}, fmt.Errorf("cann: lower: %s (%s %q) has no copy on the %s", r, r.Op, r.Name, d)
		}
		return a, nil
	}
	if l.dev[r.ID] != d {
		return Addr{}, fmt.Errorf("cann: lower: %s (%s %q) lives on the %s, read on the %s", r, r.Op, r.Name, l.dev[r.ID], d)
	}
	if a, ok := l.out[r.ID]; ok {
		return a, nil
	}
	off, ok := l.plan.Offsets[r.ID]
	if !ok {
		return Addr{}, fmt.Errorf("cann: lower: %s (%s %q) has no planned offset", r, r.Op, r.Name)
	}
	return Addr{Region: regionFor(d, RegionArena, RegionHostArena), Offset: off}, nil
}

// desc describes node n's value as read or written on device d.
func (l *lowerer) desc(n *ir.Node, d target.Device) (TensorDesc, error) {
	lay := l.lay[n.ID]
	b, err := l.base(lay.Root, d)
	if err != nil {
		return TensorDesc{}, err
	}
	return l.descAt(n, lay, b), nil
}

func (l *lowerer) descAt(n *ir.Node, lay ir.Layout, base Addr) TensorDesc {
	return newDesc(n.Type.DType, lay.Ne, lay.Nb, Addr{Region: base.Region, Offset: base.Offset + lay.Offset})
}

// schedule walks the execution order: kernels of one device join the
// current segment, a transfer ends it and becomes a copy step.
func (l *lowerer) schedule() error {
	order := l.plan.Order
	if len(order) == 0 {
		order = l.g.Nodes
	}
	for _, in := range l.p.Inputs {
		if in.Desc.Addr.Region == RegionInputs {
			l.p.Steps = append(l.p.Steps, Step{Kind: StepUpload, Input: in.Name})
		}
	}
	var cur *Segment
	for _, n := range order {
		if l.dev[n.ID] == "" {
			continue
		}
		if n.Op == ir.OpTransfer {
			k, err := l.copyStep(n)
			if err != nil {
				return err
			}
			l.p.Steps = append(l.p.Steps, Step{Kind: StepCopy, Copy: k})
			cur = nil
			continue
		}
		d := l.dev[n.ID]
		k, err := l.kernel(n, d)
		if err != nil {
			return err
		}
		if cur == nil || cur.Device != string(d) {
			l.p.Segments = append(l.p.Segments, Segment{ID: len(l.p.Segments), Device: string(d)})
			cur = &l.p.Segments[len(l.p.Segments)-1]
			l.p.Steps = append(l.p.Steps, Step{Kind: StepSegment, Segment: cur.ID})
		}
		cur.Kernels = append(cur.Kernels, k)
	}
	for i, o := range l.p.Outputs {
		if o.Desc.Addr.Region == RegionOutputs || o.Desc.Addr.Region == RegionArena {
			l.p.Steps = append(l.p.Steps, Step{Kind: StepDownload, Output: i})
		}
	}
	for i := range l.p.Segments {
		s := &l.p.Segments[i]
		s.Key = fmt.Sprintf("s%d@%s", s.ID, l.p.Bucket)
		s.Capturable, s.Blocker = l.capturable(s)
		s.Fingerprint = Fingerprint(s.Props())
	}
	return nil
}

func (l *lowerer) capturable(s *Segment) (bool, string) {
	if s.Device != string(target.NPU) {
		return false, "cpu segment: host kernels are not captured"
	}
	if !l.prof.GraphCapture {
		return false, "target " + l.prof.Name + " has no ACL graph capture (aclmdlRI is not offered on it; CANN docs, aclmdlRI capture API)"
	}
	for _, k := range s.Kernels {
		if k.HostSync {
			return false, fmt.Sprintf("%s (node %d) synchronises with the host (github.com/ggml-org/llama.cpp/issues/16586)", k.Name, k.Node)
		}
	}
	if nt, ok := l.opts.Bindings["n_tokens"]; ok && nt > 1 && !l.opts.PrefillGraph {
		return false, fmt.Sprintf("prefill (n_tokens=%d) runs eagerly, as upstream (llama.cpp PR #15933)", nt)
	}
	return true, ""
}

func (l *lowerer) kernel(n *ir.Node, d target.Device) (Kernel, error) {
	k := Kernel{Op: n.Op, Attrs: n.Attrs.Clone(), Node: n.ID, NodeName: n.Name}
	for _, a := range n.Args {
		t, err := l.desc(a, d)
		if err != nil {
			return k, fmt.Errorf("%w (operand of %s %s %q)", err, n, n.Op, n.Name)
		}
		k.Inputs = append(k.Inputs, t)
	}
	out, err := l.desc(n, d)
	if err != nil {
		return k, err
	}
	k.Output = out
	est, err := l.prof.Estimate(n, d, nil)
	if err != nil {
		return k, fmt.Errorf("cann: lower: %w", err)
	}
	k.DeviceUS, k.LaunchUS = est.DeviceUS, est.LaunchUS
	if d == target.CPU {
		k.Name = "cpu." + string(n.Op)
		return k, nil
	}
	s := l.prof.Supports(n)
	k.Name, k.Calls, k.HostSync, k.Note = s.Kernel, s.Calls, s.HostSync, s.Reason
	if ws, ok := l.plan.Workspaces[n.ID]; ok && ws.Bytes > 0 {
		k.WorkspaceBytes = ws.Bytes
		k.Workspace = Addr{Region: RegionArena, Offset: ws.Offset}
	}
	if extra, ok := kernelExtras[n.Op]; ok {
		extra(l, n, &k, d)
	}
	return k, nil
}

func (l *lowerer) copyStep(n *ir.Node) (*Kernel, error) {
	from, to := l.readDev(n), l.dev[n.ID]
	src, err := l.desc(n.Args[0], from)
	if err != nil {
		return nil, err
	}
	dst, err := l.desc(n, to)
	if err != nil {
		return nil, err
	}
	kind := "aclrtMemcpyAsync(H2D)"
	if from == target.NPU {
		kind = "aclrtMemcpyAsync(D2H)"
	}
	b, _ := n.Type.Bytes()
	return &Kernel{Name: kind, Op: n.Op, Attrs: n.Attrs.Clone(), Node: n.ID, NodeName: n.Name,
		Inputs: []TensorDesc{src}, Output: dst, DeviceUS: l.prof.CopyUS(float64(b))}, nil
}

// regions lists every region that holds something, device regions first.
func (l *lowerer) regions() {
	names := []struct {
		name string
		dev  target.Device
	}{
		{RegionArena, target.NPU}, {RegionWeights, target.NPU}, {RegionKV, target.NPU}, {RegionConsts, target.NPU},
		{RegionInputs, target.NPU}, {RegionOutputs, target.NPU},
		{RegionHostArena, target.CPU}, {RegionHostWeights, target.CPU}, {RegionHostKV, target.CPU}, {RegionHostConsts, target.CPU},
		{RegionHostInputs, target.CPU}, {RegionHostOutputs, target.CPU},
	}
	// The arenas hold the plan; each device gets one when it holds any
	// planned value or workspace.
	for id := range l.plan.Offsets {
		if d := l.dev[id]; d != "" {
			l.sizes[regionFor(d, RegionArena, RegionHostArena)] = max(l.sizes[regionFor(d, RegionArena, RegionHostArena)], l.plan.ArenaBytes)
		}
	}
	for id := range l.plan.Workspaces {
		if l.dev[id] == target.NPU {
			l.sizes[RegionArena] = max(l.sizes[RegionArena], l.plan.ArenaBytes)
		}
	}
	for _, r := range names {
		if b, ok := l.sizes[r.name]; ok && b > 0 {
			l.p.Regions = append(l.p.Regions, Region{Name: r.name, Device: string(r.dev), Bytes: b})
		}
	}
	sort.SliceStable(l.p.Regions, func(i, j int) bool { return l.p.Regions[i].Device > l.p.Regions[j].Device })
}
