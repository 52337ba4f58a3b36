package viz

import (
	"fmt"
	"slices"
)

// InterferenceDOT returns the interference graph of a memory plan as an
// undirected DOT graph: one vertex per buffer that occupies memory, one edge
// between every two buffers live at a common step (so they must not share
// bytes). Vertices are coloured by the arena slot the plan gave them, that
// is by offset: buffers placed at the same offset reuse the same memory, and
// since they never interfere no edge joins two vertices of one colour
// unless the plan is wrong. The label gives the buffer, its size and offset.
// Palette colours repeat after twelve slots; the offset in the label is
// exact. The output is deterministic.
func InterferenceDOT(c *Chart) (*DOT, error) {
	if c == nil {
		return nil, fmt.Errorf("viz: interference: nil chart")
	}
	idx := c.sortedBuffers()
	offsets := make([]int64, 0, len(idx))
	for _, i := range idx {
		offsets = append(offsets, c.Buffers[i].Offset)
	}
	slices.Sort(offsets)
	offsets = slices.Compact(offsets)
	slot := func(off int64) int { s, _ := slices.BinarySearch(offsets, off); return s }

	d := newDOT(false)
	title := c.Title
	if title == "" {
		title = "interference"
	}
	d.root.Attrs("label", fmt.Sprintf("%s: %d buffers, %d arena slots", title, len(idx), len(offsets)),
		"labelloc", "t", "fontname", "Helvetica", "fontsize", "14",
		"layout", "neato", "overlap", "false", "splines", "true", "sep", "+4")
	d.root.nodeDefs = []string{"shape", "box", "style", "rounded,filled", "fontname", "Helvetica", "fontsize", "9", "margin", "0.04,0.02"}
	d.root.edgeDefs = []string{"color", "#9ca3af", "penwidth", "0.6"}
	nodes := make([]*dotNode, len(c.Buffers))
	for _, i := range idx {
		b := c.Buffers[i]
		label := b.Label
		if label == "" {
			label = fmt.Sprintf("buffer %d", i)
		}
		s := slot(b.Offset)
		n := d.root.Node(fmt.Sprintf("b%d", i)).Attrs("label", fmt.Sprintf("%s\n%s @ %d", label, HumanBytes(b.Size), b.Offset))
		n.Attrs("fillcolor", palette[s%len(palette)], "tooltip", fmt.Sprintf("slot %d, steps [%d, %d)", s, b.Start, b.End))
		nodes[i] = n
	}
	// Sweep in start order: each buffer meets the earlier ones still live.
	var live []int
	for _, i := range idx {
		b := c.Buffers[i]
		kept := live[:0]
		for _, j := range live {
			if c.Buffers[j].End > b.Start {
				kept = append(kept, j)
			}
		}
		live = kept
		for _, j := range live {
			e := d.Edge(nodes[j], nodes[i], "")
			if overlaps(c.Buffers[j], b) {
				e.Attrs("color", colorCut, "penwidth", "2", "tooltip", "overlapping addresses")
			}
		}
		live = append(live, i)
	}
	return d, nil
}

// overlaps reports whether two buffers share arena bytes.
func overlaps(a, b Lifetime) bool {
	return a.Offset < b.Offset+b.Size && b.Offset < a.Offset+a.Size
}
