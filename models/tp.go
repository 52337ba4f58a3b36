package models

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
)

// Tensor parallelism (TP) after Megatron-LM (Shoeybi et al., "Megatron-LM:
// Training Multi-Billion Parameter Language Models Using Model
// Parallelism", 2019, section 3): the Q, K, V, gate and up projections
// are split by output rows (column-parallel), so every rank computes whole
// attention heads and a slice of the FFN; the attention output and down
// projections are split by input columns (row-parallel) and followed by
// one all_reduce each, two per layer; norms and embeddings are
// replicated; the output layer is split by vocabulary rows and its
// logits all-gathered. When the model has fewer KV heads than ranks, each
// rank holds the one KV head its query heads read (replicated across the
// ranks sharing it, as vLLM's QKVParallelLinear does). Exact mode keeps
// every dot product whole: the row-parallel layers all-gather their input
// and split their output rows instead, followed by an all_gather, so the
// logits are those of one device bit for bit.

// TPOptions configure ShardTP.
type TPOptions struct {
	// Ranks is the tensor-parallel degree (>= 1).
	Ranks int
	// Exact replaces the all_reduce of every row-parallel layer by
	// all_gathers around a row split, so no dot product is split.
	Exact bool
}

// Shard is the part of a model tensor one rank holds: elements
// [Start, Start+Len) of dim Dim (0: columns, the contiguous dim; 1: rows).
// A fused weight (phi3's attn_qkv and ffn_up) holds several ranges of
// its dim, one per part, joined in order: Parts, each {start, length},
// with Start and Len those of the first part.
type Shard struct {
	Type  ir.DType
	Ne    [4]int64 // the whole tensor's dims
	Dim   int
	Start int64
	Len   int64
	Parts [][2]int64
}

// ranges returns the shard's ranges of Dim.
func (s Shard) ranges() [][2]int64 {
	if len(s.Parts) > 0 {
		return s.Parts
	}
	return [][2]int64{{s.Start, s.Len}}
}

// TPRank is one rank's part of a tensor-parallel model: its graph (with
// the rank's share of heads and FFN width and the collectives inserted)
// and the slices of the weights it holds.
type TPRank struct {
	Rank  int
	Model *Model
	// Shards holds the split tensors by GGUF name; a tensor not listed is
	// replicated whole.
	Shards map[string]Shard
}

// TP is a model split over ranks.
type TP struct {
	Options TPOptions
	Ranks   []*TPRank
	// VocabSplit reports whether the output layer is split by vocabulary
	// (false: replicated, for tied embeddings or a vocabulary that is not
	// a multiple of the ranks).
	VocabSplit bool
	// KVReplicated reports whether KV heads are replicated (n_head_kv <
	// ranks).
	KVReplicated bool
	// FFNShares is each rank's slice of the FFN width.
	FFNShares []int64
}

// tpSpec is one weight's split: view says whether the builder checks
// the weight at the split's dims.
type tpSpec struct {
	name        string
	dim         int
	start, size int64
	view        bool
	parts       [][2]int64 // a fused weight's ranges (start, size unused)
}

// TPGroup is the communicator of the tensor-parallel collectives.
const TPGroup = "tp"

