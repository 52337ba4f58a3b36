package viz

import (
	"bufio"
	"cmp"
	"fmt"
	"html"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/planner"
)

// Lifetime is one rectangle of a liveness chart: a tensor that occupies
// bytes [Offset, Offset+Size) of the arena during the half-open range of
// execution steps [Start, End).
type Lifetime struct {
	// Start and End are execution steps: live over [Start, End).
	Start, End int
	// Offset and Size place the buffer in the arena, in bytes.
	Offset, Size int64
	// Node is the IR node whose value the buffer holds, or -1 when the
	// buffer comes from a bare planning instance. The HTML report uses it
	// to link the chart to the IR.
	Node int
	// Label names the buffer in tooltips ("%12 mul_mat Qcur-0").
	Label string
	// Group selects the colour: buffers of one group (typically one op)
	// share a colour and a legend entry. Empty means "buffer".
	Group string
	// Layer is the transformer layer of the node, or -1.
	Layer int
}

// Chart is a memory plan as the liveness chart and the interference graph
// draw it: buffers placed in an arena over execution steps.
type Chart struct {
	// Title heads the chart.
	Title string
	// Buffers are the rectangles; those live at no step (Start >= End or
	// Size 0) are not drawn.
	Buffers []Lifetime
	// Arena is the arena size (the plan's result); LowerBound the largest
	// number of bytes live at one step, which no plan can beat.
	Arena, LowerBound int64
	// Steps is the number of execution steps; 0 means the largest End.
	Steps int
	// StepOffset is added to step numbers on the axis and in tooltips (a
	// zoomed chart starts at its first step; see Layer).
	StepOffset int
	// Bands are drawn behind the buffers, one tinted column per layer
	// (ChartFromPlan sets them from the execution order).
	Bands []Band
}

// ChartFromProblem builds a chart from a bare planning instance and its
// solution (for example one read by planner.ReadCSV). Sizes are the
// aligned sizes the planner placed; buffers are labelled by their IDs. It
// fails when the assignment does not solve the problem.
func ChartFromProblem(p *planner.Problem, a *planner.Assignment) (*Chart, error) {
	if err := planner.Validate(p, a); err != nil {
		return nil, fmt.Errorf("viz: liveness: %w", err)
	}
	c := &Chart{Arena: a.Arena, LowerBound: planner.LowerBound(p)}
	for i, b := range p.Buffers {
		c.Buffers = append(c.Buffers, Lifetime{
			Start: b.Start, End: b.End, Offset: a.Offsets[i], Size: p.AlignedSize(i),
			Node: -1, Label: "buffer " + strconv.Itoa(b.ID), Layer: -1,
		})
	}
	return c, nil
}

// ChartFromPlan builds the chart of a graph's memory plan: one rectangle
// per planned buffer over the plan's execution order, labelled with the
// node that allocated it (and the nodes that took it over in place), and
// coloured by that node's op; kernel workspaces form their own group.
func ChartFromPlan(gp *planner.MemoryPlan) (*Chart, error) {
	if gp == nil || gp.Problem == nil || gp.Assignment == nil || gp.Graph == nil {
		return nil, fmt.Errorf("viz: liveness: incomplete graph plan")
	}
	c, err := ChartFromProblem(gp.Problem, gp.Assignment)
	if err != nil {
		return nil, err
	}
	g := gp.Graph
	c.Steps = len(gp.Order)
	c.Bands = layerBands(gp)
	c.Title = fmt.Sprintf("%s: %s plan", g.Name, gp.Strategy)
	if len(gp.Buffers) != len(c.Buffers) {
		return nil, fmt.Errorf("viz: liveness: plan of %q describes %d buffers, its problem has %d", g.Name, len(gp.Buffers), len(c.Buffers))
	}
	for i, info := range gp.Buffers {
		if len(info.Nodes) == 0 {
			continue
		}
		ids := info.Nodes
		for _, id := range ids {
			if id < 0 || id >= len(g.Nodes) || g.Nodes[id] == nil || g.Nodes[id].ID != id {
				return nil, fmt.Errorf("viz: liveness: buffer %d: node %%%d is not in graph %q", i, id, g.Name)
			}
		}
		n := g.Nodes[ids[0]]
		b := &c.Buffers[i]
		b.Node, b.Group, b.Layer = n.ID, string(n.Op), n.Layer
		b.Label = fmt.Sprintf("%%%d %s", n.ID, n.Op)
		if n.Name != "" {
			b.Label += " " + n.Name
		}
		switch info.Kind {
		case planner.KindWorkspace:
			b.Label, b.Group = "workspace of "+b.Label, "workspace"
		case planner.KindInput, planner.KindOutput:
			b.Group = info.Kind
		}
		if len(ids) > 1 {
			more := make([]string, len(ids)-1)
			for j, id := range ids[1:] {
				more[j] = "%" + strconv.Itoa(id)
			}
			b.Label += " (in place: " + strings.Join(more, " ") + ")"
		}
	}
	return c, nil
}

