package ir

import (
	"errors"
	"fmt"
)

// The collective ops: communication between the ranks of a group of
// devices that each run their own graph (tensor and pipeline parallelism).
// They follow HCCL's operations (HcclAllReduce, HcclAllGather,
// HcclReduceScatter, HcclSend, HcclRecv; Huawei's HCCL API reference):
// every rank of the group issues the same collectives in the same order
// with the same count, dtype and reduction (VerifyCollectives checks a set
// of per-rank graphs for it), and a send is paired with the peer's recv.
const (
	// OpAllReduce sums x over the ranks; every rank gets the sum.
	OpAllReduce Op = "all_reduce"
	// OpAllGather joins the ranks' x along dim, rank 0 first.
	OpAllGather Op = "all_gather"
	// OpReduceScatter sums x over the ranks and keeps this rank's slice
	// of dim (slice r of ranks equal slices).
	OpReduceScatter Op = "reduce_scatter"
	// OpSend sends x to rank peer; its result is x (the bytes sent).
	OpSend Op = "send"
	// OpRecv receives a tensor of its declared type from rank peer; an
	// optional operand is an ordering dependency only.
	OpRecv Op = "recv"
)

// The attributes of the collective ops.
const (
	// AttrRanks is the number of ranks in the group (required, >= 1).
	AttrRanks = "ranks"
	// AttrGroup names the communicator ("tp" when absent).
	AttrGroup = "group"
	// AttrReduce is the reduction of all_reduce and reduce_scatter: "sum"
	// (HCCL_REDUCE_SUM), the default and the only one supported.
	AttrReduce = "reduce"
	// AttrPeer is the other rank of a send or recv.
	AttrPeer = "peer"
	// AttrCounts, on all_gather, lists each rank's size along dim when
	// they differ (HcclAllGatherV); absent, every rank contributes its
	// operand's size.
	AttrCounts = "counts"
)

// DefaultGroup is the communicator of a collective without attribute group.
const DefaultGroup = "tp"

// Ranks returns attribute ranks, 1 when absent.
func (a Attrs) Ranks() int64 { return a.intOr(AttrRanks, 1) }

// Group returns attribute group, DefaultGroup when absent.
func (a Attrs) Group() string {
	if v, ok := a.Str(AttrGroup); ok {
		return v
	}
	return DefaultGroup
}

// Reduce returns attribute reduce, "sum" when absent.
func (a Attrs) Reduce() string {
	if v, ok := a.Str(AttrReduce); ok {
		return v
	}
	return "sum"
}

// Peer returns attribute peer, -1 when absent.
func (a Attrs) Peer() int64 { return a.intOr(AttrPeer, -1) }

// Counts returns attribute counts, nil when absent.
func (a Attrs) Counts() []int64 { v, _ := a.Ints(AttrCounts); return v }

// GatherDim returns attribute dim of all_gather and reduce_scatter, 0
// when absent.
func (a Attrs) GatherDim() int64 { return a.intOr(AttrDim, 0) }

// IsCollective reports whether op communicates between ranks (its
// record in the default set has the Collective flag).
func IsCollective(op Op) bool {
	info, ok := Lookup(op)
	return ok && info.Collective
}

// CollectiveOps lists the ops of the default set with the Collective
// flag, sorted.
func CollectiveOps() []Op {
	var out []Op
	for _, info := range Ops() {
		if info.Collective {
			out = append(out, info.Name)
		}
	}
	return out
}

// maxRanks bounds attribute ranks (HCCL communicators are far smaller).
const maxRanks = 1 << 16

func checkGroup(n *Node) error {
	if err := CheckAttrRanges(n, AttrRange{Key: AttrRanks, Int: true, Min: 1, Max: maxRanks}); err != nil {
		return err
	}
	if v, ok := n.Attrs[AttrGroup]; ok {
		s, isStr := v.(string)
		if !isStr || s == "" || !isIdent(s) {
			return fmt.Errorf("attribute group must be an identifier, got %v", v)
		}
	}
	return nil
}