// ShardTP splits a model over o.Ranks ranks. Each rank's graph is built
// from the hyper-parameters with the rank's share of the heads and of the
// FFN width (so every shape, reshape and KV-cache view follows), then
// rewritten: the collectives are inserted after the products keyed on the
// weights' roles (attn_output, ffn_down, output), and checked
// (ir.VerifyCollectives over the ranks, CheckPartialSums on each). It
// refuses, naming the counts, a degree the heads cannot take and a split
// that would cut a quantisation block. Fused weights (phi3's attn_qkv and
// ffn_up) are split per part, experts each by their FFN width.
func ShardTP(hp HParams, lookup WeightLookup, mo Options, o TPOptions) (*TP, error) {
	g, err := tpGeometryOf(hp, lookup, o)
	if err != nil {
		return nil, err
	}
	n := g.n
	tp := &TP{Options: o, KVReplicated: g.kvRepl}
	if _, untied := lookup("output.weight"); untied && g.V%n == 0 {
		tp.VocabSplit = true
	}
	for r := range n {
		tp.FFNShares = append(tp.FFNShares, g.slices(r).f1-g.slices(r).f0)
	}
	for r := range n {
		rank, err := tpBuildRank(hp, lookup, mo, o, g, tp, r)
		if err != nil {
			return nil, tpErr(n, "rank %d: %v", r, err)
		}
		tp.Ranks = append(tp.Ranks, rank)
	}
	graphs := make([]*ir.Graph, len(tp.Ranks))
	for i, r := range tp.Ranks {
		graphs[i] = r.Model.Graph
	}
	if err := ir.VerifyCollectives(graphs); err != nil {
		return nil, tpErr(n, "%v", err)
	}
	return tp, nil
}

// tpErr is ShardTP's error, naming the degree.
func tpErr(n int64, format string, args ...any) error {
	return fmt.Errorf("tensor parallel over %d ranks: %s", n, fmt.Sprintf(format, args...))
}

// tpGeometry is the split ShardTP makes: the degree, the head counts and
// the FFN width's unit of sharing.
type tpGeometry struct {
	n, H, Hkv, E, F, V, hd, hdv int64
	kvRepl                      bool
	// unit is the FFN width's unit of sharing; units whole units and tail
	// the rest, which goes to the last rank.
	unit, units, tail int64
}

// tpSlices is one rank's share: query heads [q0, q1), KV heads [k0, k1),
// FFN columns [f0, f1).
type tpSlices struct{ q0, q1, k0, k1, f0, f1 int64 }

// tpGeometryOf checks that hp can be split over o.Ranks and returns the
// split, refusing (naming the counts) a degree the heads cannot take and
// an FFN split that would cut a quantisation block.
func tpGeometryOf(hp HParams, lookup WeightLookup, o TPOptions) (tpGeometry, error) {
	n := int64(o.Ranks)
	fail := func(format string, args ...any) (tpGeometry, error) {
		return tpGeometry{}, tpErr(n, format, args...)
	}
	if n < 1 || n > 1<<10 {
		return fail("the degree must be in [1, 1024]")
	}
	if err := hp.Validate(); err != nil {
		return tpGeometry{}, err
	}
	H, Hkv := hp.NHead, hp.NHeadKV
	if H%n != 0 {
		return fail("n_head %d is not a multiple of %d (each rank computes whole heads; n_head_kv %d)", H, n, Hkv)
	}
	kvRepl := Hkv < n
	switch {
	case !kvRepl && Hkv%n != 0:
		return fail("n_head_kv %d is not a multiple of %d (n_head %d)", Hkv, n, H)
	case kvRepl && n%Hkv != 0:
		return fail("%d ranks are not a multiple of n_head_kv %d, so KV heads cannot be replicated evenly (n_head %d)", n, Hkv, H)
	}
	E, F, V := hp.NEmbd, hp.NFF, hp.NVocab
	// With experts, the FFN split is each expert's width (every rank
	// holds its slice of every expert, so the routing is replicated).
	down, ffName := "ffn_down", "n_ff"
	if hp.NExpert > 0 {
		F, down, ffName = hp.NFFExp, "ffn_down_exps", "the experts' n_ff"
	}
	// The FFN width is shared in units of 8 (ggml_vec_silu_f32 computes
	// blocks of 8 and a scalar tail, so a rank's silu matches one
	// device's only when its slice starts at a multiple of 8; the tail
	// goes to the last rank), or of ffn_down's quantisation block when its
	// columns are split. The shares are uneven when the units do not
	// divide by the ranks.
	unit := int64(8)
	if w, ok := lookup("blk.0." + down + ".weight"); ok && !o.Exact && w.Type.BlockSize() > 1 {
		unit = w.Type.BlockSize()
		if F%unit != 0 {
			return fail("%s %d is not a multiple of %s's %s block of %d", ffName, F, down, w.Type, unit)
		}
	}
	units, tail := F/unit, F%unit
	if units < n {
		if unit > 8 {
			return fail("%s %d is %d block(s) of %d values of %s, fewer than the ranks: its columns cannot be split without cutting a block (--tp-exact splits its rows instead)", ffName, F, units, unit, down)
		}
		return fail("%s %d is %d unit(s) of 8, fewer than the ranks", ffName, F, units)
	}
	if o.Exact && E%n != 0 {
		return fail("exact mode gathers equal slices of n_embd %d, which is not a multiple of %d", E, n)
	}
	return tpGeometry{n: n, H: H, Hkv: Hkv, E: E, F: F, V: V, hd: hp.HeadDimK, hdv: hp.HeadDimV,
		kvRepl: kvRepl, unit: unit, units: units, tail: tail}, nil
}

