package passes

import (
	"fmt"
	"strconv"

	"github.com/irtool/irtool/ir"
)

// Pipeline parallelism (PP): the layers are split into consecutive stages,
// one per rank, and the hidden state crosses from a stage to the next by
// send/recv (HcclSend/HcclRecv). No arithmetic changes, so the logits are
// one device's bit for bit. The last stage sends the logits back to every
// other stage (as a broadcast would), so every rank's step returns them.

// PPGroup is the communicator of the pipeline's sends and receives.
const PPGroup = "pp"

// ShardPP splits g into stages graphs, stage k holding the layers
// [first_k, first_k + n_k) (n_k = n_layer/stages, the first stages
// taking one more when they do not divide). Nodes outside the layers
// (Node.Layer -1) that depend only on inputs and weights (the embedding
// lookup, the masks) are computed by every stage that needs them; the
// others (the output norm and logits) belong to the last stage. Every
// value a stage reads from an earlier one becomes a recv, paired with a
// send after the value on its stage; a value read from a later stage is
// an error naming the nodes. The result passes ir.Verify and, together,
// ir.VerifyGroupCollectives of the pipeline's group (the graph may hold
// collectives of other groups: the stages of a tensor-parallel rank). g
// is not modified.
func ShardPP(g *ir.Graph, stages int) ([]*ir.Graph, error) {
	fail := func(format string, args ...any) ([]*ir.Graph, error) {
		return nil, fmt.Errorf("pipeline over %d stages: %s", stages, fmt.Sprintf(format, args...))
	}
	if len(g.Outputs) != 1 {
		return fail("the graph has %d outputs, want 1 (the logits)", len(g.Outputs))
	}
	nLayer := 0
	for _, n := range g.Nodes {
		nLayer = max(nLayer, n.Layer+1)
	}
	if stages < 1 || stages > nLayer {
		return fail("want 1..%d stages (the graph has %d layers)", nLayer, nLayer)
	}
	a, err := ppAssign(g, stages, nLayer)
	if err != nil {
		return fail("%v", err)
	}
	graphs := make([]*ir.Graph, stages)
	for k := range stages {
		c, err := ppStage(g, stages, k, a)
		if err != nil {
			return nil, err
		}
		if err := ir.Verify(c); err != nil {
			return fail("stage %d: %v", k, err)
		}
		graphs[k] = c
	}
	if err := ir.VerifyGroupCollectives(graphs, PPGroup); err != nil {
		return fail("%v", err)
	}
	return graphs, nil
}

// ppTransfer is a value (node position) sent from one stage to another.
type ppTransfer struct{ node, from, to int }

// ppAssignment is ShardPP's placement of a graph's nodes on stages.
type ppAssignment struct {
	// st[i]: the stage that computes node i, -1 when every stage that
	// needs it computes it (leaves, and what depends on leaves only).
	st        []int
	transfers []ppTransfer
	out       int // the output's position
}

// ppAssign places g's layers on stages (consecutive layers, the remainder
// to the first stages) and lists the values crossing stages.
func ppAssign(g *ir.Graph, stages, nLayer int) (ppAssignment, error) {
	// stageOf[layer]: consecutive layers, the remainder to the first stages.
	stageOf := make([]int, nLayer)
	for s, l := 0, 0; s < stages; s++ {
		count := nLayer/stages + map[bool]int{true: 1}[s < nLayer%stages]
		for range count {
			stageOf[l] = s
			l++
		}
	}
	st := make([]int, len(g.Nodes))
	pos := make(map[*ir.Node]int, len(g.Nodes))
	var transfers []ppTransfer
	seen := map[[2]int]bool{}
	for i, n := range g.Nodes {
		pos[n] = i
		switch {
		case n.IsLeaf():
			st[i] = -1
		case n.Layer >= 0 && n.Layer < nLayer:
			st[i] = stageOf[n.Layer]
		default:
			st[i] = -1
			for _, a := range n.Args {
				st[i] = max(st[i], st[pos[a]])
			}
		}
		for _, a := range n.Args {
			from := st[pos[a]]
			switch {
			case from < 0 || from == st[i]:
			case st[i] >= 0 && from > st[i]:
				return ppAssignment{}, fmt.Errorf("%s (%q, stage %d) reads %s (%q) of the later stage %d", n, n.Name, st[i], a, a.Name, from)
			case st[i] < 0:
				return ppAssignment{}, fmt.Errorf("%s (%q) is computed on every stage but reads %s (%q) of stage %d", n, n.Name, a, a.Name, from)
			default:
				if k := [2]int{pos[a], st[i]}; !seen[k] {
					seen[k] = true
					transfers = append(transfers, ppTransfer{pos[a], from, st[i]})
				}
			}
		}
	}
	out := pos[g.Outputs[0]]
	if st[out] != stages-1 && stages > 1 {
		return ppAssignment{}, fmt.Errorf("the output %s (%q) is not computed on the last stage", g.Outputs[0], g.Outputs[0].Name)
	}
	return ppAssignment{st: st, transfers: transfers, out: out}, nil
}