// LabelNodes names each buffer after the IR node it holds, using
// bufferNode (buffer index -> node ID, as a graph planner records it) and g,
// the graph the plan was made for: the label becomes "%ID op name" and the
// group the op. Buffers without a node keep their labels.
func (c *Chart) LabelNodes(g *ir.Graph, bufferNode []int) error {
	if len(bufferNode) != len(c.Buffers) {
		return fmt.Errorf("viz: liveness: %d buffer nodes for %d buffers", len(bufferNode), len(c.Buffers))
	}
	for i, id := range bufferNode {
		if id < 0 {
			continue
		}
		if id >= len(g.Nodes) || g.Nodes[id] == nil || g.Nodes[id].ID != id {
			return fmt.Errorf("viz: liveness: buffer %d: node %%%d is not in graph %q", i, id, g.Name)
		}
		n := g.Nodes[id]
		b := &c.Buffers[i]
		b.Node, b.Group = id, string(n.Op)
		b.Label = fmt.Sprintf("%%%d %s", id, n.Op)
		if n.Name != "" {
			b.Label += " " + n.Name
		}
	}
	return nil
}

// Geometry of the SVG chart, in pixels.
const (
	chartLeft   = 84
	chartBottom = 48
	chartLegend = 190 // the least legend width
	chartHeight = 460
	chartMinW   = 480
	chartMaxW   = 1400
)

// palette is the fill of chart groups and interference slots, in order.
var palette = []string{
	"#60a5fa", "#f97316", "#34d399", "#f472b6", "#a78bfa", "#facc15",
	"#22d3ee", "#94a3b8", "#a3e635", "#b45309", "#e11d48", "#0d9488",
}

// steps returns the x extent.
func (c *Chart) steps() int {
	n := c.Steps
	for _, b := range c.Buffers {
		n = max(n, b.End)
	}
	return max(n, 1)
}

// groups returns the chart's group names in sorted order and a colour for
// each.
func (c *Chart) groups() ([]string, map[string]string) {
	set := map[string]bool{}
	for _, b := range c.Buffers {
		set[groupName(b.Group)] = true
	}
	names := sortedKeys(set)
	col := make(map[string]string, len(names))
	for i, n := range names {
		col[n] = palette[i%len(palette)]
	}
	return names, col
}

func groupName(g string) string {
	if g == "" {
		return "buffer"
	}
	return g
}

// load returns the bytes live at each step 0..steps-1.
func (c *Chart) load(steps int) []int64 {
	diff := make([]int64, steps+1)
	for _, b := range c.Buffers {
		s, e := max(b.Start, 0), min(b.End, steps)
		if s >= e || b.Size <= 0 {
			continue
		}
		diff[s] += b.Size
		diff[e] -= b.Size
	}
	out := make([]int64, steps)
	var cur int64
	for i := range out {
		cur += diff[i]
		out[i] = cur
	}
	return out
}

// WriteSVG draws the chart as a standalone SVG image: x is the execution
// step, y the arena offset (growing upwards), each buffer a rectangle as
// tall as its size, coloured by group. A dashed red line marks the lower
// bound, a black one the arena, and a grey outline the bytes live at each
// step. Every rectangle carries a tooltip and, when it has a node, a
// data-node attribute. The output is deterministic.
func (c *Chart) WriteSVG(w io.Writer) error {
	bw := bufio.NewWriter(w)
	c.svg(bw, nil)
	return bw.Flush()
}

// svg writes the chart; keyOf, when set, gives each node's HTML report key,
// written as a data-k attribute that the report's script highlights.
func (c *Chart) svg(w *bufio.Writer, keyOf func(node int) string) {
	l := c.layout()
	c.svgHeader(w, l)
	c.svgAxes(w, l)
	c.svgBands(w, l)
	c.svgBuffers(w, l, keyOf)
	c.svgLines(w, l)
	c.svgLegend(w, l)
	fmt.Fprintf(w, "</svg>\n")
}