func checkReduce(n *Node) error {
	if v, ok := n.Attrs[AttrReduce]; ok {
		if s, isStr := v.(string); !isStr || s != "sum" {
			return fmt.Errorf("attribute reduce must be \"sum\", got %v", v)
		}
	}
	return nil
}

func checkPeer(n *Node) error {
	if err := checkGroup(n); err != nil {
		return err
	}
	p, ok := n.Attrs.Int(AttrPeer)
	if !ok {
		return fmt.Errorf("missing integer attribute %q", AttrPeer)
	}
	if p < 0 || p >= n.Attrs.Ranks() {
		return fmt.Errorf("peer %d is not a rank of %d", p, n.Attrs.Ranks())
	}
	return nil
}

// commDType reports whether a tensor of dtype dt can travel through a
// collective (HcclDataType has no quantised types).
func commDType(dt DType) bool {
	switch dt {
	case F32, F16, BF16, I32, I64, I8, I16:
		return true
	}
	return false
}

func gatherDim(n *Node) (int, error) {
	d, ok := n.Attrs.Int(AttrDim)
	if _, present := n.Attrs[AttrDim]; present && !ok {
		return 0, fmt.Errorf("attribute dim must be an integer")
	}
	if d < 0 || d >= MaxDims {
		return 0, fmt.Errorf("attribute dim %d is not in [0, %d)", d, MaxDims)
	}
	return int(d), nil
}

