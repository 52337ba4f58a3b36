package viz_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/golden"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/viz"
)

// smallProblem is five buffers whose best arena equals the lower bound.
func smallProblem() *planner.Problem {
	return &planner.Problem{Alignment: 32, Buffers: []planner.Buffer{
		{ID: 0, Start: 0, End: 2, Size: 256},
		{ID: 1, Start: 1, End: 4, Size: 512},
		{ID: 2, Start: 2, End: 3, Size: 100},
		{ID: 3, Start: 3, End: 6, Size: 256},
		{ID: 4, Start: 4, End: 6, Size: 512},
		{ID: 5, Start: 5, End: 5, Size: 64}, // never live: not drawn
	}}
}

func solved(t *testing.T, p *planner.Problem) *viz.Chart {
	t.Helper()
	a, _, err := planner.Solve(context.Background(), p, planner.StrategyGreedySize, planner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := viz.ChartFromProblem(p, a)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLivenessSVGGolden(t *testing.T) {
	c := solved(t, smallProblem())
	c.Title = "small instance"
	var buf bytes.Buffer
	if err := c.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "liveness_small.svg"), buf.Bytes())
	checkSVG(t, buf.Bytes())
	textFits(t, buf.Bytes())
	out := buf.String()
	if got := strings.Count(out, "<rect x=") - 2; got != 5 { // minus background and frame
		t.Errorf("buffer rectangles: got %d, want 5 (the never-live buffer is not drawn)", got)
	}
	for _, want := range []string{
		`stroke="#dc2626" stroke-width="1.5" stroke-dasharray="6 3"`, // the lower-bound line
		"lower bound 768 B",
		"<title>buffer 2: 128 B at offset", // aligned size in the tooltip
		"execution step", "arena offset",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
}

// TestLivenessGeometry checks that rectangles sit where the plan put the
// buffers: heights proportional to sizes, x ranges to lifetimes.
func TestLivenessGeometry(t *testing.T) {
	c := &viz.Chart{Arena: 1000, LowerBound: 1000, Buffers: []viz.Lifetime{
		{Start: 0, End: 50, Offset: 0, Size: 500, Node: -1, Label: "a"},
		{Start: 50, End: 100, Offset: 500, Size: 250, Node: 7, Label: "b"},
	}}
	var buf bytes.Buffer
	if err := c.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	rects := svgRects(t, buf.Bytes())
	a, b := rects["a"], rects["b"]
	if a == nil || b == nil {
		t.Fatalf("rectangles a and b not found in %v", rects)
	}
	near := func(x, y float64) bool { return math.Abs(x-y) < 0.02 }
	if !near(a.h, 2*b.h) {
		t.Errorf("heights: a %v, b %v; want a = 2 b (500 vs 250 bytes)", a.h, b.h)
	}
	if !near(a.w, b.w) || !near(a.x+a.w, b.x) {
		t.Errorf("x ranges: a [%v,%v), b [%v,%v); want equal widths, b starting where a ends", a.x, a.x+a.w, b.x, b.x+b.w)
	}
	if !near(b.y+b.h, a.y) {
		t.Errorf("b (offset 500) should sit right above a: a.y %v, b.y+h %v", a.y, b.y+b.h)
	}
	if !strings.Contains(buf.String(), `data-node="7"`) {
		t.Error("a buffer with a node lacks data-node")
	}
}

func TestChartFromProblemRejectsBadPlans(t *testing.T) {
	p := smallProblem()
	a := &planner.Assignment{Offsets: make([]int64, len(p.Buffers)), Arena: 1024} // everything at 0: overlaps
	if _, err := viz.ChartFromProblem(p, a); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Errorf("overlapping plan: got %v", err)
	}
}

func TestInterferenceDOT(t *testing.T) {
	c := solved(t, smallProblem())
	d, err := viz.InterferenceDOT(c)
	if err != nil {
		t.Fatal(err)
	}
	out := d.String()
	golden.Check(t, filepath.Join("testdata", "interference_small.dot"), []byte(out))
	render(t, out)
	// Lifetimes [0,2) [1,4) [2,3) [3,6) [4,6): edges 0-1, 1-2, 1-3, 3-4.
	if got := strings.Count(out, " -- b"); got != 4 {
		t.Errorf("interference edges: got %d, want 4", got)
	}
	if strings.Contains(out, "overlapping addresses") {
		t.Error("a valid plan drew an address overlap")
	}
	// A wrong chart (two live buffers at one offset) must show the clash.
	bad := &viz.Chart{Buffers: []viz.Lifetime{
		{Start: 0, End: 2, Offset: 0, Size: 64, Node: -1},
		{Start: 1, End: 3, Offset: 32, Size: 64, Node: -1},
	}}
	d, _ = viz.InterferenceDOT(bad)
	if !strings.Contains(d.String(), "overlapping addresses") {
		t.Error("an address clash between live buffers is not drawn")
	}
}

// checkSVG parses an SVG document as XML.
func checkSVG(t *testing.T, b []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
	}
}

type box struct{ x, y, w, h float64 }

