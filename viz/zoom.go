package viz

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/irtool/irtool/planner"
)

// Band is a range of execution steps drawn as a labelled background column
// of a liveness chart: the steps of one transformer layer.
type Band struct {
	// Start and End are steps: the band covers [Start, End).
	Start, End int
	// Label is drawn at the top of the band ("L3").
	Label string
	// Layer is the layer the band stands for.
	Layer int
}

// layerBands returns one band per layer of the plan's execution order: the
// steps from the layer's first node to its last. Nodes outside every layer
// (inputs, the output head) do not start or end a band.
func layerBands(gp *planner.MemoryPlan) []Band {
	var bands []Band
	index := map[int]int{}
	for s, n := range gp.Order {
		if n == nil || n.Layer < 0 {
			continue
		}
		i, ok := index[n.Layer]
		if !ok {
			index[n.Layer] = len(bands)
			bands = append(bands, Band{Start: s, End: s + 1, Label: fmt.Sprintf("L%d", n.Layer), Layer: n.Layer})
			continue
		}
		bands[i].End = s + 1
	}
	slices.SortFunc(bands, func(a, b Band) int { return a.Start - b.Start })
	return bands
}

// Layer returns the chart zoomed to the steps of one layer's band (see
// Bands): only the buffers live during those steps, clipped to them, with
// their real offsets, so the picture shows what one layer keeps in the
// arena, including what earlier layers left live (the residual stream).
// Steps are renumbered from the band's start; StepOffset keeps the axis
// labels at the real step numbers.
func (c *Chart) Layer(layer int) (*Chart, error) {
	i := slices.IndexFunc(c.Bands, func(b Band) bool { return b.Layer == layer })
	if i < 0 {
		var have []string
		for _, b := range c.Bands {
			have = append(have, b.Label)
		}
		if len(have) == 0 {
			return nil, fmt.Errorf("viz: layer %d: the chart has no layers", layer)
		}
		return nil, fmt.Errorf("viz: layer %d: no such layer (have %s)", layer, strings.Join(have, " "))
	}
	band := c.Bands[i]
	z := &Chart{
		Title:      fmt.Sprintf("%s, layer %d (steps %d to %d)", c.Title, layer, band.Start+c.StepOffset, band.End-1+c.StepOffset),
		Arena:      c.Arena,
		LowerBound: c.LowerBound,
		Steps:      band.End - band.Start,
		StepOffset: c.StepOffset + band.Start,
		Bands:      []Band{{Start: 0, End: band.End - band.Start, Label: band.Label, Layer: layer}},
	}
	for _, b := range c.Buffers {
		s, e := max(b.Start, band.Start), min(b.End, band.End)
		if s >= e || b.Size <= 0 {
			continue
		}
		b.Start, b.End = s-band.Start, e-band.Start
		z.Buffers = append(z.Buffers, b)
	}
	return z, nil
}

// WriteTable writes the chart's buffers as a text table sorted by arena
// offset (then by start step): offset, end, size, the steps it is live,
// its layer and the buffer's label. Reading down the offset column shows
// which tensors share memory, in the order they are stacked in the arena.
func (c *Chart) WriteTable(w io.Writer) error {
	idx := make([]int, 0, len(c.Buffers))
	for i, b := range c.Buffers {
		if b.Start < b.End && b.Size > 0 {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(i, j int) int {
		a, b := c.Buffers[i], c.Buffers[j]
		if a.Offset != b.Offset {
			return int(min(max(a.Offset-b.Offset, -1), 1))
		}
		return a.Start - b.Start
	})
	title := c.Title
	if title == "" {
		title = "memory plan"
	}
	if _, err := fmt.Fprintf(w, "# %s\n# %s\n", title, c.summary()); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "offset\tend\tsize\tsteps\tlayer\t  buffer")
	for _, i := range idx {
		b := c.Buffers[i]
		layer := "-"
		if b.Layer >= 0 {
			layer = fmt.Sprint(b.Layer)
		}
		label := b.Label
		if label == "" {
			label = fmt.Sprintf("buffer %d", i)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t[%d,%d)\t%s\t  %s\n", b.Offset, b.Offset+b.Size, b.Size,
			b.Start+c.StepOffset, b.End+c.StepOffset, layer, label)
	}
	return tw.Flush()
}