// chartLayout is the geometry of one liveness chart.
type chartLayout struct {
	steps, plotW  int
	width, height int
	chartTop      int
	titleLines    []string
	subLines      []string
	names, legend []string
	colour        map[string]string
	grouped       bool
	yStep         int64
	yMax          float64
}

// x is the abscissa of step s.
func (l *chartLayout) x(s int) float64 {
	return chartLeft + float64(s)*float64(l.plotW)/float64(l.steps)
}

// y is the ordinate of arena offset off.
func (l *chartLayout) y(off int64) float64 {
	return float64(l.chartTop+chartHeight) - float64(off)*chartHeight/l.yMax
}

// layout sizes the canvas to the steps, the wrapped title and summary and
// the legend, and scales the offset axis to the highest top.
func (c *Chart) layout() *chartLayout {
	l := &chartLayout{steps: c.steps()}
	l.plotW = min(max(l.steps*6, chartMinW), chartMaxW)
	l.names, l.colour = c.groups()
	names := l.names
	l.grouped = len(names) > 1 || len(names) == 1 && names[0] != groupName("")
	l.legend = c.legendLines(names, l.grouped)
	legendW := chartLegend
	for _, s := range l.legend {
		legendW = max(legendW, 16+22+int(math.Ceil(TextWidth(s, 11, false)))+8)
	}
	l.width = chartLeft + l.plotW + legendW
	title := c.Title
	if title == "" {
		title = "liveness"
	}
	// The title and the summary wrap to the canvas instead of running off
	// it; the plot moves down by the extra lines.
	textW := float64(l.width - chartText - 8)
	l.titleLines = wrapText(title, textW, 15, true)
	l.subLines = wrapText(c.summary(), textW, 11, false)
	l.chartTop = 22 + 18*(len(l.titleLines)-1) + 16 + 14*(len(l.subLines)-1) + 10
	l.height = l.chartTop + chartHeight + chartBottom
	top := max(c.Arena, c.LowerBound, 1)
	for _, b := range c.Buffers {
		top = max(top, b.Offset+b.Size)
	}
	l.yStep = byteStep(top, 6)
	l.yMax = float64((top + l.yStep - 1) / l.yStep * l.yStep)
	return l
}

// svgHeader opens the SVG and writes the title and the summary.
func (c *Chart) svgHeader(w *bufio.Writer, l *chartLayout) {
	width, height := l.width, l.height
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="11">`+"\n",
		width, height, width, height)
	fmt.Fprintf(w, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	ty := 22
	for _, t := range l.titleLines {
		fmt.Fprintf(w, `<text x="%d" y="%d" font-size="15" font-weight="bold">%s</text>`+"\n", chartText, ty, esc(t))
		ty += 18
	}
	ty -= 2
	for _, t := range l.subLines {
		fmt.Fprintf(w, `<text x="%d" y="%d" fill="#4b5563">%s</text>`+"\n", chartText, ty, esc(t))
		ty += 14
	}
}

// svgAxes writes the grid, the tick labels and the axis titles.
func (c *Chart) svgAxes(w *bufio.Writer, l *chartLayout) {
	x, y, plotW, chartTop, steps := l.x, l.y, l.plotW, l.chartTop, l.steps
	fmt.Fprintf(w, `<g stroke="#e5e7eb" stroke-width="1">`+"\n")
	var yTicks []float64
	for t := int64(0); float64(t) <= l.yMax; t += l.yStep {
		yTicks = append(yTicks, float64(t))
	}
	for _, t := range yTicks {
		fmt.Fprintf(w, `<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", f2(chartLeft), f2(y(int64(t))), f2(chartLeft+float64(plotW)), f2(y(int64(t))))
	}
	fmt.Fprintf(w, "</g>\n")
	fmt.Fprintf(w, `<g fill="#374151" text-anchor="end">`+"\n")
	for _, t := range yTicks {
		fmt.Fprintf(w, `<text x="%d" y="%s">%s</text>`+"\n", chartLeft-6, f2(y(int64(t))+4), esc(HumanBytes(int64(t))))
	}
	fmt.Fprintf(w, "</g>\n")
	fmt.Fprintf(w, `<g fill="#374151" text-anchor="middle">`+"\n")
	for _, t := range ticks(float64(steps), 10) {
		fmt.Fprintf(w, `<text x="%s" y="%d">%d</text>`+"\n", f2(x(int(t))), chartTop+chartHeight+16, int(t)+c.StepOffset)
	}
	fmt.Fprintf(w, `<text x="%s" y="%d">execution step</text>`+"\n", f2(chartLeft+float64(plotW)/2), chartTop+chartHeight+34)
	fmt.Fprintf(w, "</g>\n")
	fmt.Fprintf(w, `<text transform="translate(16,%s) rotate(-90)" text-anchor="middle" fill="#374151">arena offset</text>`+"\n", f2(float64(chartTop+chartHeight/2)))
}