// slices returns rank r's share of the heads and of the FFN width.
func (g tpGeometry) slices(r int64) tpSlices {
	n, unit, units := g.n, g.unit, g.units
	s := tpSlices{q0: r * g.H / n, q1: (r + 1) * g.H / n, k0: r * g.Hkv / n, k1: (r + 1) * g.Hkv / n}
	if g.kvRepl {
		s.k0 = r * g.Hkv / n
		s.k1 = s.k0 + 1
	}
	s.f0 = unit * (r*(units/n) + min(r, units%n))
	s.f1 = unit * ((r+1)*(units/n) + min(r+1, units%n))
	if r == n-1 {
		s.f1 += g.tail
	}
	return s
}

// tpBuildRank builds rank r's graph from its share of the
// hyper-parameters and weights, inserts the collectives and checks it.
func tpBuildRank(hp HParams, lookup WeightLookup, mo Options, o TPOptions, g tpGeometry, tp *TP, r int64) (*TPRank, error) {
	s := g.slices(r)
	rhp := hp
	rhp.NHead, rhp.NHeadKV = s.q1-s.q0, s.k1-s.k0
	if hp.NExpert > 0 {
		rhp.NFFExp = s.f1 - s.f0
	} else {
		rhp.NFF = s.f1 - s.f0
	}
	rank := &TPRank{Rank: int(r), Shards: map[string]Shard{}}
	built, err := tpShardWeights(hp, lookup, o, g, tp.VocabSplit, r, rank)
	if err != nil {
		return nil, err
	}
	rlookup := func(name string) (Weight, bool) {
		w, ok := lookup(name)
		if ne, split := built[name]; ok && split {
			w.Ne = ne
		}
		return w, ok
	}
	m, err := BuildHParams(rhp, rlookup, mo)
	if err != nil {
		return nil, err
	}
	if err := tpRewrite(m.Graph, rank, o, tp.FFNShares); err != nil {
		return nil, err
	}
	m.Graph.Meta["tp_rank"] = strconv.FormatInt(r, 10)
	m.Graph.Meta["tp_ranks"] = strconv.FormatInt(g.n, 10)
	if o.Exact {
		m.Graph.Meta["tp_exact"] = "true"
	}
	if err := ir.Verify(m.Graph); err != nil {
		return nil, err
	}
	if err := CheckPartialSums(m.Graph, rank.contracting); err != nil {
		return nil, err
	}
	rank.Model = m
	return rank, nil
}