// ppStage builds stage k's graph from a clone of g: the receives and
// sends of pa's transfers, the logits sent from the last stage to the
// others, and the other stages' writes dropped.
func ppStage(g *ir.Graph, stages, k int, pa ppAssignment) (*ir.Graph, error) {
	last := stages - 1
	attrs := func(peer int) ir.Attrs {
		return ir.Attrs{ir.AttrRanks: int64(stages), ir.AttrGroup: PPGroup, ir.AttrPeer: int64(peer)}
	}
	c := g.Clone()
	nodes := cloneNodes(c.Nodes) // the clone's nodes by the original's positions
	var lastSend *ir.Node
	// Receives first (in node order), then the sends after their
	// values; each is placed next to the node it stands for.
	for _, t := range pa.transfers {
		if t.to != k {
			continue
		}
		a := nodes[t.node]
		rv := &ir.Node{Op: ir.OpRecv, Type: a.Type, Attrs: attrs(t.from), Name: a.Name + " (recv)", Layer: a.Layer}
		if err := c.Bind(rv); err != nil {
			return nil, err
		}
		c.ReplaceUses(a, rv)
		c.Insert(a.ID+1, rv)
	}
	for _, t := range pa.transfers {
		if t.from != k {
			continue
		}
		a := nodes[t.node]
		sn, err := c.AddAfter(a, nil, ir.OpSend, []*ir.Node{a}, attrs(t.to), a.Name+" (send to "+strconv.Itoa(t.to)+")")
		if err != nil {
			return nil, err
		}
		lastSend = sn
	}
	logits := nodes[pa.out]
	if k == last {
		for j := range last {
			sn, err := c.Add(ir.OpSend, []*ir.Node{logits}, attrs(j))
			if err != nil {
				return nil, err
			}
			sn.Name, sn.Layer = logits.Name+" (send to "+strconv.Itoa(j)+")", -1
		}
	} else {
		var dep []*ir.Node
		if lastSend != nil {
			dep = []*ir.Node{lastSend} // after the stage's own sends
		}
		rv, err := c.AddTyped(ir.OpRecv, dep, attrs(last), logits.Type)
		if err != nil {
			return nil, err
		}
		rv.Name = logits.Name + " (recv)"
		c.Outputs = []*ir.Node{rv}
	}
	// Writes of other stages' layers go; Compact then keeps what this
	// stage's outputs and writes need.
	drop := map[*ir.Node]bool{}
	for i, n := range nodes {
		if info, ok := n.Info(); ok && info.SideEffect && pa.st[i] != k && !ir.IsCollective(n.Op) {
			drop[n] = true
		}
	}
	kept := c.Nodes[:0]
	for _, n := range c.Nodes {
		if !drop[n] {
			kept = append(kept, n)
		}
	}
	c.Nodes = kept
	c.Compact()
	if c.Meta == nil {
		c.Meta = map[string]string{}
	}
	c.Meta["pp_stage"] = strconv.Itoa(k)
	c.Meta["pp_stages"] = strconv.Itoa(stages)
	return c, nil
}

// cloneNodes copies a node list (the clone's nodes at the original's
// positions, before insertions move them).
func cloneNodes(ns []*ir.Node) []*ir.Node { return append([]*ir.Node(nil), ns...) }
