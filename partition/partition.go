package partition

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/target"
)

// Policy lets a library user decide placements. Place returns the device
// for a compute node, or "" to let the pass decide. s says whether and how
// the NPU would run the node.
type Policy interface {
	Place(n *ir.Node, s target.Support) target.Device
}

// PolicyFunc adapts a function to Policy.
type PolicyFunc func(n *ir.Node, s target.Support) target.Device

// Place calls f.
func (f PolicyFunc) Place(n *ir.Node, s target.Support) target.Device { return f(n, s) }

// PinCPU returns a policy that keeps the listed ops on the CPU and lets the
// pass decide the rest.
func PinCPU(ops ...ir.Op) Policy {
	set := map[ir.Op]bool{}
	for _, op := range ops {
		set[op] = true
	}
	return PolicyFunc(func(n *ir.Node, _ target.Support) target.Device {
		if set[n.Op] {
			return target.CPU
		}
		return ""
	})
}

// Options tune the pass.
type Options struct {
	// Policy pins nodes (nil: none).
	Policy Policy
	// Bindings size every value when pricing compute and copies; nil means
	// one decode step (DecodeBindings).
	Bindings ir.Bindings
	// NoRefine keeps the first placement (every supported node on the NPU)
	// without the cost-driven moves.
	NoRefine bool
}

// Segment is a maximal run of one device's kernels with no host interaction
// (copy) inside, in execution order.
type Segment struct {
	ID     int           `json:"id"`
	Device target.Device `json:"device"`
	Nodes  []int         `json:"nodes"` // node IDs of the partitioned graph
}

// Copy is one transfer node of the partitioned graph.
type Copy struct {
	Node  int           `json:"node"`  // the transfer node
	Value int           `json:"value"` // the node whose value it copies
	Name  string        `json:"name"`
	From  target.Device `json:"from"`
	To    target.Device `json:"to"`
	Bytes int64         `json:"bytes"` // at Result.Bindings
}