func init() {
	MustRegister(OpInfo{Name: OpAllReduce, Collective: true, Attrs: []string{AttrRanks, AttrGroup, AttrReduce}, MinArgs: 1,
		Doc: "all_reduce(x){ranks, group, reduce}: the sum of x over the ranks of group, on every rank (HcclAllReduce; f32 sums in rank order)",
		Infer: func(n *Node) (Type, error) {
			if err := checkGroup(n); err != nil {
				return Type{}, err
			}
			if err := checkReduce(n); err != nil {
				return Type{}, err
			}
			if dt := n.Args[0].Type.DType; dt != F32 && dt != F16 {
				return Type{}, fmt.Errorf("operand must be f32 or f16, got %s", dt)
			}
			return n.Args[0].Type, nil
		}})
	MustRegister(OpInfo{Name: OpAllGather, Collective: true, Attrs: []string{AttrRanks, AttrGroup, AttrDim, AttrCounts}, MinArgs: 1,
		Doc: "all_gather(x){ranks, group, dim, counts?}: the ranks' x joined along dim, rank 0 first (HcclAllGather; with counts, rank r's size along dim, HcclAllGatherV)",
		Infer: func(n *Node) (Type, error) {
			if err := checkGroup(n); err != nil {
				return Type{}, err
			}
			d, err := gatherDim(n)
			if err != nil {
				return Type{}, err
			}
			t := n.Args[0].Type
			if !commDType(t.DType) {
				return Type{}, fmt.Errorf("operand type %s cannot be gathered", t.DType)
			}
			x := t.Shape[d]
			r := n.Attrs.Ranks()
			if _, ok := n.Attrs[AttrCounts]; ok {
				counts, ok := n.Attrs.Ints(AttrCounts)
				if !ok || int64(len(counts)) != r {
					return Type{}, fmt.Errorf("attribute counts must list %d sizes", r)
				}
				sum, mine := int64(0), false
				for _, c := range counts {
					if c < 1 || c > 1<<40 {
						return Type{}, fmt.Errorf("count %d out of range", c)
					}
					sum += c
					mine = mine || x.IsConst() && x.Val == c
				}
				if !mine {
					return Type{}, fmt.Errorf("dim %d of %s is none of the counts %v", d, t, counts)
				}
				t.Shape[d] = C(sum)
				return t, nil
			}
			switch {
			case x.IsConst():
				if x.Val > (1<<40)/r {
					return Type{}, fmt.Errorf("dim %d of %s times %d ranks is too large", d, t, r)
				}
				x = C(x.Val * r)
			case x.Align <= 1 && x.scale() <= (1<<40)/r:
				x = Scaled(x.Sym, x.scale()*r)
			default:
				return Type{}, fmt.Errorf("dim %d of %s cannot be multiplied by %d", d, t, r)
			}
			t.Shape[d] = x
			return t, nil
		}})
	MustRegister(OpInfo{Name: OpReduceScatter, Collective: true, Attrs: []string{AttrRanks, AttrGroup, AttrDim, AttrReduce}, MinArgs: 1,
		Doc: "reduce_scatter(x){ranks, group, dim, reduce}: the sum of x over the ranks, slice rank of dim (HcclReduceScatter)",
		Infer: func(n *Node) (Type, error) {
			if err := checkGroup(n); err != nil {
				return Type{}, err
			}
			if err := checkReduce(n); err != nil {
				return Type{}, err
			}
			d, err := gatherDim(n)
			if err != nil {
				return Type{}, err
			}
			t := n.Args[0].Type
			if t.DType != F32 && t.DType != F16 {
				return Type{}, fmt.Errorf("operand must be f32 or f16, got %s", t.DType)
			}
			x, r := t.Shape[d], n.Attrs.Ranks()
			if !x.IsConst() || x.Val%r != 0 {
				return Type{}, fmt.Errorf("dim %d of %s is not a constant multiple of %d ranks", d, t, r)
			}
			t.Shape[d] = C(x.Val / r)
			return t, nil
		}})
	MustRegister(OpInfo{Name: OpSend, Collective: true, Attrs: []string{AttrRanks, AttrGroup, AttrPeer}, MinArgs: 1, SideEffect: true,
		Doc: "send(x){ranks, group, peer}: send x to rank peer, paired with its recv (HcclSend); the result is x",
		Infer: func(n *Node) (Type, error) {
			if err := checkPeer(n); err != nil {
				return Type{}, err
			}
			if !commDType(n.Args[0].Type.DType) {
				return Type{}, fmt.Errorf("operand type %s cannot be sent", n.Args[0].Type.DType)
			}
			return n.Args[0].Type, nil
		}})
	MustRegister(OpInfo{Name: OpRecv, Collective: true, Attrs: []string{AttrRanks, AttrGroup, AttrPeer}, MinArgs: 0, MaxArgs: 1, SideEffect: true,
		Doc: "recv(dep?){ranks, group, peer}: a tensor of the declared type from rank peer (HcclRecv); the operand only orders it",
		Check: func(n *Node) error {
			if err := checkPeer(n); err != nil {
				return err
			}
			if !commDType(n.Type.DType) {
				return fmt.Errorf("type %s cannot be received", n.Type.DType)
			}
			return nil
		}})
}

// Collective is one communication a rank's graph issues, as
// VerifyCollectives compares them across ranks.
type Collective struct {
	Node  *Node
	Op    Op
	Group string
	Ranks int64
	// Peer is the other rank of a send or recv, -1 otherwise.
	Peer int64
	// Type is what the rank contributes (the operand; a recv's result).
	Type Type
	// Dim is all_gather's and reduce_scatter's dim, 0 otherwise.
	Dim int64
	// Counts is all_gather's counts (nil: equal sizes).
	Counts []int64
	// Result is the node's type.
	Result Type
}

// String describes the call as errors name it.
func (c Collective) String() string {
	s := fmt.Sprintf("%s %s(%s) group %s", c.Node, c.Op, c.Type, c.Group)
	if c.Peer >= 0 {
		s += fmt.Sprintf(" peer %d", c.Peer)
	}
	if c.Op == OpAllGather || c.Op == OpReduceScatter {
		s += fmt.Sprintf(" dim %d", c.Dim)
	}
	return s
}