// svgBands writes the layer bands, behind the buffers: every other layer
// tinted, each labelled at the top (skipped when too narrow to read).
func (c *Chart) svgBands(w *bufio.Writer, l *chartLayout) {
	x, chartTop := l.x, l.chartTop
	if len(c.Bands) > 0 {
		fmt.Fprintf(w, `<g font-size="9" fill="#6b7280" text-anchor="middle">`+"\n")
		for i, b := range c.Bands {
			x0, x1 := x(b.Start), x(b.End)
			if i%2 == 0 {
				fmt.Fprintf(w, `<rect x="%s" y="%d" width="%s" height="%d" fill="#f3f4f6" data-band="%s"/>`+"\n",
					f2(x0), chartTop, f2(max(x1-x0, 0.5)), chartHeight, esc(b.Label))
			}
			if x1-x0 >= 14 {
				fmt.Fprintf(w, `<text x="%s" y="%d">%s</text>`+"\n", f2((x0+x1)/2), chartTop+10, esc(b.Label))
			}
		}
		fmt.Fprintf(w, "</g>\n")
	}
}

// svgBuffers writes one rectangle per buffer. Without groups (a bare
// instance) each buffer gets its own colour.
func (c *Chart) svgBuffers(w *bufio.Writer, l *chartLayout, keyOf func(node int) string) {
	x, y, colour, grouped := l.x, l.y, l.colour, l.grouped
	fmt.Fprintf(w, `<g stroke="#1f2937" stroke-width="0.4">`+"\n")
	for i, b := range c.Buffers {
		if b.Start >= b.End || b.Size <= 0 {
			continue
		}
		x0, x1 := x(b.Start), x(b.End)
		y0, y1 := y(b.Offset+b.Size), y(b.Offset)
		h := max(y1-y0, 0.5)
		label := b.Label
		if label == "" {
			label = "buffer " + strconv.Itoa(i)
		}
		tip := fmt.Sprintf("%s: %s at offset %d, steps [%d, %d)", label, HumanBytes(b.Size), b.Offset, b.Start+c.StepOffset, b.End+c.StepOffset)
		attrs := ""
		if b.Node >= 0 {
			attrs = fmt.Sprintf(` data-node="%d"`, b.Node)
			if keyOf != nil {
				if k := keyOf(b.Node); k != "" {
					attrs += fmt.Sprintf(` data-k="%s"`, k)
				}
			}
		}
		fill := colour[groupName(b.Group)]
		if !grouped {
			fill = palette[i%len(palette)]
		}
		fmt.Fprintf(w, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"%s><title>%s</title></rect>`+"\n",
			f2(x0), f2(y0), f2(x1-x0), f2(h), fill, attrs, esc(tip))
	}
	fmt.Fprintf(w, "</g>\n")
}

// svgLines writes the live bytes per step, then the lower bound and the
// arena, and the plot's frame.
func (c *Chart) svgLines(w *bufio.Writer, l *chartLayout) {
	x, y, plotW, chartTop := l.x, l.y, l.plotW, l.chartTop
	load := c.load(l.steps)
	fmt.Fprintf(w, `<path fill="none" stroke="#6b7280" stroke-width="1" d="`)
	for s, v := range load {
		cmd := "L"
		if s == 0 {
			cmd = "M"
		}
		fmt.Fprintf(w, "%s%s %s H%s ", cmd, f2(x(s)), f2(y(v)), f2(x(s+1)))
	}
	fmt.Fprintf(w, `"><title>bytes live at each step</title></path>`+"\n")
	if c.LowerBound > 0 {
		ly := f2(y(c.LowerBound))
		fmt.Fprintf(w, `<line x1="%d" y1="%s" x2="%s" y2="%s" stroke="#dc2626" stroke-width="1.5" stroke-dasharray="6 3"/>`+"\n",
			chartLeft, ly, f2(chartLeft+float64(plotW)), ly)
	}
	if c.Arena > 0 {
		ay := f2(y(c.Arena))
		fmt.Fprintf(w, `<line x1="%d" y1="%s" x2="%s" y2="%s" stroke="#111827" stroke-width="1.5"/>`+"\n",
			chartLeft, ay, f2(chartLeft+float64(plotW)), ay)
	}
	fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#9ca3af"/>`+"\n", chartLeft, chartTop, plotW, chartHeight)
}