// tpShardWeights records in rank.Shards the slices of the weights rank r
// holds and returns the dims the builder checks (the row-parallel
// weights as the column split, the output whole).
func tpShardWeights(hp HParams, lookup WeightLookup, o TPOptions, g tpGeometry, vocabSplit bool, r int64, rank *TPRank) (map[string][4]int64, error) {
	built := map[string][4]int64{}
	split := func(name string, dim int, parts [][2]int64, builderView bool) error {
		w, ok := lookup(name)
		if !ok {
			return nil
		}
		total := int64(0)
		for _, p := range parts {
			start, length := p[0], p[1]
			if start < 0 || length < 1 || start+length > w.Ne[dim] {
				return fmt.Errorf("tensor %q: dims %v cannot give [%d, %d) of dim %d", name, w.Ne, start, start+length, dim)
			}
			if dim == 0 && (start%w.Type.BlockSize() != 0 || length%w.Type.BlockSize() != 0) {
				return fmt.Errorf("tensor %q is %s: columns [%d, %d) cut its blocks of %d values (uneven shards across blocks are not supported; --tp-exact splits its rows instead)",
					name, w.Type, start, start+length, w.Type.BlockSize())
			}
			total += length
		}
		s := Shard{Type: w.Type, Ne: w.Ne, Dim: dim, Start: parts[0][0], Len: parts[0][1]}
		if len(parts) > 1 {
			s.Parts = parts
		}
		if total != w.Ne[dim] {
			rank.Shards[name] = s
		}
		if builderView {
			ne := w.Ne
			ne[dim] = total
			built[name] = ne
		}
		return nil
	}
	sl := g.slices(r)
	for l := range hp.NLayer {
		p := "blk." + strconv.FormatInt(l, 10) + "."
		for _, s := range tpLayerSpecs(hp.Arch, p, o, g, sl, r) {
			parts := s.parts
			if parts == nil {
				parts = [][2]int64{{s.start, s.size}}
			}
			if err := split(s.name, s.dim, parts, s.view); err != nil {
				return nil, err
			}
		}
		if o.Exact {
			// The builder sees the column split it builds for.
			for _, w := range []struct {
				name string
				cols int64
			}{{p + "attn_output.weight", (sl.q1 - sl.q0) * g.hdv}, {p + "ffn_down.weight", sl.f1 - sl.f0}, {p + "ffn_down_exps.weight", sl.f1 - sl.f0}} {
				if t, ok := lookup(w.name); ok {
					ne := t.Ne
					ne[0] = w.cols
					built[w.name] = ne
				}
			}
		}
	}
	if vocabSplit {
		if err := split("output.weight", 1, [][2]int64{{r * g.V / g.n, g.V / g.n}}, false); err != nil {
			return nil, err
		}
	}
	return built, nil
}

