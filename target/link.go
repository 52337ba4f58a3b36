package target

import (
	"fmt"
	"sort"

	"github.com/irtool/irtool/ir"
)

// The link model: the time of one collective between the NPUs of a
// server, by the α-β(-γ) model the HCCL user guide gives for its
// algorithms ("Collective Communication Algorithms", pages Mesh and Ring):
// α is the fixed cost of one algorithm step, β the time per byte of one
// link, γ the time per byte of the reduction. docs/LOWERING.md lists the
// figures and which of them are assumptions.

// Algorithm is the collective algorithm the link model assumes.
type Algorithm string

const (
	// Mesh is HCCL's algorithm on a full-mesh topology: every NPU talks
	// to every other one at once over its own link, so all_reduce costs
	// 2α + 2(n/p)β + ((p-1)/p)nγ whatever p is.
	Mesh Algorithm = "mesh"
	// Ring passes chunks around a ring: all_reduce costs
	// 2(p-1)α + 2((p-1)/p)nβ + ((p-1)/p)nγ.
	Ring Algorithm = "ring"
)

// Interconnect is the NPU-to-NPU fabric of a multi-NPU server.
type Interconnect struct {
	Name string `json:"name"`
	// LinkBW is the bandwidth of one link between two NPUs, bytes/s in
	// each direction (1/β).
	LinkBW float64 `json:"link_bw"`
	// StepUS is α: the fixed cost of one step of an algorithm (the
	// notify/wait handshake and the task that starts the transfer).
	StepUS float64 `json:"step_us"`
	// ReduceBW is 1/γ: the bytes/s a reduction (the sum of all_reduce and
	// reduce_scatter) consumes on the NPU.
	ReduceBW float64 `json:"reduce_bw"`
	// Algorithm is the algorithm HCCL picks on this topology.
	Algorithm Algorithm `json:"algorithm"`
	// MaxRanks is the number of NPUs the fabric joins (one server).
	MaxRanks int    `json:"max_ranks"`
	Source   string `json:"source"`
}

// CollectiveBytes is the n of the link model for collective c: the
// all_reduce buffer, the all_gather result, the reduce_scatter operand,
// the message of a send or recv; b binds symbolic dims (nil when static).
func CollectiveBytes(c ir.Collective, b ir.Bindings) (float64, error) {
	t := c.Type
	if c.Op == ir.OpAllGather {
		t = c.Result
	}
	n, err := bytesOf(t, b)
	if err != nil {
		return 0, fmt.Errorf("target: %s: %w", c.Node, err)
	}
	return n, nil
}

// CollectiveUS is the modelled time of one collective op moving n bytes
// (CollectiveBytes) among ranks NPUs. A recv costs nothing: its time is
// its send's, which the pipeline's previous stage waits for.
func (ic *Interconnect) CollectiveUS(op ir.Op, n float64, ranks int) (float64, error) {
	if ic == nil {
		return 0, fmt.Errorf("target: no NPU interconnect to model %s", op)
	}
	if ranks < 1 {
		return 0, fmt.Errorf("target: %s over %d ranks", op, ranks)
	}
	if ic.MaxRanks > 0 && ranks > ic.MaxRanks {
		return 0, fmt.Errorf("target: %s over %d ranks: the %s joins %d NPUs", op, ranks, ic.Name, ic.MaxRanks)
	}
	p := float64(ranks)
	alpha, beta, gamma := ic.StepUS, 1e6/ic.LinkBW, 0.0
	if ic.ReduceBW > 0 {
		gamma = 1e6 / ic.ReduceBW
	}
	frac := (p - 1) / p
	switch op {
	case ir.OpSend:
		return alpha + n*beta, nil
	case ir.OpRecv:
		return 0, nil
	}
	if ranks == 1 {
		return 0, nil // a group of one copies nothing
	}
	var steps, moved float64 // steps of α and bytes over the busiest link
	reduce := 0.0
	switch ic.Algorithm {
	case Mesh:
		switch op {
		case ir.OpAllGather:
			steps, moved = 1, n/p
		case ir.OpReduceScatter:
			steps, moved, reduce = 1, n/p, frac*n
		case ir.OpAllReduce:
			steps, moved, reduce = 2, 2*n/p, frac*n
		default:
			return 0, fmt.Errorf("target: no link model for %s", op)
		}
	case Ring:
		switch op {
		case ir.OpAllGather:
			steps, moved = p-1, frac*n
		case ir.OpReduceScatter:
			steps, moved, reduce = p-1, frac*n, frac*n
		case ir.OpAllReduce:
			steps, moved, reduce = 2*(p-1), 2*frac*n, frac*n
		default:
			return 0, fmt.Errorf("target: no link model for %s", op)
		}
	default:
		return 0, fmt.Errorf("target: unknown collective algorithm %q", ic.Algorithm)
	}
	return steps*alpha + moved*beta + reduce*gamma, nil
}

// CollectiveCost is the time of the collectives of one kind in a step.
type CollectiveCost struct {
	Op    ir.Op   `json:"op"`
	Group string  `json:"group"`
	Ranks int64   `json:"ranks"`
	Count int     `json:"count"`
	Bytes float64 `json:"bytes"` // n summed over the calls
	US    float64 `json:"us"`
	// Host counts the calls the profile's rules leave on the host (a
	// host collective over the ranks' communicator, costed as a CPU node
	// with the copies around it, plus its link time).
	Host int `json:"host,omitempty"`
}

