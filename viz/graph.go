package viz

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/irtool/irtool/ir"
)

// Placement is where one node runs after partitioning.
type Placement struct {
	// Device names the device ("npu", "cpu", ...).
	Device string
	// Segment is the lowered segment the node belongs to, numbered from 0;
	// a negative value means none (a partition before lowering, or a host
	// step outside every segment).
	Segment int
}

// Partition maps nodes to devices and segments. It is the only thing the
// partition and segment views need, so any partitioner can feed them: the
// keys of Nodes are ir.Node IDs of the graph being drawn. Nodes absent from
// the map (typically weights and other leaves) are drawn outside every
// device cluster.
type Partition struct {
	// Nodes places nodes by ID.
	Nodes map[int]Placement
	// Segments optionally captions segments by ID (for example "captured,
	// key s3"); the caption follows "segment N" in the cluster label.
	Segments map[int]string
}

// GraphOptions tune GraphDOT. The zero value draws the whole graph with
// layer clusters.
type GraphOptions struct {
	// Title labels the drawing; empty means the graph's name.
	Title string
	// Partition, when set, clusters nodes by device and, inside a device,
	// by segment, instead of by layer; edges between devices are drawn
	// bold red, since each is a copy at run time. A view without a segment
	// is drawn in the segment of the tensor it views.
	Partition *Partition
	// NoWeights leaves weight leaves (and their edges) out, which halves
	// the drawing of a large model.
	NoWeights bool
	// NoEdgeLabels leaves the byte counts off the edges.
	NoEdgeLabels bool
}

// Node colours: a small palette that reads on white and in print.
const (
	colorInk      = "#1f2937" // text and outlines
	colorDim      = "#9ca3af" // weights: dimmed
	colorDimFill  = "#f3f4f6"
	colorInput    = "#dbeafe" // per-step inputs
	colorState    = "#fef3c7" // KV cache and other state
	colorConst    = "#ede9fe"
	colorFused    = "#fed7aa" // ops made by fusion
	colorFusedInk = "#c2410c"
	colorWrite    = "#fef9c3" // side effects: writes into state
	colorComm     = "#ccfbf1" // collectives: communication between ranks
	colorCommInk  = "#0f766e"
	colorCut      = "#dc2626" // edges between devices
)

// GraphDOT returns a DOT drawing of g. Each node is a box labelled with its
// ID, op, dtype and shape (and its name when it has one); weights are
// dimmed, per-step inputs and state are tinted, views are dashed (they
// compute nothing), ops made by fusion are orange and say "fused",
// collectives (all_reduce, all_gather, ... between ranks) are teal, and the
// graph's outputs have a double border. Nodes are clustered by transformer
// layer (ir.Node.Layer; a view joins the layer of the tensor it views), or
// by device and segment when opts.Partition is set. Layer clusters are
// stacked top to bottom in order: a value that several layers read is
// drawn once where it is made and as a small dashed stub n<ID>_layer_<N>
// in each layer that reads it, the longest chain of the graph shares a dot
// group, and invisible points between layers keep each below the last.
// Each edge is labelled with the size of the tensor it carries (for
// symbolic shapes, a formula such as "256·n_tokens B").
//
// The output is deterministic: the same graph and options give the same
// DOT text. GraphDOT fails only on a malformed graph (a nil node or an
// operand outside the graph), naming the node.
func GraphDOT(g *ir.Graph, opts GraphOptions) (*DOT, error) {
	if err := checkGraph(g); err != nil {
		return nil, err
	}
	outputs := map[*ir.Node]bool{}
	for _, o := range g.Outputs {
		outputs[o] = true
	}

	d := newDOT(true)
	title := opts.Title
	if title == "" {
		title = g.Name
	}
	// newrank ranks the whole graph at once rather than cluster by cluster,
	// which keeps data flowing down the page across layer clusters (and
	// avoids dot's "trouble in init_rank" on 24-layer graphs).
	d.root.Attrs("label", title, "labelloc", "t", "fontname", "Helvetica", "fontsize", "16",
		"rankdir", "TB", "nodesep", "0.25", "ranksep", "0.35", "newrank", "true")
	d.root.nodeDefs = []string{"shape", "box", "fontname", "Helvetica", "fontsize", "10", "color", colorInk, "fontcolor", colorInk}
	d.root.edgeDefs = []string{"fontname", "Helvetica", "fontsize", "8", "color", "#6b7280", "fontcolor", "#6b7280", "arrowsize", "0.6"}

	clusters := newClusterer(d.root, g, opts.Partition)
	nodes := make(map[*ir.Node]*dotNode, len(g.Nodes))
	for _, n := range g.Nodes {
		if opts.NoWeights && n.Op == ir.OpWeight {
			continue
		}
		sub := clusters.of(n)
		dn := sub.Node(nodeKey(n.ID)).Attrs("label", nodeLabel(n))
		styleNode(dn, n, outputs[n])
		nodes[n] = dn
	}
	// The longest chain of computations (through every layer, in a
	// transformer) is drawn straight down the page: its nodes share a dot
	// group, so the layers stack in one column.
	chain := longestChain(g)
	if opts.Partition == nil {
		for _, n := range chain {
			if dn, ok := nodes[n]; ok {
				dn.Attrs("group", "main")
			}
		}
	}
	st := &stubs{clusters: clusters, of: map[stubKey]*dotNode{}, layer: map[*dotNode]int{}}
	addEdges(d, g, opts, clusters, nodes, st)
	if opts.Partition == nil {
		layersBelow(d, g, clusters, nodes, st.layer)
	}
	return d, nil
}