// tpLayerSpecs lists the splits of layer p's weights for rank r:
// column-parallel Q, K, V, gate and up; row-parallel attn_output and
// ffn_down (column-split in exact mode).
func tpLayerSpecs(arch, p string, o TPOptions, g tpGeometry, s tpSlices, r int64) []tpSpec {
	n, E, hd, hdv := g.n, g.E, g.hd, g.hdv
	q0, q1, k0, k1, f0, f1 := s.q0, s.q1, s.k0, s.k1, s.f0, s.f1
	specs := []tpSpec{
		{p + "attn_q.weight", 1, q0 * hd, (q1 - q0) * hd, true, nil},
		{p + "attn_q.bias", 0, q0 * hd, (q1 - q0) * hd, true, nil},
		{p + "attn_k.weight", 1, k0 * hd, (k1 - k0) * hd, true, nil},
		{p + "attn_k.bias", 0, k0 * hd, (k1 - k0) * hd, true, nil},
		{p + "attn_v.weight", 1, k0 * hdv, (k1 - k0) * hdv, true, nil},
		{p + "attn_v.bias", 0, k0 * hdv, (k1 - k0) * hdv, true, nil},
		{p + "ffn_gate.weight", 1, f0, f1 - f0, true, nil},
		{p + "ffn_up.weight", 1, f0, f1 - f0, true, nil},
		{p + "ffn_gate_exps.weight", 1, f0, f1 - f0, true, nil},
		{p + "ffn_up_exps.weight", 1, f0, f1 - f0, true, nil},
	}
	if o.Exact {
		specs = append(specs,
			tpSpec{name: p + "attn_output.weight", dim: 1, start: r * E / n, size: E / n},
			tpSpec{name: p + "ffn_down.weight", dim: 1, start: r * E / n, size: E / n},
			tpSpec{name: p + "ffn_down_exps.weight", dim: 1, start: r * E / n, size: E / n})
	} else {
		specs = append(specs,
			tpSpec{name: p + "attn_output.weight", dim: 0, start: q0 * hdv, size: (q1 - q0) * hdv, view: true},
			tpSpec{name: p + "ffn_down.weight", dim: 0, start: f0, size: f1 - f0, view: true},
			tpSpec{name: p + "ffn_down_exps.weight", dim: 0, start: f0, size: f1 - f0, view: true})
	}
	if arch == "phi3" {
		// One fused projection per layer: Q, K, V rows, and gate,
		// up rows (llama.cpp's phi3 graph); each part is split.
		nQ, nK := g.H*hd, g.Hkv*hd
		qkv := [][2]int64{{q0 * hd, (q1 - q0) * hd}, {nQ + k0*hd, (k1 - k0) * hd}, {nQ + nK + k0*hdv, (k1 - k0) * hdv}}
		specs = append(specs[:0],
			tpSpec{name: p + "attn_qkv.weight", dim: 1, view: true, parts: qkv},
			tpSpec{name: p + "attn_qkv.bias", dim: 0, view: true, parts: qkv},
			tpSpec{name: p + "ffn_up.weight", dim: 1, view: true, parts: [][2]int64{{f0, f1 - f0}, {g.F + f0, f1 - f0}}})
		if o.Exact {
			specs = append(specs, tpSpec{name: p + "attn_output.weight", dim: 1, start: r * E / n, size: E / n},
				tpSpec{name: p + "ffn_down.weight", dim: 1, start: r * E / n, size: E / n})
		} else {
			specs = append(specs, tpSpec{name: p + "attn_output.weight", dim: 0, start: q0 * hdv, size: (q1 - q0) * hdv, view: true},
				tpSpec{name: p + "ffn_down.weight", dim: 0, start: f0, size: f1 - f0, view: true})
		}
	}
	return specs
}

// contracting reports whether w is a matrix split along its contracting
// dim (columns), so that its products are partial sums.
func (r *TPRank) contracting(w *ir.Node) bool {
	s, ok := r.Shards[w.Name]
	return ok && w.Op == ir.OpWeight && s.Dim == 0 && s.Ne[1] > 1
}

// role is the part a weight plays in the TP layout, by its GGUF name.
func role(name string) string {
	if name == "output.weight" {
		return "output"
	}
	if !strings.HasPrefix(name, "blk.") {
		return ""
	}
	i := strings.IndexByte(name[4:], '.')
	if i < 0 {
		return ""
	}
	return strings.TrimSuffix(name[4+i+1:], ".weight")
}