// StepEstimate is the modelled decode step of one rank's graph.
type StepEstimate struct {
	// ComputeUS is the device time of the nodes less the collectives'
	// link time: each on the NPU when the profile supports it there, else
	// on the CPU plus the two copies that take its operands off the NPU
	// and its result back.
	ComputeUS float64 `json:"compute_us"`
	// CPUNodes counts the nodes the profile leaves on the CPU.
	CPUNodes int `json:"cpu_nodes"`
	// CollectiveUS is the link time of the collectives (CollectiveUS).
	CollectiveUS float64 `json:"collective_us"`
	// LaunchUS is one graph replay's host launch plus the upload of the
	// inputs and the download of the outputs.
	LaunchUS float64 `json:"launch_us"`
	// StepUS is their sum: the collectives run on the NPU's stream,
	// inside the captured graph, so nothing overlaps.
	StepUS      float64          `json:"step_us"`
	Collectives []CollectiveCost `json:"collectives"`
}

// linkUS is the link model's time of collective node n under b.
func (p *Profile) linkUS(n *ir.Node, b ir.Bindings) (float64, error) {
	c := ir.Collective{Node: n, Op: n.Op, Ranks: n.Attrs.Ranks(), Type: n.Type, Result: n.Type}
	if n.Op != ir.OpRecv && len(n.Args) > 0 {
		c.Type = n.Args[0].Type
	}
	nb, err := CollectiveBytes(c, b)
	if err != nil {
		return 0, err
	}
	us, err := p.Interconnect.CollectiveUS(c.Op, nb, int(c.Ranks))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", n, err)
	}
	return us, nil
}

// EstimateStep models one step of g under bindings b as one captured
// graph (aclmdlRI) with the collectives the profile's rules put on the NPU
// issued on its stream (HcclAllReduce and the others inside the capture,
// HCCLRules): every node's device time (Estimate; a
// collective's is its link time), one GraphLaunchUS and the host copies of
// the graph's inputs and outputs. A node the rules leave on the CPU costs
// its CPU time plus the copies of its operands and result; a collective
// there costs its link time too. It is the model of a tensor- or
// pipeline-parallel rank; a lowered program's prediction (cann.Predict)
// follows the program's segments and gives the same time when the program
// is one captured segment.
func (p *Profile) EstimateStep(g *ir.Graph, b ir.Bindings) (StepEstimate, error) {
	var st StepEstimate
	if p.NPU == nil {
		return st, fmt.Errorf("target: %s has no NPU to model a rank's step on", p.Name)
	}
	costs := map[string]*CollectiveCost{}
	link := map[*ir.Node]float64{}
	for _, c := range ir.Collectives(g) {
		n, err := CollectiveBytes(c, b)
		if err != nil {
			return st, err
		}
		us, err := p.Interconnect.CollectiveUS(c.Op, n, int(c.Ranks))
		if err != nil {
			return st, fmt.Errorf("%s: %w", c.Node, err)
		}
		key := fmt.Sprintf("%s\x00%s\x00%d", c.Op, c.Group, c.Ranks)
		cc := costs[key]
		if cc == nil {
			cc = &CollectiveCost{Op: c.Op, Group: c.Group, Ranks: c.Ranks}
			costs[key] = cc
		}
		cc.Count++
		cc.Bytes += n
		cc.US += us
		st.CollectiveUS += us
		link[c.Node] = us
		if !p.Supports(c.Node).OK {
			cc.Host++
		}
	}
	for _, n := range g.Nodes {
		if n == nil {
			continue
		}
		info, ok := n.Info()
		if !ok {
			return st, fmt.Errorf("target: %s: unknown op %q", n, n.Op)
		}
		if info.Kind == ir.KindLeaf || info.Kind == ir.KindView && !info.SideEffect {
			continue
		}
		if s := p.Supports(n); s.OK {
			if ir.IsCollective(n.Op) {
				continue // its link time, above
			}
			e, err := p.Estimate(n, NPU, b)
			if err != nil {
				return st, err
			}
			st.ComputeUS += e.DeviceUS
			continue
		}
		e, err := p.Estimate(n, CPU, b)
		if err != nil {
			return st, err
		}
		e.DeviceUS -= link[n] // counted in CollectiveUS
		st.CPUNodes++
		in, out, _, err := ioBytes(n, b)
		if err != nil {
			return st, err
		}
		st.ComputeUS += e.DeviceUS + p.CopyUS(in) + p.CopyUS(out)
	}
	st.LaunchUS = p.Overheads.GraphLaunchUS
	for _, n := range g.Nodes {
		if n != nil && n.Op == ir.OpInput {
			if nb, err := bytesOf(n.Type, b); err == nil {
				st.LaunchUS += p.CopyUS(nb)
			}
		}
	}
	for _, o := range g.Outputs {
		if nb, err := bytesOf(o.Type, b); err == nil {
			st.LaunchUS += p.CopyUS(nb)
		}
	}
	st.StepUS = st.ComputeUS + st.CollectiveUS + st.LaunchUS
	keys := make([]string, 0, len(costs))
	for k := range costs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		st.Collectives = append(st.Collectives, *costs[k])
	}
	return st, nil
}