// checkGraph rejects a nil graph, nil nodes and operands outside the graph.
func checkGraph(g *ir.Graph) error {
	if g == nil {
		return fmt.Errorf("viz: nil graph")
	}
	in := make(map[*ir.Node]int, len(g.Nodes))
	for i, n := range g.Nodes {
		if n == nil {
			return fmt.Errorf("viz: graph %q: node %d is nil", g.Name, i)
		}
		in[n] = i
	}
	for _, n := range g.Nodes {
		for j, a := range n.Args {
			if _, ok := in[a]; !ok {
				return fmt.Errorf("viz: graph %q: node %%%d (%s): operand %d is not in the graph", g.Name, n.ID, n.Op, j)
			}
		}
	}
	return nil
}

// stubKey names the copy of value id drawn in cluster in.
type stubKey struct {
	id int
	in *dotGraph
}

// stubs are the small dashed copies of values several layers read.
type stubs struct {
	clusters *clusterer
	of       map[stubKey]*dotNode
	layer    map[*dotNode]int // in the layer view
}

// stub returns the copy of a in the cluster of its reader user, drawing it
// on first use.
func (st *stubs) stub(a, user *ir.Node) *dotNode {
	in := st.clusters.of(user)
	k := stubKey{a.ID, in}
	if s, ok := st.of[k]; ok {
		return s
	}
	s := in.Node(nodeKey(a.ID) + "_" + strings.TrimPrefix(in.id, "cluster_"))
	label := fmt.Sprintf("%%%d %s", a.ID, a.Op)
	if a.Name != "" {
		label += "\n" + shortName(a.Name)
	}
	s.Attrs("label", label, "style", "dashed,rounded", "color", colorDim, "fontsize", "8", "tooltip", "drawn once per cluster that reads it")
	st.of[k] = s
	st.layer[s] = st.clusters.layerOf(user)
	return s
}

// addEdges draws an edge from each drawn operand to its reader. A value
// that several layers read (the positions, the mask, the RoPE table) would
// send an edge across the page into every layer: instead each layer (or
// segment) gets a small dashed copy of it, n<ID>_<cluster>, labelled with
// the same ID.
func addEdges(d *DOT, g *ir.Graph, opts GraphOptions, clusters *clusterer, nodes map[*ir.Node]*dotNode, st *stubs) {
	shared := clusters.sharedValues(g)
	for _, n := range g.Nodes {
		to, ok := nodes[n]
		if !ok {
			continue
		}
		for _, a := range n.Args {
			from, ok := nodes[a]
			if !ok {
				continue
			}
			if shared[a] && clusters.reads(a, n) {
				from = st.stub(a, n)
			}
			label := ""
			if !opts.NoEdgeLabels {
				label = TensorBytes(a.Type)
			}
			e := d.Edge(from, to, label)
			if la, ln := clusters.layerOf(a), clusters.layerOf(n); opts.Partition == nil && la >= 0 && ln >= 0 && la != ln && !shared[a] {
				// The residual stream from one layer into the next: a
				// heavy edge that dot keeps short and straight stacks
				// the layers in one column instead of a staircase.
				e.Attrs("weight", "8")
			}
			switch {
			case a.Op == ir.OpWeight:
				e.Attrs("color", "#d1d5db", "fontcolor", colorDim)
			case clusters.cut(a, n):
				e.Attrs("color", colorCut, "fontcolor", colorCut, "penwidth", "2")
			}
		}
	}
}