// tpRewrite inserts the collectives of one rank's graph after the
// products of the row-parallel and output weights.
func tpRewrite(g *ir.Graph, rank *TPRank, o TPOptions, ffn []int64) error {
	n := int64(o.Ranks)
	coll := func(extra ir.Attrs) ir.Attrs {
		a := ir.Attrs{ir.AttrRanks: n, ir.AttrGroup: TPGroup}
		for k, v := range extra {
			a[k] = v
		}
		return a
	}
	// The products to rewrite, found before the node list changes.
	var mms []*ir.Node
	for _, x := range g.Nodes {
		if (x.Op == ir.OpMulMat || x.Op == ir.OpMulMatID) && x.Args[0].Op == ir.OpWeight {
			switch role(x.Args[0].Name) {
			case "attn_output", "ffn_down", "ffn_down_exps", "output":
				mms = append(mms, x)
			}
		}
	}
	for _, mm := range mms {
		w := mm.Args[0]
		s, split := rank.Shards[w.Name]
		if !split {
			continue // replicated (the output of a tied or indivisible vocabulary)
		}
		if s.Dim == 0 {
			// Row-parallel: partial sums, reduced.
			if _, err := g.AddAfter(mm, mm, ir.OpAllReduce, []*ir.Node{mm}, coll(nil), mm.Name+" (all_reduce)"); err != nil {
				return err
			}
			continue
		}
		// A row split: whole dot products over the rank's rows of w, then
		// gathered. The rows of the row-parallel layers (exact mode) read
		// the whole input, gathered first.
		nw := &ir.Node{Op: ir.OpWeight, Type: ir.Type{DType: s.Type, Shape: ir.Sh(s.Ne[0], s.Len, s.Ne[2], s.Ne[3])}, Name: w.Name, Layer: w.Layer}
		if err := g.Bind(nw); err != nil {
			return err
		}
		if err := ir.CheckNode(nw); err != nil {
			return fmt.Errorf("%s: %w", w.Name, err)
		}
		g.Insert(mm.ID, nw)
		x := mm.Args[1]
		if !x.Type.Shape[0].Equal(nw.Type.Shape[0]) {
			attrs := ir.Attrs{ir.AttrDim: int64(0)}
			if (role(w.Name) == "ffn_down" || role(w.Name) == "ffn_down_exps") && !slices.Equal(ffn, slices.Repeat(ffn[:1], len(ffn))) {
				attrs[ir.AttrCounts] = slices.Clone(ffn)
			}
			gx, err := g.AddAfter(x, nil, ir.OpAllGather, []*ir.Node{x}, coll(attrs), mm.Name+" (input gathered)")
			if err != nil {
				return err
			}
			x = gx
		}
		prod, err := g.AddAfter(mm, nil, mm.Op, append([]*ir.Node{nw, x}, mm.Args[2:]...), nil, mm.Name)
		if err != nil {
			return err
		}
		if _, err := g.AddAfter(prod, mm, ir.OpAllGather, []*ir.Node{prod}, coll(ir.Attrs{ir.AttrDim: int64(0)}), mm.Name+" (all_gather)"); err != nil {
			return err
		}
	}
	g.Compact()
	return nil
}

// CheckPartialSums checks that a partial sum never reaches a non-linear
// op, or an output, without its all_reduce. A partial sum is the product
// of a weight split along its contracting dim (contracting(w)), and what
// linear ops make of it: views and copies, scale, get_rows of its rows,
// a product or mul with it as the only partial operand, the sum of two
// partial sums. all_reduce and reduce_scatter complete it. Adding a
// replicated value to a partial sum is an error too (the all_reduce
// would count it once per rank). The error names the node.
func CheckPartialSums(g *ir.Graph, contracting func(w *ir.Node) bool) error {
	partial := map[*ir.Node]*ir.Node{} // node -> the product it descends from
	for _, x := range g.Nodes {
		var src *ir.Node
		np := 0
		for _, a := range x.Args {
			if p := partial[a]; p != nil {
				src = p
				np++
			}
		}
		switch x.Op {
		case ir.OpMulMat, ir.OpMulMatAdd, ir.OpMulMatID:
			if contracting(x.Args[0]) && partial[x.Args[1]] == nil {
				if x.Op == ir.OpMulMatAdd {
					return fmt.Errorf("%s (%s %q): a bias added to the partial sum of %q before its all_reduce", x, x.Op, x.Name, x.Args[0].Name)
				}
				partial[x] = x
				continue
			}
			if np == 1 && partial[x.Args[1]] != nil && x.Op == ir.OpMulMat {
				partial[x] = src
				continue
			}
		case ir.OpAllReduce, ir.OpReduceScatter:
			continue
		case ir.OpReshape, ir.OpView, ir.OpPermute, ir.OpTransp, ir.OpCont, ir.OpScale:
			if np == 1 && partial[x.Args[0]] != nil {
				partial[x] = src
				continue
			}
		case ir.OpGetRows, ir.OpMul:
			if np == 1 && partial[x.Args[0]] != nil {
				partial[x] = src
				continue
			}
		case ir.OpAdd:
			if np == 2 {
				partial[x] = src
				continue
			}
			if np == 1 {
				return fmt.Errorf("%s (%s %q): a replicated value added to the partial sum of %s (%q) before its all_reduce", x, x.Op, x.Name, src, src.Name)
			}
		}
		if np > 0 {
			return fmt.Errorf("%s (%s %q): the partial sum of %s (%q) reaches %s without an all_reduce", x, x.Op, x.Name, src, src.Name, x.Op)
		}
	}
	for _, o := range g.Outputs {
		if p := partial[o]; p != nil {
			return fmt.Errorf("output %s (%q) is the partial sum of %s (%q) without an all_reduce", o, o.Name, p, p.Name)
		}
	}
	return nil
}

