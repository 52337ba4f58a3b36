package viz

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
)

// The interference matrix answers "which buffers may share memory" for a
// whole model at a glance, where the interference graph (InterferenceDOT)
// becomes a hairball past a few dozen buffers. Buffers are grouped by
// transformer layer; each group is a small matrix of its buffers and of
// the buffers other groups leave live during its steps (the residual
// stream). Consecutive layers whose matrices are identical (every layer
// of a decoder but the first and the last, as a rule) are drawn once.

// Matrix cell colours.
const (
	cellConflict = "#9ca3af" // live at a common step: must not share
	cellFree     = "#ffffff" // never live together: may share
	cellShared   = "#34d399" // never live together, and the plan shares bytes
	cellError    = "#dc2626" // live together and overlapping: a wrong plan
	cellSelf     = "#1f2937"
)

// Geometry of the matrix, in pixels.
const (
	matCell   = 12
	matLeft   = 16
	matFont   = 10
	matHeadSz = 12
)

// matrixBlock is one drawn matrix: the buffers of one layer (or of a run of
// identical layers), in rows.
type matrixBlock struct {
	layers  []int // the layers it stands for (-1: outside every layer)
	rows    []int // buffer indices: carried-in buffers first, then the layer's own
	carried int   // how many of rows are carried in from other groups
	cells   [][]byte
}

// cell codes
const (
	codeSelf = iota
	codeFree
	codeShared
	codeConflict
	codeError
)

// interferes reports whether two buffers are live at a common step.
func interferes(a, b Lifetime) bool { return a.Start < b.End && b.Start < a.End }

// matrixBlocks groups the chart's live buffers by layer.
func (c *Chart) matrixBlocks() []matrixBlock {
	idx := c.sortedBuffers()
	if len(c.Bands) == 1 {
		// A chart zoomed to one layer (Chart.Layer): one matrix, the
		// buffers other layers leave live first.
		var carried, own []int
		for _, i := range idx {
			if c.Buffers[i].Layer == c.Bands[0].Layer {
				own = append(own, i)
			} else {
				carried = append(carried, i)
			}
		}
		return []matrixBlock{c.block(c.Bands[0].Layer, carried, own)}
	}
	// Buffers outside every layer form two groups: those that start
	// before the last layer does (the embedding, tables such as RoPE's:
	// group before) and the others (the output head: group after).
	lastLayer, lastStart := -1, math.MaxInt
	for _, i := range idx {
		if b := c.Buffers[i]; b.Layer > lastLayer {
			lastLayer, lastStart = b.Layer, b.Start
		}
	}
	group := func(i int) int {
		b := c.Buffers[i]
		switch {
		case b.Layer >= 0:
			return b.Layer
		case b.Start < lastStart:
			return groupBefore
		}
		return groupAfter
	}
	var layers []int
	byLayer := map[int][]int{}
	for _, i := range idx {
		l := group(i)
		if _, ok := byLayer[l]; !ok {
			layers = append(layers, l)
		}
		byLayer[l] = append(byLayer[l], i)
	}
	// Groups in the order they start.
	slices.SortStableFunc(layers, func(a, b int) int {
		return c.Buffers[byLayer[a][0]].Start - c.Buffers[byLayer[b][0]].Start
	})
	var blocks []matrixBlock
	for _, l := range layers {
		own := byLayer[l]
		first, last := math.MaxInt, math.MinInt
		for _, i := range own {
			first, last = min(first, c.Buffers[i].Start), max(last, c.Buffers[i].End)
		}
		var carried []int
		for _, i := range idx {
			b := c.Buffers[i]
			if group(i) != l && b.Start < first && b.End > first {
				carried = append(carried, i)
			}
		}
		blocks = append(blocks, c.block(l, carried, own))
	}
	// Merge runs of consecutive layers with the same matrix (same ops,
	// sizes and cells).
	var out []matrixBlock
	for _, b := range blocks {
		if n := len(out); n > 0 && b.layers[0] >= 0 && out[n-1].layers[0] >= 0 &&
			b.layers[0] == out[n-1].layers[len(out[n-1].layers)-1]+1 && c.sameBlock(out[n-1], b) {
			out[n-1].layers = append(out[n-1].layers, b.layers[0])
			continue
		}
		out = append(out, b)
	}
	return out
}