// layersBelow keeps each layer cluster below the one before. A layer's
// weights, state and stubs have no drawn operand, so dot would put them on
// the same rank as the previous layer's last nodes and the two clusters
// side by side (a staircase of layers across the page). Between two
// consecutive layers it adds an invisible point that every node ending
// the earlier layer (one with no user drawn in it) points to, and that
// points to every node starting the later one (one with no operand drawn
// in it): every rank of the later layer is then below every rank of the
// earlier. The edges have weight 0, so they leave the x positions alone.
func layersBelow(d *DOT, g *ir.Graph, c *clusterer, nodes map[*ir.Node]*dotNode, stubLayer map[*dotNode]int) {
	layerOf := map[*dotNode]int{}
	var order []*dotNode // every drawn node in a layer, in graph order, then the stubs
	for _, n := range g.Nodes {
		if dn, ok := nodes[n]; ok && c.layerOf(n) >= 0 {
			layerOf[dn] = c.layerOf(n)
			order = append(order, dn)
		}
	}
	// The stubs, in the order they were drawn.
	for _, e := range d.edges {
		if l, ok := stubLayer[e.from]; ok {
			if _, seen := layerOf[e.from]; !seen {
				layerOf[e.from] = l
				order = append(order, e.from)
			}
		}
	}
	inside := func(a, b *dotNode) bool {
		la, oka := layerOf[a]
		lb, okb := layerOf[b]
		return oka && okb && la == lb
	}
	hasIn, hasOut := map[*dotNode]bool{}, map[*dotNode]bool{}
	for _, e := range d.edges {
		if inside(e.from, e.to) {
			hasOut[e.from], hasIn[e.to] = true, true
		}
	}
	var layers []int
	for _, dn := range order {
		layers = append(layers, layerOf[dn])
	}
	slices.Sort(layers)
	layers = slices.Compact(layers)
	for i := 1; i < len(layers); i++ {
		prev, cur := layers[i-1], layers[i]
		sep := d.root.Node(fmt.Sprintf("layer_%d_below_%d", cur, prev)).Attrs("shape", "point", "style", "invis", "width", "0", "height", "0", "label", "")
		for _, dn := range order {
			switch {
			case layerOf[dn] == prev && !hasOut[dn]:
				d.Edge(dn, sep, "").Attrs("style", "invis", "weight", "0")
			case layerOf[dn] == cur && !hasIn[dn]:
				d.Edge(sep, dn, "").Attrs("style", "invis", "weight", "0")
			}
		}
	}
}

// nodeKey is the DOT identifier of an IR node: n12 draws %12.
func nodeKey(id int) string { return "n" + strconv.Itoa(id) }

// maxNameLen bounds the name line of a node label.
const maxNameLen = 40

func nodeLabel(n *ir.Node) string {
	head := fmt.Sprintf("%%%d %s", n.ID, n.Op)
	if info, ok := n.Info(); ok && info.Fused {
		head += " (fused)"
	}
	lines := []string{head, n.Type.String()}
	if n.Name != "" {
		lines = append(lines, shortName(n.Name))
	}
	return strings.Join(lines, "\n")
}

// longestChain returns the longest path of non-leaf nodes through g (the
// first one found in node order when several are as long).
func longestChain(g *ir.Graph) []*ir.Node {
	depth := make(map[*ir.Node]int, len(g.Nodes))
	prev := make(map[*ir.Node]*ir.Node, len(g.Nodes))
	var end *ir.Node
	for _, n := range g.Nodes {
		if n.IsLeaf() {
			continue
		}
		depth[n] = 1
		for _, a := range n.Args {
			if d, ok := depth[a]; ok && d+1 > depth[n] {
				depth[n], prev[n] = d+1, a
			}
		}
		if end == nil || depth[n] > depth[end] {
			end = n
		}
	}
	var chain []*ir.Node
	for n := end; n != nil; n = prev[n] {
		chain = append(chain, n)
	}
	slices.Reverse(chain)
	return chain
}

// shortName bounds a name to maxNameLen characters.
func shortName(name string) string {
	if r := []rune(name); len(r) > maxNameLen {
		return string(r[:maxNameLen-1]) + "…"
	}
	return name
}