// Fallback is a compute node the target has an NPU for but that runs on the
// CPU, and why.
type Fallback struct {
	Node   int    `json:"node"`
	Op     ir.Op  `json:"op"`
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// Result describes a partition of the graph Run returned.
type Result struct {
	Target   string      `json:"target"`
	Bindings ir.Bindings `json:"bindings"`
	// Device is, per node of the partitioned graph: where a compute node or
	// transfer runs; where the storage of a view or a state lives; "" for
	// weights, constants and inputs, which are placed beside their users.
	Device    []target.Device `json:"-"`
	Segments  []Segment       `json:"segments"`
	Copies    []Copy          `json:"copies"`
	CopyBytes int64           `json:"copy_bytes"`
	CPUNodes  int             `json:"cpu_nodes"`
	NPUNodes  int             `json:"npu_nodes"`
	Fallbacks []Fallback      `json:"fallbacks"`
	// Moved counts nodes the NPU runs that the cost model placed on the CPU.
	Moved int `json:"moved"`
	// PredictedUS is the modelled time of one step under this placement
	// (compute, copies, uploads and downloads), the quantity the pass
	// minimises.
	PredictedUS float64 `json:"predicted_us"`
	// DeviceWeightBytes is the device memory of the weights NPU nodes
	// read, each held once: the weights region (GGMLWeightBytes: ggml's
	// blocks, and the q4_0/q8_0 layouts written over theirs) plus the
	// copies converted at load for aclnnWeightQuantBatchMatmulV2 and
	// get_rows that live outside it (ConvertedWeightBytes, gguf/wqconv's
	// layouts; a weight only matmuls and get_rows read has no blocks on
	// the device then).
	DeviceWeightBytes    int64 `json:"device_weight_bytes"`
	GGMLWeightBytes      int64 `json:"ggml_weight_bytes"`
	ConvertedWeightBytes int64 `json:"converted_weight_bytes"`
}

// DecodeBindings are the sizes of one decode step of a graph built by
// package models: one token, one output row, a full KV cache (n_kv = the
// graph's n_ctx meta value, or 256), cell 0 written. Unknown symbols get 1.
func DecodeBindings(g *ir.Graph) ir.Bindings {
	b := ir.Bindings{}
	nctx := int64(256)
	if v, err := strconv.ParseInt(g.Meta["n_ctx"], 10, 64); err == nil && v > 0 {
		nctx = v
	}
	for _, s := range g.Symbols() {
		switch s {
		case "n_kv":
			b[s] = nctx
		case "kv_head":
			b[s] = 0
		default:
			b[s] = 1
		}
	}
	return b
}

// Run partitions g for prof with an optional policy and default options.
func Run(g *ir.Graph, prof *target.Profile, policy Policy) (*ir.Graph, *Result, error) {
	return RunOptions(g, prof, Options{Policy: policy})
}

// node classes
const (
	clsLeaf = iota
	clsView
	clsCompute
)

type state struct {
	g      *ir.Graph
	prof   *target.Profile
	b      ir.Bindings
	cls    []int
	root   []int // storage root of every node (itself unless a view)
	dev    []target.Device
	pinned []bool
	why    []string
	sup    []target.Support
	est    [][2]float64 // modelled cost on the NPU (0) and the CPU (1)
	bytes  []float64
	// consumer edges (compute node, operand) with repeats removed
	uses [][]int
}

func (s *state) home(id int) target.Device {
	r := s.root[id]
	n := s.g.Nodes[r]
	switch {
	case s.cls[r] == clsCompute:
		return s.dev[r]
	case n.Op == ir.OpState:
		return s.dev[r]
	case n.Op == ir.OpInput:
		return target.CPU
	}
	return "" // weights and constants are loaded wherever they are used
}

// RunOptions partitions g for prof. The input graph is not modified.
func RunOptions(g *ir.Graph, prof *target.Profile, opts Options) (*ir.Graph, *Result, error) {
	if g == nil || prof == nil {
		return nil, nil, fmt.Errorf("partition: nil graph or profile")
	}
	if err := ir.Verify(g); err != nil {
		return nil, nil, fmt.Errorf("partition: %w", err)
	}
	w := g.Clone()
	b := opts.Bindings
	if b == nil {
		b = DecodeBindings(w)
	}
	s, err := newState(w, prof, b)
	if err != nil {
		return nil, nil, err
	}
	if err := s.place(opts.Policy); err != nil {
		return nil, nil, err
	}
	moved := 0
	if prof.HasNPU() && !opts.NoRefine {
		moved = s.refine()
	}
	pred := s.cost()
	out, res, err := s.build()
	if err != nil {
		return nil, nil, err
	}
	res.Moved = moved
	res.PredictedUS = pred
	if res.GGMLWeightBytes, res.ConvertedWeightBytes, err = deviceWeights(out, res.Device, prof); err != nil {
		return nil, nil, err
	}
	res.DeviceWeightBytes = res.GGMLWeightBytes + res.ConvertedWeightBytes
	return out, res, nil
}

func newState(g *ir.Graph, prof *target.Profile, b ir.Bindings) (*state, error) {
	n := len(g.Nodes)
	s := &state{g: g, prof: prof, b: b, cls: make([]int, n), root: make([]int, n), dev: make([]target.Device, n),
		pinned: make([]bool, n), why: make([]string, n), sup: make([]target.Support, n), est: make([][2]float64, n),
		bytes: make([]float64, n), uses: make([][]int, n)}
	for i, x := range g.Nodes {
		info, ok := x.Info()
		if !ok {
			return nil, fmt.Errorf("partition: %s: unknown op %q", x, x.Op)
		}
		s.root[i] = i
		switch {
		case info.Kind == ir.KindLeaf:
			s.cls[i] = clsLeaf
		case info.Kind == ir.KindView:
			if info.AliasArg >= len(x.Args) {
				return nil, fmt.Errorf("partition: %s (%s %q): missing aliased operand", x, x.Op, x.Name)
			}
			s.root[i] = s.root[x.Args[info.AliasArg].ID]
			s.cls[i] = clsView
			if info.SideEffect {
				s.cls[i] = clsCompute
			}
		default:
			s.cls[i] = clsCompute
		}
		t, err := x.Type.Shape.Eval(b)
		if err != nil {
			return nil, fmt.Errorf("partition: %s (%s %q): %w", x, x.Op, x.Name, err)
		}
		bt, err := ir.Type{DType: x.Type.DType, Shape: t}.Bytes()
		if err != nil {
			return nil, fmt.Errorf("partition: %s (%s %q): %w", x, x.Op, x.Name, err)
		}
		s.bytes[i] = float64(bt)
		if s.cls[i] != clsCompute {
			continue
		}
		seen := map[int]bool{}
		for _, a := range x.Args {
			if !seen[a.ID] {
				seen[a.ID] = true
				s.uses[i] = append(s.uses[i], a.ID)
			}
		}
		s.sup[i] = prof.Supports(x)
		cpu, err := prof.Estimate(x, target.CPU, b)
		if err != nil {
			return nil, fmt.Errorf("partition: %w", err)
		}
		s.est[i] = [2]float64{math.Inf(1), cpu.DeviceUS}
		if prof.HasNPU() && s.sup[i].OK {
			npu, err := prof.Estimate(x, target.NPU, b)
			if err != nil {
				return nil, fmt.Errorf("partition: %w", err)
			}
			t := npu.DeviceUS
			if !prof.GraphCapture {
				t = max(t, npu.LaunchUS) // eager: the host launch and the device overlap
			}
			s.est[i][0] = t
		}
	}
	return s, nil
}

// place makes the first placement: supported nodes on the NPU, the policy's
// pins, then every state and its writers on one device.
func (s *state) place(policy Policy) error {
	for i, x := range s.g.Nodes {
		if s.cls[i] != clsCompute {
			continue
		}
		s.dev[i] = target.CPU
		if s.prof.HasNPU() && s.sup[i].OK {
			s.dev[i] = target.NPU
			// A node whose rule says it stays on the NPU is never moved by
			// the cost model (a placement policy may still decide).
			s.pinned[i] = s.sup[i].Stay != ""
		} else if s.prof.HasNPU() {
			s.why[i] = s.sup[i].Reason
		}
		if policy == nil {
			continue
		}
		switch d := policy.Place(x, s.sup[i]); d {
		case "":
		case target.NPU:
			if !s.prof.HasNPU() || !s.sup[i].OK {
				return fmt.Errorf("partition: the placement policy put %s (%s %q) on the npu, but %s", x, x.Op, x.Name, s.sup[i].Reason)
			}
			s.dev[i], s.pinned[i] = d, true
		case target.CPU:
			s.dev[i], s.pinned[i] = d, true
			if s.why[i] == "" {
				s.why[i] = "pinned to the cpu by the placement policy"
			}
		default:
			return fmt.Errorf("partition: the placement policy returned unknown device %q for %s (%s %q)", d, x, x.Op, x.Name)
		}
	}
	// A state and its writers share a device: the cache never travels.
	writers := map[int][]int{}
	for i := range s.g.Nodes {
		if s.cls[i] == clsCompute && s.root[i] != i && s.g.Nodes[s.root[i]].Op == ir.OpState {
			writers[s.root[i]] = append(writers[s.root[i]], i)
		}
	}
	for _, st := range s.g.Leaves(ir.OpState) {
		d := target.CPU
		if s.prof.HasNPU() {
			d = target.NPU
		}
		for _, w := range writers[st.ID] {
			if s.dev[w] == target.CPU {
				d = target.CPU
			}
		}
		s.dev[st.ID] = d
		for _, w := range writers[st.ID] {
			if s.dev[w] != d {
				if s.pinned[w] {
					return fmt.Errorf("partition: %s (%s %q) is pinned to the %s but writes state %q, which another writer keeps on the %s",
						s.g.Nodes[w], s.g.Nodes[w].Op, s.g.Nodes[w].Name, s.dev[w], st.Name, d)
				}
				s.dev[w] = d
				s.why[w] = fmt.Sprintf("writes state %q, held on the cpu", st.Name)
			}
			s.pinned[w] = true
		}
	}
	return nil
}

// cost is the modelled step time of the current placement: compute on the
// chosen devices, one copy per (value, device) pair that crosses (plus, on
// a target that captures, the extra segment replay the copy causes),
// uploads of inputs read on the NPU and downloads of outputs left there.
func (s *state) cost() float64 {
	c := 0.0
	type need struct {
		id int
		d  target.Device
	}
	seen := map[need]bool{}
	for i := range s.g.Nodes {
		if s.cls[i] != clsCompute {
			continue
		}
		if s.dev[i] == target.NPU {
			c += s.est[i][0]
		} else {
			c += s.est[i][1]
		}
		for _, a := range s.uses[i] {
			h := s.home(a)
			if h == "" || h == s.dev[i] {
				continue
			}
			k := need{a, s.dev[i]}
			if !seen[k] {
				seen[k] = true
				c += s.prof.CopyUS(s.bytes[a])
				if s.g.Nodes[s.root[a]].Op != ir.OpInput && s.prof.GraphCapture {
					// A copy splits a captured segment in two: one more replay.
					c += s.prof.Overheads.GraphLaunchUS
				}
			}
		}
	}
	for _, o := range s.g.Outputs {
		if s.home(o.ID) == target.NPU {
			c += s.prof.CopyUS(s.bytes[o.ID])
		}
	}
	return c
}

// refine moves single nodes between devices while that lowers the cost.
// It is a local search: each sweep tries every free node once, in graph
// order; it stops when a sweep changes nothing.
func (s *state) refine() int {
	best := s.cost()
	for sweep := 0; sweep < 8; sweep++ {
		improved := false
		for i := range s.g.Nodes {
			if s.cls[i] != clsCompute || s.pinned[i] || !s.sup[i].OK {
				continue
			}
			old := s.dev[i]
			s.dev[i] = target.CPU
			if old == target.CPU {
				s.dev[i] = target.NPU
			}
			if c := s.cost(); c < best-1e-6 {
				best, improved = c, true
			} else {
				s.dev[i] = old
			}
		}
		if !improved {
			break
		}
	}
	moved := 0
	for i := range s.g.Nodes {
		if s.cls[i] == clsCompute && !s.pinned[i] && s.sup[i].OK && s.dev[i] == target.CPU {
			moved++
			s.why[i] = "moved to the cpu by the cost model (cheaper than the copies it would need)"
		}
	}
	return moved
}

// build inserts the transfers, orders the graph into few segments and
// fills the result.
func (s *state) build() (*ir.Graph, *Result, error) {
	g := s.g
	dev := map[*ir.Node]target.Device{}
	for i, x := range g.Nodes {
		switch {
		case s.cls[i] == clsCompute:
			dev[x] = s.dev[i]
		case s.cls[i] == clsView || x.Op == ir.OpState:
			dev[x] = s.home(i)
		}
	}
	why := map[*ir.Node]string{}
	for i, x := range g.Nodes {
		why[x] = s.why[i]
	}
	nodes, err := s.insertTransfers(dev)
	if err != nil {
		return nil, nil, err
	}
	order := clusterOrder(nodes, dev)
	out := &ir.Graph{Name: g.Name, Nodes: order, Outputs: g.Outputs, Meta: g.Meta}
	for i, x := range order {
		x.ID = i
	}
	if err := ir.Verify(out); err != nil {
		return nil, nil, fmt.Errorf("partition: the partitioned graph is invalid: %w", err)
	}
	res, segOf, err := s.result(order, dev, why)
	if err != nil {
		return nil, nil, err
	}
	if err := CheckAcyclic(out, segOf); err != nil {
		return nil, nil, err
	}
	return out, res, nil
}

// insertTransfers rewires every operand read on another device than its
// home through one transfer per value and device (after a gathering cont
// on the NPU when the value is not contiguous), and returns the nodes with
// the new ones before their first reader. It records the new nodes'
// devices in dev.
func (s *state) insertTransfers(dev map[*ir.Node]target.Device) ([]*ir.Node, error) {
	g := s.g
	type key struct {
		id int
		d  target.Device
	}
	transfers := map[key]*ir.Node{}
	var nodes []*ir.Node
	for i, x := range g.Nodes {
		if s.cls[i] == clsCompute {
			for j, a := range x.Args {
				h := s.home(a.ID)
				if h == "" || h == s.dev[i] || g.Nodes[s.root[a.ID]].Op == ir.OpInput {
					continue
				}
				k := key{a.ID, s.dev[i]}
				t := transfers[k]
				if t == nil {
					src := a
					if h == target.NPU && !target.Contiguous(a) {
						// The device copies contiguous bytes only: gather the
						// window first, on the NPU.
						c := &ir.Node{Op: ir.OpCont, Args: []*ir.Node{a}, Type: a.Type, Name: a.Name + " (cont)", Layer: a.Layer}
						if sup := s.prof.Supports(c); sup.OK {
							if err := ir.CheckNode(c); err != nil {
								return nil, fmt.Errorf("partition: %s: %w", a, err)
							}
							nodes = append(nodes, c)
							dev[c] = target.NPU
							src = c
						}
					}
					t = &ir.Node{Op: ir.OpTransfer, Args: []*ir.Node{src}, Type: src.Type, Layer: src.Layer,
						Attrs: ir.Attrs{ir.AttrFrom: string(h), ir.AttrTo: string(s.dev[i])},
						Name:  fmt.Sprintf("%s (to %s)", a.Name, s.dev[i])}
					if err := ir.CheckNode(t); err != nil {
						return nil, fmt.Errorf("partition: transfer of %s: %w", a, err)
					}
					nodes = append(nodes, t)
					dev[t] = s.dev[i]
					transfers[k] = t
				}
				x.Args[j] = t
			}
		}
		nodes = append(nodes, x)
	}
	return nodes, nil
}

// result describes the partitioned order: each node's device, the copies,
// the CPU fallbacks and the segments, and each node's segment (-1 for
// none).
func (s *state) result(order []*ir.Node, dev map[*ir.Node]target.Device, why map[*ir.Node]string) (*Result, []int, error) {
	res := &Result{Target: s.prof.Name, Bindings: s.b, Device: make([]target.Device, len(order)), Copies: []Copy{}, Fallbacks: []Fallback{}, Segments: []Segment{}}
	segOf := make([]int, len(order))
	var cur *Segment
	for i, x := range order {
		res.Device[i] = dev[x]
		segOf[i] = -1
		switch {
		case x.Op == ir.OpTransfer:
			from := x.Attrs.From()
			nb, err := s.valueBytes(x)
			if err != nil {
				return nil, nil, err
			}
			res.Copies = append(res.Copies, Copy{Node: i, Value: x.Args[0].ID, Name: x.Name, From: target.Device(from), To: dev[x], Bytes: nb})
			res.CopyBytes += nb
			cur = nil // a copy is a host interaction: it ends the segment
		case isCompute(x):
			d := dev[x]
			if d == target.NPU {
				res.NPUNodes++
			} else {
				res.CPUNodes++
				if s.prof.HasNPU() {
					res.Fallbacks = append(res.Fallbacks, Fallback{Node: i, Op: x.Op, Name: x.Name, Reason: why[x]})
				}
			}
			if cur == nil || cur.Device != d {
				res.Segments = append(res.Segments, Segment{ID: len(res.Segments), Device: d})
				cur = &res.Segments[len(res.Segments)-1]
			}
			cur.Nodes = append(cur.Nodes, i)
			segOf[i] = cur.ID
		}
	}
	for i := range res.Fallbacks {
		if res.Fallbacks[i].Reason == "" {
			res.Fallbacks[i].Reason = "helper on the cpu side of a copy"
		}
	}
	return res, segOf, nil
}

func (s *state) valueBytes(x *ir.Node) (int64, error) {
	t, err := x.Type.Shape.Eval(s.b)
	if err != nil {
		return 0, fmt.Errorf("partition: %s: %w", x, err)
	}
	return ir.Type{DType: x.Type.DType, Shape: t}.Bytes()
}

func isCompute(n *ir.Node) bool {
	info, ok := n.Info()
	return ok && n.Op != ir.OpTransfer && (info.Kind == ir.KindCompute || info.Kind == ir.KindView && info.SideEffect)
}

// clusterOrder is a topological order that keeps each device's work
// together: the ready leaves, views and nodes of the current device go in
// their original order, then ready copies, and only when nothing else is
// ready does it switch device. Ties keep the original order, so a
// single-device graph keeps its order, and so its node IDs, exactly: the
// partitioned graph is numbered as the graph the passes left, and the IDs
// of the report and of the drawings agree up to the first inserted copy.
func clusterOrder(nodes []*ir.Node, dev map[*ir.Node]target.Device) []*ir.Node {
	pos := make(map[*ir.Node]int, len(nodes))
	for i, n := range nodes {
		pos[n] = i
	}
	indeg := make([]int, len(nodes))
	users := make([][]int, len(nodes))
	for i, n := range nodes {
		seen := map[*ir.Node]bool{}
		for _, a := range n.Args {
			if seen[a] {
				continue
			}
			seen[a] = true
			indeg[i]++
			users[pos[a]] = append(users[pos[a]], i)
		}
	}
	const (
		qFree = iota
		qCPU
		qNPU
		qCopy
	)
	class := func(i int) int {
		n := nodes[i]
		switch {
		case n.Op == ir.OpTransfer:
			return qCopy
		case !isCompute(n):
			return qFree
		case dev[n] == target.NPU:
			return qNPU
		}
		return qCPU
	}
	var ready [4][]int
	push := func(i int) {
		c := class(i)
		q := ready[c]
		k := sort.SearchInts(q, i)
		q = append(q, 0)
		copy(q[k+1:], q[k:])
		q[k] = i
		ready[c] = q
	}
	for i := range nodes {
		if indeg[i] == 0 {
			push(i)
		}
	}
	cur := qNPU
	for i := range nodes {
		if c := class(i); c == qCPU || c == qNPU {
			cur = c
			break
		}
	}
	out := make([]*ir.Node, 0, len(nodes))
	for len(out) < len(nodes) {
		var c int
		switch {
		case len(ready[qFree]) > 0 && (len(ready[cur]) == 0 || ready[qFree][0] < ready[cur][0]):
			c = qFree
		case len(ready[cur]) > 0:
			c = cur
		case len(ready[qCopy]) > 0:
			c = qCopy
		default:
			cur = qCPU + qNPU - cur
			c = cur
			if len(ready[c]) == 0 {
				return nodes // unreachable for a verified graph
			}
		}
		i := ready[c][0]
		ready[c] = ready[c][1:]
		out = append(out, nodes[i])
		for _, u := range users[i] {
			if indeg[u]--; indeg[u] == 0 {
				push(u)
			}
		}
	}
	return out
}