// block makes the matrix of a layer's buffers own, after the buffers
// carried in from earlier steps.
func (c *Chart) block(layer int, carried, own []int) matrixBlock {
	b := matrixBlock{layers: []int{layer}, rows: append(slices.Clone(carried), own...), carried: len(carried)}
	b.cells = make([][]byte, len(b.rows))
	for r, i := range b.rows {
		b.cells[r] = make([]byte, len(b.rows))
		for col, j := range b.rows {
			x, y := c.Buffers[i], c.Buffers[j]
			switch {
			case r == col:
				b.cells[r][col] = codeSelf
			case interferes(x, y) && overlaps(x, y):
				b.cells[r][col] = codeError
			case interferes(x, y):
				b.cells[r][col] = codeConflict
			case overlaps(x, y):
				b.cells[r][col] = codeShared
			default:
				b.cells[r][col] = codeFree
			}
		}
	}
	return b
}

// sameBlock reports whether two blocks draw the same matrix: the same
// cells, and row by row buffers of the same group and size.
func (c *Chart) sameBlock(a, b matrixBlock) bool {
	if len(a.rows) != len(b.rows) || a.carried != b.carried {
		return false
	}
	for r := range a.rows {
		x, y := c.Buffers[a.rows[r]], c.Buffers[b.rows[r]]
		if x.Group != y.Group || x.Size != y.Size || !slices.Equal(a.cells[r], b.cells[r]) {
			return false
		}
	}
	return true
}

// The groups of buffers outside every layer.
const (
	groupBefore = -2 // starting before the last layer: the embedding, the RoPE table
	groupAfter  = -1 // the rest: the output head
)

// layerName names a block's layers: "layer 3", "layers 1–22", "outside
// the layers", "after the last layer".
func layerName(ls []int) string {
	switch {
	case ls[0] == groupBefore:
		return "outside the layers"
	case ls[0] < 0:
		return "after the last layer"
	case len(ls) == 1:
		return "layer " + strconv.Itoa(ls[0])
	}
	return fmt.Sprintf("layers %d–%d", ls[0], ls[len(ls)-1])
}

// rowLabel is a matrix row's text: number, buffer, size, offset.
func (c *Chart) rowLabel(n int, i int, carried bool) string {
	b := c.Buffers[i]
	label := b.Label
	if label == "" {
		label = "buffer " + strconv.Itoa(i)
	}
	s := fmt.Sprintf("%d  %s, %s @ %d", n, label, HumanBytes(b.Size), b.Offset)
	if carried {
		if b.Layer >= 0 {
			s += fmt.Sprintf(" (from layer %d)", b.Layer)
		} else {
			s += " (from outside the layers)"
		}
	}
	return clipText(s, 520, matFont, false)
}