func styleNode(dn *dotNode, n *ir.Node, output bool) {
	info, known := n.Info()
	switch {
	case n.Op == ir.OpWeight:
		dn.Attrs("style", "filled", "fillcolor", colorDimFill, "color", colorDim, "fontcolor", colorDim)
	case n.Op == ir.OpInput:
		dn.Attrs("style", "filled", "fillcolor", colorInput)
	case n.Op == ir.OpState:
		dn.Attrs("style", "filled", "fillcolor", colorState)
	case n.Op == ir.OpConst:
		dn.Attrs("style", "filled", "fillcolor", colorConst)
	case ir.IsCollective(n.Op):
		dn.Attrs("style", "rounded,filled,bold", "fillcolor", colorComm, "color", colorCommInk)
	case known && info.Fused:
		dn.Attrs("style", "rounded,filled,bold", "fillcolor", colorFused, "color", colorFusedInk)
	case known && info.SideEffect:
		dn.Attrs("style", "rounded,filled", "fillcolor", colorWrite)
	case known && info.Kind == ir.KindView:
		dn.Attrs("style", "rounded,dashed")
	default:
		dn.Attrs("style", "rounded")
	}
	if len(n.Attrs) > 0 {
		dn.Attrs("tooltip", n.Attrs.String())
	}
	if output {
		dn.Attrs("peripheries", "2")
	}
}

// clusterer places nodes into DOT clusters: by layer, or by device and
// segment when a partition is given. Clusters are created in a fixed order
// (first use in execution order), so the output is deterministic.
type clusterer struct {
	root  *dotGraph
	part  *Partition
	subs  map[string]*dotGraph
	depth int // digits of the layer number, for sortable cluster keys
	layer map[*ir.Node]int
}

func newClusterer(root *dotGraph, g *ir.Graph, part *Partition) *clusterer {
	maxLayer := 0
	for _, n := range g.Nodes {
		maxLayer = max(maxLayer, n.Layer)
	}
	return &clusterer{root: root, part: viewsJoinSegments(g, part), subs: map[string]*dotGraph{},
		depth: len(strconv.Itoa(maxLayer)), layer: viewsJoinLayers(g)}
}

// viewsJoinLayers returns the layer each node is drawn in: its own, except
// that a view is drawn in the layer of the tensor it views. A fusion can
// compute one layer's value in the next layer's kernel (the residual add
// of layer 0 inside layer 1's add_rms_norm_mul), and a view of that result
// named after layer 0 would otherwise pull layer 1 back above layer 0.
func viewsJoinLayers(g *ir.Graph) map[*ir.Node]int {
	layer := make(map[*ir.Node]int, len(g.Nodes))
	for _, n := range g.Nodes {
		layer[n] = n.Layer
		info, known := n.Info()
		if !known || info.Kind != ir.KindView || info.SideEffect || len(n.Args) == 0 {
			continue
		}
		src := n.Args[min(max(info.AliasArg, 0), len(n.Args)-1)]
		if l, ok := layer[src]; ok && l >= 0 && src.Op != ir.OpState {
			layer[n] = l
		}
	}
	return layer
}

// layerOf is the layer n is drawn in (-1: outside every layer).
func (c *clusterer) layerOf(n *ir.Node) int {
	if l, ok := c.layer[n]; ok {
		return l
	}
	return n.Layer
}

// sharedValues returns the values read from outside by two or more
// clusters (layers, or device segments) other than their own.
func (c *clusterer) sharedValues(g *ir.Graph) map[*ir.Node]bool {
	shared := map[*ir.Node]bool{}
	readers := map[*ir.Node]map[*dotGraph]bool{}
	for _, n := range g.Nodes {
		for _, a := range n.Args {
			if !c.reads(a, n) {
				continue
			}
			if readers[a] == nil {
				readers[a] = map[*dotGraph]bool{}
			}
			readers[a][c.of(n)] = true
		}
	}
	for a, ls := range readers {
		if len(ls) >= 2 {
			shared[a] = true
		}
	}
	return shared
}

// reads reports whether the edge from a to n enters a cluster other than
// a's from outside, without crossing devices (a copy is drawn as such):
// the edges a stub of a shared value may stand for.
func (c *clusterer) reads(a, n *ir.Node) bool {
	in := c.of(n)
	return in != c.root && in != c.of(a) && !c.cut(a, n)
}

// layerSub returns the cluster of a layer.
func (c *clusterer) layerSub(layer int) *dotGraph {
	return c.sub(c.root, fmt.Sprintf("layer %0*d", c.depth, layer), fmt.Sprintf("layer %d", layer))
}