// Collectives lists the graph's collectives in node order.
func Collectives(g *Graph) []Collective {
	var out []Collective
	for _, n := range g.Nodes {
		if n == nil || !IsCollective(n.Op) {
			continue
		}
		c := Collective{Node: n, Op: n.Op, Group: n.Attrs.Group(), Ranks: n.Attrs.Ranks(), Peer: -1, Type: n.Type, Result: n.Type, Counts: n.Attrs.Counts()}
		if n.Op != OpRecv && len(n.Args) > 0 {
			c.Type = n.Args[0].Type
		}
		if n.Op == OpSend || n.Op == OpRecv {
			c.Peer = n.Attrs.Peer()
		}
		if n.Op == OpAllGather || n.Op == OpReduceScatter {
			c.Dim = n.Attrs.GatherDim()
		}
		out = append(out, c)
	}
	return out
}

// VerifyCollectives checks that the graphs, one per rank (rank i is
// graphs[i]), issue matching collectives: in each group, the group
// collectives (all_reduce, all_gather, reduce_scatter) form the same
// sequence on every rank, with the same op, type, dim and rank count, and
// the rank count is the number of graphs; every send from rank i to rank j
// is matched, in order, by a recv on rank j from rank i of the same type.
// A mismatch is an error naming both ranks, the nodes and the position in
// the sequence. Each graph must pass Verify on its own.
func VerifyCollectives(graphs []*Graph) error { return verifyCollectives(graphs, "") }

// VerifyGroupCollectives is VerifyCollectives on the collectives of one
// group only: the graphs are the ranks of that group, and may be ranks of
// other groups too (a pipeline stage of a tensor-parallel rank).
func VerifyGroupCollectives(graphs []*Graph, group string) error {
	return verifyCollectives(graphs, group)
}

func verifyCollectives(graphs []*Graph, only string) error {
	if len(graphs) == 0 {
		return errors.New("ir: verify collectives: no graphs")
	}
	n := int64(len(graphs))
	var el collectiveErrs
	cs := gatherCollectives(graphs, only, &el)
	cs.checkGroups(n, &el)
	cs.checkPointToPoint(&el)
	if len(el.errs) == 0 {
		return nil
	}
	return fmt.Errorf("ir: verify collectives of %d ranks: %w", n, errors.Join(el.errs...))
}

// collectiveErrs keeps the first 10 mismatches verifyCollectives finds.
type collectiveErrs struct{ errs []error }

func (e *collectiveErrs) add(format string, args ...any) {
	if len(e.errs) < 10 {
		e.errs = append(e.errs, fmt.Errorf(format, args...))
	}
}

// rankPair is a point-to-point transfer's sender and receiver.
type rankPair struct{ from, to int64 }

// rankCollectives are the collectives of every rank: the group
// collectives in issue order per rank and group, the sends and receives
// by pair.
type rankCollectives struct {
	groupSeq []map[string][]Collective
	groups   []string // in order of first appearance
	sends    map[rankPair][]Collective
	recvs    map[rankPair][]Collective
}