// svgRects returns the chart's buffer rectangles by the label that starts
// their tooltip.
func svgRects(t *testing.T, b []byte) map[string]*box {
	t.Helper()
	var doc struct {
		G []struct {
			Rect []struct {
				X     float64 `xml:"x,attr"`
				Y     float64 `xml:"y,attr"`
				W     float64 `xml:"width,attr"`
				H     float64 `xml:"height,attr"`
				Title string  `xml:"title"`
			} `xml:"rect"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]*box{}
	for _, g := range doc.G {
		for _, r := range g.Rect {
			if label, _, ok := strings.Cut(r.Title, ":"); ok {
				out[label] = &box{r.X, r.Y, r.W, r.H}
			}
		}
	}
	return out
}

// storiesPlan plans the embedded model's graph for a step of n tokens.
func storiesPlan(t *testing.T, n int64) *planner.MemoryPlan {
	t.Helper()
	f, err := gguf.Parse(irtool.EmbeddedModel, irtool.EmbeddedModelName)
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.Build(f, models.Options{NCtx: 64})
	if err != nil {
		t.Fatal(err)
	}
	g, err := m.Graph.Specialize(ir.Bindings{"n_tokens": n, "n_kv": 64, "n_outputs": n, "kv_head": 0})
	if err != nil {
		t.Fatal(err)
	}
	gp, err := planner.PlanMemory(g, planner.MemoryOptions{Strategy: planner.StrategyGreedySize, Policy: planner.CPUPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	return gp
}

func TestChartFromPlan(t *testing.T) {
	gp := storiesPlan(t, 16)
	c, err := viz.ChartFromPlan(gp)
	if err != nil {
		t.Fatal(err)
	}
	if c.Arena != gp.ArenaBytes || c.LowerBound != gp.LowerBound || c.Steps != len(gp.Order) {
		t.Errorf("chart arena %d, LB %d, steps %d; plan %d, %d, %d", c.Arena, c.LowerBound, c.Steps, gp.ArenaBytes, gp.LowerBound, len(gp.Order))
	}
	for i, b := range c.Buffers {
		if b.Node < 0 || !strings.HasPrefix(b.Label, "%") && !strings.HasPrefix(b.Label, "workspace of %") {
			t.Errorf("buffer %d: node %d, label %q: not named after its node", i, b.Node, b.Label)
		}
		if b.Group == "" || b.Group == "buffer" {
			t.Errorf("buffer %d (%s): no op group", i, b.Label)
		}
	}
	var buf bytes.Buffer
	if err := c.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, buf.Bytes())
	if got, want := len(svgRects(t, buf.Bytes())), len(c.Buffers); got != want {
		t.Errorf("rectangles with tooltips: got %d, want %d", got, want)
	}
	d, err := viz.InterferenceDOT(c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(d.String(), "overlapping addresses") {
		t.Error("the planner's plan draws an address overlap")
	}
	render(t, d.String())

	bad := *gp
	bad.Buffers = bad.Buffers[1:]
	if _, err := viz.ChartFromPlan(&bad); err == nil {
		t.Error("a plan whose buffer list does not match its problem: no error")
	}
}

// TestLivenessTitleWraps: a title longer than the chart (a long model path
// on a zoomed chart) wraps onto more lines instead of running off the
// canvas, the plot moves down to make room, and no text leaves its box.
func TestLivenessTitleWraps(t *testing.T) {
	c := solved(t, smallProblem())
	c.Title = "cmd/irtool/testdata/qwen2.5-0.5b-shapes.ir: worst case n_tokens=32, n_kv=512, greedy-size plan, layer 5 (steps 115 to 140)"
	var buf bytes.Buffer
	if err := c.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	textFits(t, buf.Bytes())
	if got := strings.Count(buf.String(), `font-weight="bold"`); got < 2 {
		t.Errorf("title lines: got %d, want at least 2", got)
	}
	for _, part := range []string{"cmd/irtool/testdata/qwen2.5-0.5b-shapes.ir:", "layer 5 (steps 115 to 140)"} {
		if !strings.Contains(buf.String(), part) {
			t.Errorf("the wrapped title lost %q", part)
		}
	}
	// A legend entry wider than the default legend widens the canvas.
	c.Buffers[0].Group = "a_very_long_fused_operation_name_for_the_legend"
	buf.Reset()
	if err := c.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	textFits(t, buf.Bytes())
}

func TestTextWidth(t *testing.T) {
	for r := ' ' + 1; r <= '~'; r++ {
		if w := viz.TextWidth(string(r), 10, false); w <= 0 || w > 10.2 {
			t.Errorf("%q: width %v at 10 px", r, w)
		}
		// Bold is never narrower, but for @ (1015 vs 975 in the AFM files).
		if viz.TextWidth(string(r), 10, true) < viz.TextWidth(string(r), 10, false)-0.01 && r != '|' && r != '@' {
			t.Errorf("%q: bold narrower than regular", r)
		}
	}
	// Helvetica: "Hello" is 2278/1000 em.
	if got := viz.TextWidth("Hello", 10, false); math.Abs(got-22.78) > 1e-9 {
		t.Errorf("Hello at 10 px: %v, want 22.78", got)
	}
	if viz.TextWidth("…", 10, false) != 10 {
		t.Error("non-ASCII characters count an em")
	}
}