// TensorSource gives a tensor's stored bytes by name (an eval.WeightSource,
// a *gguf.File).
type TensorSource interface {
	TensorData(name string) ([]byte, error)
}

// Weights returns the rank's view of a model's weights: the slices of
// the split tensors, the others whole.
func (r *TPRank) Weights(src TensorSource) TensorSource {
	return &shardSource{src: src, r: r, cache: map[string][]byte{}}
}

type shardSource struct {
	src   TensorSource
	r     *TPRank
	mu    sync.Mutex
	cache map[string][]byte
}

// TensorData returns the rank's slice of tensor name: a sub-slice of the
// source's bytes for a row split, a copy for a column split.
func (s *shardSource) TensorData(name string) ([]byte, error) {
	sh, ok := s.r.Shards[name]
	if !ok {
		return s.src.TensorData(name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.cache[name]; ok {
		return b, nil
	}
	full, err := s.src.TensorData(name)
	if err != nil {
		return nil, err
	}
	row, err := gguf.RowBytes(gguf.GGMLType(sh.Type), sh.Ne[0])
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", name, err)
	}
	rows := sh.Ne[1] * sh.Ne[2] * sh.Ne[3]
	if int64(len(full)) < row*rows {
		return nil, fmt.Errorf("tensor %q holds %d bytes, %d rows of %d need %d", name, len(full), rows, row, row*rows)
	}
	var out []byte
	parts := sh.ranges()
	switch sh.Dim {
	case 1:
		planes := sh.Ne[2] * sh.Ne[3] // experts: each one's rows are split
		if len(parts) == 1 && planes == 1 {
			out = full[sh.Start*row : (sh.Start+sh.Len)*row]
			break
		}
		for pl := range planes {
			base := pl * sh.Ne[1]
			for _, p := range parts {
				out = append(out, full[(base+p[0])*row:(base+p[0]+p[1])*row]...)
			}
		}
	case 0:
		bs, ts := sh.Type.BlockSize(), sh.Type.TypeSize()
		for i := range rows {
			for _, p := range parts {
				lo, hi := p[0]/bs*ts, (p[0]+p[1])/bs*ts
				out = append(out, full[i*row+lo:i*row+hi]...)
			}
		}
	default:
		return nil, fmt.Errorf("tensor %q: split along dim %d", name, sh.Dim)
	}
	s.cache[name] = out
	return out, nil
}

// ShardTPFile is ShardTP on a GGUF file's hyper-parameters and tensors.
func ShardTPFile(f *gguf.File, mo Options, o TPOptions) (*TP, error) {
	hp, err := ReadHParams(f)
	if err != nil {
		return nil, err
	}
	return ShardTP(hp, fileWeights(f), mo, o)
}