// gatherCollectives collects each rank's collectives (of group only, when
// it is not empty), reporting to el those whose rank count, counts or
// peer are wrong on their own.
func gatherCollectives(graphs []*Graph, only string, el *collectiveErrs) rankCollectives {
	n := int64(len(graphs))
	cs := rankCollectives{groupSeq: make([]map[string][]Collective, n), sends: map[rankPair][]Collective{}, recvs: map[rankPair][]Collective{}}
	seen := map[string]bool{}
	for r, g := range graphs {
		if g == nil {
			el.add("rank %d: nil graph", r)
			continue
		}
		cs.groupSeq[r] = map[string][]Collective{}
		for _, c := range Collectives(g) {
			if only != "" && c.Group != only {
				continue
			}
			if c.Ranks != n {
				el.add("rank %d: %s: ranks=%d, but there are %d ranks", r, c, c.Ranks, n)
				continue
			}
			if c.Counts != nil && (int64(len(c.Counts)) != n || c.Dim < 0 || c.Dim >= MaxDims || !c.Type.Shape[c.Dim].Equal(C(c.Counts[r]))) {
				el.add("rank %d: %s: contributes %s, counts %v give rank %d %d", r, c, c.Type, c.Counts, r, c.Counts[r])
			}
			switch c.Op {
			case OpSend:
				if c.Peer == int64(r) {
					el.add("rank %d: %s: sends to itself", r, c)
				}
				p := rankPair{int64(r), c.Peer}
				cs.sends[p] = append(cs.sends[p], c)
			case OpRecv:
				if c.Peer == int64(r) {
					el.add("rank %d: %s: receives from itself", r, c)
				}
				p := rankPair{c.Peer, int64(r)}
				cs.recvs[p] = append(cs.recvs[p], c)
			default:
				if !seen[c.Group] {
					seen[c.Group] = true
					cs.groups = append(cs.groups, c.Group)
				}
				cs.groupSeq[r][c.Group] = append(cs.groupSeq[r][c.Group], c)
			}
		}
	}
	return cs
}

// checkGroups reports, per group, the first collective where a rank's
// sequence differs from rank 0's.
func (cs rankCollectives) checkGroups(n int64, el *collectiveErrs) {
	for _, grp := range cs.groups {
		for r := 1; r < int(n); r++ {
			if cs.groupSeq[r] == nil || cs.groupSeq[0] == nil {
				continue
			}
			a, b := cs.groupSeq[0][grp], cs.groupSeq[r][grp]
		seq:
			for i := 0; i < len(a) || i < len(b); i++ {
				switch {
				case i >= len(a):
					el.add("group %s: collective %d: rank 0 issues none, rank %d issues %s", grp, i, r, b[i])
				case i >= len(b):
					el.add("group %s: collective %d: rank 0 issues %s, rank %d issues none", grp, i, a[i], r)
				case a[i].Op != b[i].Op || !a[i].Result.Equal(b[i].Result) || a[i].Dim != b[i].Dim || !equalInts(a[i].Counts, b[i].Counts) ||
					a[i].Counts == nil && !a[i].Type.Equal(b[i].Type):
					el.add("group %s: collective %d: rank 0 issues %s, rank %d issues %s", grp, i, a[i], r, b[i])
				default:
					continue
				}
				break seq
			}
		}
	}
}

// checkPointToPoint reports, per pair of ranks in order, the first send
// without its matching receive or the other way round.
func (cs rankCollectives) checkPointToPoint(el *collectiveErrs) {
	var pairs []rankPair
	for p := range cs.sends {
		pairs = append(pairs, p)
	}
	for p := range cs.recvs {
		if _, ok := cs.sends[p]; !ok {
			pairs = append(pairs, p)
		}
	}
	for i := 1; i < len(pairs); i++ {
		for j := i; j > 0 && (pairs[j].from < pairs[j-1].from || pairs[j].from == pairs[j-1].from && pairs[j].to < pairs[j-1].to); j-- {
			pairs[j], pairs[j-1] = pairs[j-1], pairs[j]
		}
	}
	for _, p := range pairs {
		s, rv := cs.sends[p], cs.recvs[p]
	pairSeq:
		for i := 0; i < len(s) || i < len(rv); i++ {
			switch {
			case i >= len(rv):
				el.add("send %d from rank %d to rank %d: %s has no matching recv on rank %d", i, p.from, p.to, s[i], p.to)
			case i >= len(s):
				el.add("recv %d on rank %d from rank %d: %s has no matching send on rank %d", i, p.to, p.from, rv[i], p.from)
			case !s[i].Type.Equal(rv[i].Type) || s[i].Group != rv[i].Group:
				el.add("send %d from rank %d to rank %d: rank %d sends %s, rank %d receives %s", i, p.from, p.to, p.from, s[i], p.to, rv[i])
			default:
				continue
			}
			break pairSeq
		}
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