// svgLegend writes the legend: the lines first, then the groups.
func (c *Chart) svgLegend(w *bufio.Writer, l *chartLayout) {
	legend, colour := l.legend, l.colour
	lx := chartLeft + l.plotW + 16
	ly := l.chartTop + 4
	line := func(stroke, extra, text string) {
		fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="1.5"%s/>`+"\n", lx, ly+5, lx+16, ly+5, stroke, extra)
		fmt.Fprintf(w, `<text x="%d" y="%d">%s</text>`+"\n", lx+22, ly+9, esc(text))
		ly += 16
	}
	strokes := [][2]string{}
	if c.Arena > 0 {
		strokes = append(strokes, [2]string{"#111827", ""})
	}
	if c.LowerBound > 0 {
		strokes = append(strokes, [2]string{"#dc2626", ` stroke-dasharray="6 3"`})
	}
	strokes = append(strokes, [2]string{"#6b7280", ""})
	for i, s := range strokes {
		line(s[0], s[1], legend[i])
	}
	ly += 6
	for _, n := range legend[len(strokes):] {
		fmt.Fprintf(w, `<rect x="%d" y="%d" width="16" height="11" stroke="#1f2937" stroke-width="0.4" fill="%s"/>`+"\n", lx, ly, colour[n])
		fmt.Fprintf(w, `<text x="%d" y="%d">%s</text>`+"\n", lx+22, ly+9, esc(n))
		ly += 16
	}
}

// chartText is the x of the chart's title and summary.
const chartText = 16

// legendLines returns the legend's texts: the lines (arena, lower bound,
// bytes live), then the groups when the chart has them.
func (c *Chart) legendLines(names []string, grouped bool) []string {
	var l []string
	if c.Arena > 0 {
		l = append(l, "arena "+HumanBytes(c.Arena))
	}
	if c.LowerBound > 0 {
		l = append(l, "lower bound "+HumanBytes(c.LowerBound))
	}
	l = append(l, "bytes live")
	if grouped {
		l = append(l, names...)
	}
	return l
}

// summary is the chart's subtitle.
func (c *Chart) summary() string {
	live := 0
	for _, b := range c.Buffers {
		if b.Start < b.End && b.Size > 0 {
			live++
		}
	}
	s := fmt.Sprintf("%d buffers over %d steps", live, c.steps())
	if c.Arena > 0 {
		s += ", arena " + HumanBytes(c.Arena)
	}
	if c.LowerBound > 0 {
		s += ", lower bound " + HumanBytes(c.LowerBound)
		if c.Arena > 0 {
			s += fmt.Sprintf(" (arena/LB %.3f)", float64(c.Arena)/float64(c.LowerBound))
		}
	}
	return s
}

// byteStep returns a tick step for a byte axis up to top with about n
// ticks: a power of two, so that labels read 256 KiB, 512 KiB, 768 KiB.
func byteStep(top int64, n int64) int64 {
	step := int64(1)
	for step*n < top {
		step *= 2
	}
	return step
}

// ticks returns about n round values from 0 to max inclusive.
func ticks(maxV float64, n int) []float64 {
	if maxV <= 0 {
		return []float64{0}
	}
	raw := maxV / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	step := p
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= raw {
			step = m * p
			break
		}
	}
	step = max(step, 1)
	var out []float64
	for t := 0.0; t <= maxV+step*1e-9; t += step {
		out = append(out, math.Round(t))
	}
	return out
}

// f2 formats a coordinate with at most two decimals.
func f2(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// esc escapes text for SVG and HTML.
func esc(s string) string { return html.EscapeString(s) }

// sortedBuffers returns the indices of the chart's live buffers ordered by
// start step, then offset.
func (c *Chart) sortedBuffers() []int {
	var idx []int
	for i, b := range c.Buffers {
		if b.Start < b.End && b.Size > 0 {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(i, j int) int {
		a, b := c.Buffers[i], c.Buffers[j]
		return cmp.Or(cmp.Compare(a.Start, b.Start), cmp.Compare(a.Offset, b.Offset))
	})
	return idx
}