// WriteInterferenceSVG draws the plan's interference as matrices, one per
// layer (identical consecutive layers drawn once): row and column k are
// the same buffer; a grey cell means the two are live at a common step and
// must not share memory, a white one that they never are and may, a green
// one that the plan does place them in shared bytes, and a red one that
// the plan overlaps two live buffers (a wrong plan). Each layer's matrix
// also holds the buffers earlier steps leave live when it starts, such as
// the residual stream. The output is deterministic.
func (c *Chart) WriteInterferenceSVG(w io.Writer) error {
	bw := bufio.NewWriter(w)
	l := c.matrixLayout()
	width, height := l.width, l.height
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(bw, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	ty := 22
	for _, t := range l.titleLines {
		fmt.Fprintf(bw, `<text x="%d" y="%d" font-size="15" font-weight="bold">%s</text>`+"\n", matLeft, ty, esc(t))
		ty += 18
	}
	ty -= 2
	for _, t := range l.subLines {
		fmt.Fprintf(bw, `<text x="%d" y="%d" fill="#4b5563">%s</text>`+"\n", matLeft, ty, esc(t))
		ty += 14
	}
	for k, e := range matrixLegend {
		ly := l.legendTop + 16*k
		fmt.Fprintf(bw, `<rect x="%d" y="%d" width="14" height="11" fill="%s" stroke="#6b7280" stroke-width="0.5"/>`+"\n", matLeft, ly, e.fill)
		fmt.Fprintf(bw, `<text x="%d" y="%d">%s</text>`+"\n", matLeft+22, ly+9, esc(e.text))
	}
	for k, p := range l.blocks {
		c.writeMatrix(bw, p.b, l.heads[k], p.top, l.gridX)
	}
	fmt.Fprintf(bw, "</svg>\n")
	return bw.Flush()
}

// matrixLegend is the interference view's legend: a cell's colour and
// what it means.
var matrixLegend = []struct{ fill, text string }{
	{cellConflict, "live at a common step: must not share memory"},
	{cellFree, "never live together: may share memory"},
	{cellShared, "never live together, and this plan shares their bytes"},
	{cellError, "live together yet overlapping: a wrong plan"},
}

// placedBlock is a matrix block and the ordinate of its top.
type placedBlock struct {
	b   matrixBlock
	top int
}

// interferenceLayout is the geometry of the interference view.
type interferenceLayout struct {
	width, height        int
	gridX                int // the matrices' left edge, right of the row labels
	titleLines, subLines []string
	legendTop            int
	heads                []string
	blocks               []placedBlock
}

// matrixLayout measures the label column and the widest matrix, wraps the
// title and the summary, and stacks the legend and every block.
func (c *Chart) matrixLayout() *interferenceLayout {
	blocks := c.matrixBlocks()
	l := &interferenceLayout{}

	// Measure: the label column and the widest matrix.
	labelW, maxRows := 0.0, 0
	for _, b := range blocks {
		maxRows = max(maxRows, len(b.rows))
		for r, i := range b.rows {
			labelW = max(labelW, TextWidth(c.rowLabel(r+1, i, r < b.carried), matFont, false))
		}
	}
	l.gridX = matLeft + int(math.Ceil(labelW)) + 8
	legendW := 0.0
	for _, e := range matrixLegend {
		legendW = max(legendW, 22+TextWidth(e.text, 11, false))
	}
	l.heads = make([]string, len(blocks))
	for k, b := range blocks {
		l.heads[k] = blockHead(b)
		legendW = max(legendW, TextWidth(l.heads[k], matHeadSz, true))
	}
	l.width = max(l.gridX+maxRows*matCell+matLeft, matLeft+int(math.Ceil(legendW))+matLeft, 480)

	title := c.Title
	if title == "" {
		title = "interference"
	}
	textW := float64(l.width - 2*matLeft)
	l.titleLines = wrapText(title+": which buffers may share memory", textW, 15, true)
	pairs, may, shared := c.pairCounts()
	sub := fmt.Sprintf("%d buffers, %d pairs: %d may share memory (never live together), %d share bytes in this plan", len(c.sortedBuffers()), pairs, may, shared)
	l.subLines = wrapText(sub, textW, 11, false)

	// Height: title, summary, legend, then every block.
	y := 22 + 18*(len(l.titleLines)-1) + 16 + 14*(len(l.subLines)-1) + 10
	l.legendTop = y
	y += 16*len(matrixLegend) + 10
	for _, b := range blocks {
		l.blocks = append(l.blocks, placedBlock{b, y})
		y += matHeadSz + 8 + matCell + len(b.rows)*matCell + 18
	}
	l.height = y
	return l
}

// writeMatrix writes one block's matrix under its head, at ordinate top.
func (c *Chart) writeMatrix(bw *bufio.Writer, b matrixBlock, head string, top, gridX int) {
	n := len(b.rows)
	fmt.Fprintf(bw, `<g data-layers="%s">`+"\n", esc(layerName(b.layers)))
	fmt.Fprintf(bw, `<text x="%d" y="%d" font-size="%d" font-weight="bold">%s</text>`+"\n", matLeft, top+matHeadSz, matHeadSz, esc(head))
	top += matHeadSz + 8
	// Column numbers.
	fmt.Fprintf(bw, `<g font-size="8" fill="#6b7280" text-anchor="middle">`+"\n")
	for col := range n {
		fmt.Fprintf(bw, `<text x="%s" y="%d">%d</text>`+"\n", f2(float64(gridX+col*matCell)+matCell/2.0), top+9, col+1)
	}
	fmt.Fprintf(bw, "</g>\n")
	top += matCell
	for r, i := range b.rows {
		ry := top + r*matCell
		fill := "#1f2937"
		if r < b.carried {
			fill = "#6b7280"
		}
		fmt.Fprintf(bw, `<text x="%d" y="%d" font-size="%d" fill="%s">%s</text>`+"\n", matLeft, ry+matCell-2, matFont, fill, esc(c.rowLabel(r+1, i, r < b.carried)))
		// Only the coloured cells are drawn; the free ones are the
		// white background.
		for col := range b.rows {
			code := b.cells[r][col]
			if code == codeFree {
				continue
			}
			colour := [...]string{cellSelf, cellFree, cellShared, cellConflict, cellError}[code]
			tip := ""
			if code != codeSelf {
				tip = fmt.Sprintf("<title>%d and %d: %s</title>", r+1, col+1, [...]string{"", "may share", "share bytes in this plan", "must not share", "overlap while both live"}[code])
			}
			fmt.Fprintf(bw, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s">%s</rect>`+"\n",
				gridX+col*matCell, ry, matCell, matCell, colour, tip)
		}
	}
	// The grid, over the cells.
	fmt.Fprintf(bw, `<path fill="none" stroke="#e5e7eb" stroke-width="0.5" d="`)
	for k := 1; k < n; k++ {
		fmt.Fprintf(bw, "M%d %dV%d M%d %dH%d ", gridX+k*matCell, top, top+n*matCell, gridX, top+k*matCell, gridX+n*matCell)
	}
	fmt.Fprintf(bw, `"/>`+"\n")
	if b.carried > 0 {
		// A line under the carried-in rows.
		ly := top + b.carried*matCell
		fmt.Fprintf(bw, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#6b7280" stroke-width="1"/>`+"\n", matLeft, ly, gridX+n*matCell, ly)
	}
	fmt.Fprintf(bw, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#6b7280"/>`+"\n", gridX, top, n*matCell, n*matCell)
	fmt.Fprintf(bw, "</g>\n")
}

// blockHead is the heading of a block.
func blockHead(b matrixBlock) string {
	head := fmt.Sprintf("%s: %d buffers", layerName(b.layers), len(b.rows)-b.carried)
	if b.carried > 0 {
		head += fmt.Sprintf(", and %d of other layers live during its steps", b.carried)
	}
	if len(b.layers) > 1 {
		head += fmt.Sprintf(" (the same in each; rows name layer %d's)", b.layers[0])
	}
	return head
}

// pairCounts counts the pairs of live buffers, those never live together
// (which may share memory) and those the plan places in shared bytes.
func (c *Chart) pairCounts() (pairs, may, shared int) {
	idx := c.sortedBuffers()
	for a := range idx {
		for b := a + 1; b < len(idx); b++ {
			x, y := c.Buffers[idx[a]], c.Buffers[idx[b]]
			pairs++
			if !interferes(x, y) {
				may++
				if overlaps(x, y) {
					shared++
				}
			}
		}
	}
	return pairs, may, shared
}