// viewsJoinSegments returns part with every view that has no segment of its
// own drawn in the segment of the tensor it views (on the same device):
// views launch no kernel, so a lowering leaves them out of its segments,
// but drawn outside they would split each segment's chain of kernels into
// pieces. part itself is not modified.
func viewsJoinSegments(g *ir.Graph, part *Partition) *Partition {
	if part == nil {
		return nil
	}
	out := &Partition{Nodes: make(map[int]Placement, len(part.Nodes)), Segments: part.Segments}
	for id, p := range part.Nodes {
		out.Nodes[id] = p
	}
	for _, n := range g.Nodes {
		p, ok := out.Nodes[n.ID]
		if !ok || p.Segment >= 0 || len(n.Args) == 0 {
			continue
		}
		if info, known := n.Info(); !known || info.Kind != ir.KindView || info.SideEffect {
			continue
		}
		if src, ok := out.Nodes[n.Args[0].ID]; ok && src.Segment >= 0 && src.Device == p.Device {
			out.Nodes[n.ID] = Placement{Device: p.Device, Segment: src.Segment}
		}
	}
	return out
}

func (c *clusterer) sub(parent *dotGraph, key, label string, attrs ...string) *dotGraph {
	if s, ok := c.subs[key]; ok {
		return s
	}
	s := parent.Subgraph(key)
	s.Attrs("label", label)
	s.Attrs("fontname", "Helvetica", "fontsize", "11", "labeljust", "l", "style", "rounded", "color", "#9ca3af")
	if len(attrs) > 0 {
		s.Attrs(attrs...)
	}
	c.subs[key] = s
	return s
}

func (c *clusterer) of(n *ir.Node) *dotGraph {
	if c.part == nil {
		if c.layerOf(n) < 0 {
			return c.root
		}
		return c.layerSub(c.layerOf(n))
	}
	p, ok := c.part.Nodes[n.ID]
	if !ok || p.Device == "" {
		return c.root
	}
	dev := c.sub(c.root, "device "+p.Device, strings.ToUpper(p.Device), "style", "rounded,filled", "fillcolor", deviceFill(p.Device), "fontsize", "14")
	if p.Segment < 0 {
		return dev
	}
	label := fmt.Sprintf("segment %d", p.Segment)
	if caption := c.part.Segments[p.Segment]; caption != "" {
		label += ": " + caption
	}
	return c.sub(dev, fmt.Sprintf("device %s segment %08d", p.Device, p.Segment), label, "style", "rounded,filled", "fillcolor", "#ffffff")
}

// cut reports whether the edge from a to n crosses devices.
func (c *clusterer) cut(a, n *ir.Node) bool {
	if c.part == nil {
		return false
	}
	pa, oka := c.part.Nodes[a.ID]
	pn, okn := c.part.Nodes[n.ID]
	return oka && okn && pa.Device != "" && pn.Device != "" && pa.Device != pn.Device
}

// deviceFill tints a device cluster: NPUs green, CPUs blue, others grey.
func deviceFill(dev string) string {
	switch strings.ToLower(dev) {
	case "npu":
		return "#ecfdf5"
	case "cpu":
		return "#eff6ff"
	}
	return "#f9fafb"
}

// TensorBytes formats the storage size of a tensor of type t: "1.5 KiB"
// for a static type, or a formula in the shape's symbols such as
// "256·n_tokens B" (n_tokens tokens of 256 bytes each) for a symbolic one.
func TensorBytes(t ir.Type) string {
	if t.Shape.IsStatic() {
		b, err := t.Bytes()
		if err != nil {
			return "?"
		}
		return HumanBytes(b)
	}
	n := t.Shape.Numel()
	bs, ts := t.DType.BlockSize(), t.DType.TypeSize()
	if bs <= 0 || ts <= 0 || n.Coef%bs != 0 {
		return "? B"
	}
	parts := append([]string{strconv.FormatInt(n.Coef/bs*ts, 10)}, n.Factors...)
	return strings.Join(parts, "·") + " B"
}

// HumanBytes formats a byte count: exact below 1 KiB, then KiB, MiB or GiB
// with one decimal (two for GiB).
func HumanBytes(n int64) string {
	switch a := max(n, -n); {
	case a < 1<<10:
		return fmt.Sprintf("%d B", n)
	case a < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case a < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
}

// sortedKeys returns a map's keys in increasing order.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
