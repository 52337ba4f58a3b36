package viz_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/golden"
	"github.com/irtool/irtool/internal/svgcheck"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/viz"
)

func TestGraphDOTGolden(t *testing.T) {
	g := tinyGraph(t)
	fused := fuseNorms(t, g)
	part := &viz.Partition{
		Nodes: map[int]viz.Placement{
			0: {Device: "cpu", Segment: -1},
			1: {Device: "npu", Segment: 0}, 3: {Device: "npu", Segment: 0}, 4: {Device: "npu", Segment: 0},
			5: {Device: "npu", Segment: 0}, 6: {Device: "npu", Segment: 0},
			7: {Device: "cpu", Segment: 1}, 9: {Device: "cpu", Segment: 1}, 10: {Device: "cpu", Segment: 1},
		},
		Segments: map[int]string{0: "captured", 1: "eager"},
	}
	for _, tc := range []struct {
		name string
		g    *ir.Graph
		opts viz.GraphOptions
	}{
		{"graph_layers.dot", g, viz.GraphOptions{}},
		{"graph_fused.dot", fused, viz.GraphOptions{Title: "tiny after fusion"}},
		{"graph_noweights.dot", g, viz.GraphOptions{NoWeights: true, NoEdgeLabels: true}},
		{"graph_partition.dot", fused, viz.GraphOptions{Partition: part}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := viz.GraphDOT(tc.g, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			out := d.String()
			again, _ := viz.GraphDOT(tc.g, tc.opts)
			if again.String() != out {
				t.Fatal("two drawings of the same graph differ")
			}
			golden.Check(t, filepath.Join("testdata", tc.name), []byte(out))
			render(t, out)
		})
	}
}

// TestGraphDOTContent checks the promises of GraphDOT's documentation on
// the drawing itself, independently of the golden files.
func TestGraphDOTContent(t *testing.T) {
	fused := fuseNorms(t, tinyGraph(t))
	d, err := viz.GraphDOT(fused, viz.GraphOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := d.String()
	for _, want := range []string{
		`label="%2 ` + string(opFused) + ` (fused)\nf32[32,n_tokens]\nnormed-0"`, // fused nodes say so
		`fillcolor="#fed7aa"`,           // and are orange
		`fontcolor="#9ca3af"`,           // weights are dimmed
		`label="layer 0"`,               // clusters by layer
		`label="layer 1"`,               // ...
		`label="128·n_tokens B"`,        // edge bytes, symbolic
		`label="1.1 KiB"`,               // edge bytes of the q8_0 weight: 32 rows of 34 bytes
		`peripheries="2"`,               // the output
		`style="rounded,dashed"`,        // the reshape view
		`subgraph cluster_`,             // clusters are clusters
		`tooltip="eps=1e-05"`,           // attributes as tooltips
		`label="%3 weight\nq8_0[32,32]`, // op, dtype, shape
	} {
		if !strings.Contains(out, want) {
			t.Errorf("DOT lacks %s", want)
		}
	}
	static, err := fused.Specialize(ir.Bindings{"n_tokens": 4})
	if err != nil {
		t.Fatal(err)
	}
	d, _ = viz.GraphDOT(static, viz.GraphOptions{})
	if !strings.Contains(d.String(), `label="512 B"`) {
		t.Error("static edge bytes: want 512 B for f32[32,4]")
	}
}

func TestGraphDOTPartitionCuts(t *testing.T) {
	g := tinyGraph(t)
	part := &viz.Partition{Nodes: map[int]viz.Placement{}}
	for _, n := range g.Nodes {
		if !n.IsLeaf() {
			dev := "npu"
			if n.Layer == 1 {
				dev = "cpu"
			}
			part.Nodes[n.ID] = viz.Placement{Device: dev, Segment: -1}
		}
	}
	d, err := viz.GraphDOT(g, viz.GraphOptions{Partition: part})
	if err != nil {
		t.Fatal(err)
	}
	out := d.String()
	// Layer 0's output %7 feeds %8 and %13 on the CPU: two cut edges.
	if got := strings.Count(out, `fontcolor="#dc2626"`); got != 2 {
		t.Errorf("cut edges drawn red: got %d, want 2", got)
	}
	for _, want := range []string{`label="NPU"`, `label="CPU"`} {
		if !strings.Contains(out, want) {
			t.Errorf("DOT lacks device cluster %s", want)
		}
	}
	if strings.Contains(out, `label="layer 0"`) {
		t.Error("a partitioned drawing should cluster by device, not layer")
	}
}

func TestGraphDOTErrors(t *testing.T) {
	if _, err := viz.GraphDOT(nil, viz.GraphOptions{}); err == nil {
		t.Error("nil graph: no error")
	}
	g := tinyGraph(t)
	stray := &ir.Node{ID: 99, Op: ir.OpInput, Layer: -1}
	g.Nodes[1].Args = []*ir.Node{stray}
	_, err := viz.GraphDOT(g, viz.GraphOptions{})
	if err == nil || !strings.Contains(err.Error(), "node %1 (rms_norm): operand 0 is not in the graph") {
		t.Errorf("operand outside the graph: got %v", err)
	}
	g.Nodes[2] = nil
	if _, err := viz.GraphDOT(g, viz.GraphOptions{}); err == nil || !strings.Contains(err.Error(), "node 2 is nil") {
		t.Errorf("nil node: got %v", err)
	}
}

// TestGraphDOTStories draws the embedded model's real graph, as built and
// specialised, and renders it.
func TestGraphDOTStories(t *testing.T) {
	f, err := gguf.Parse(irtool.EmbeddedModel, irtool.EmbeddedModelName)
	if err != nil {
		t.Fatal(err)
	}
	m, err := models.Build(f, models.Options{NCtx: 64})
	if err != nil {
		t.Fatal(err)
	}
	d, err := viz.GraphDOT(m.Graph, viz.GraphOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := d.String()
	if got, want := len(regexp.MustCompile(`\n\t\tn\d+ \[`).FindAllString(out, -1)), len(m.Graph.Nodes)-countNoLayer(m.Graph); got != want {
		t.Errorf("nodes inside layer clusters: got %d, want %d", got, want)
	}
	// The mask and the positions are read by every layer: each layer
	// draws its own stub of them instead of an edge across the page.
	for l := range m.HParams.NLayer {
		if !regexp.MustCompile(fmt.Sprintf(`\n\t\tn\d+_layer_%d \[label="%%\d+ input`, l)).MatchString(out) {
			t.Errorf("layer %d has no stub of a shared input", l)
		}
	}
	// Every node is drawn as n<ID>, labelled with its IR ID: the same ID as
	// in the text IR.
	for _, n := range m.Graph.Nodes {
		if want := fmt.Sprintf("n%d [label=\"%%%d %s", n.ID, n.ID, n.Op); !strings.Contains(out, want) {
			t.Errorf("node %+v: no %q in the DOT", n, want)
			break
		}
	}
	if got := strings.Count(out, "subgraph cluster_"); int64(got) != int64(m.HParams.NLayer) {
		t.Errorf("layer clusters: got %d, want %d", got, m.HParams.NLayer)
	}
	svg := render(t, out)
	if svg == nil {
		return
	}
	// Rendered, the layers stand in one column, in order, top to bottom,
	// without overlapping ranks.
	boxes := clusterBoxes(t, svg)
	if len(boxes) != int(m.HParams.NLayer) {
		t.Fatalf("clusters in the SVG: got %d, want %d", len(boxes), m.HParams.NLayer)
	}
	for l := 1; l < int(m.HParams.NLayer); l++ {
		a, b := boxes[fmt.Sprintf("cluster_layer_%d", l-1)], boxes[fmt.Sprintf("cluster_layer_%d", l)]
		if b[0] <= a[1] {
			t.Errorf("layer %d (y %v) does not start below layer %d (y %v)", l, b, l-1, a)
		}
	}
}

func countNoLayer(g *ir.Graph) int {
	c := 0
	for _, n := range g.Nodes {
		if n.Layer < 0 {
			c++
		}
	}
	return c
}

func TestTensorBytes(t *testing.T) {
	for _, tc := range []struct {
		typ  ir.Type
		want string
	}{
		{ir.T(ir.F32, 64), "256 B"},
		{ir.T(ir.F32, 64, 16), "4.0 KiB"},
		{ir.T(ir.F16, 4096, 4096), "32.0 MiB"},
		{ir.T(ir.Q4_0, 4096, 32000), "70.3 MiB"},
		{ir.T(ir.F32, 64, "n_tokens"), "256·n_tokens B"},
		{ir.T(ir.F16, 32, "n_kv", 4), "256·n_kv B"},
		{ir.T(ir.F32, "n_kv", "n_tokens", 8), "32·n_kv·n_tokens B"},
	} {
		if got := viz.TensorBytes(tc.typ); got != tc.want {
			t.Errorf("TensorBytes(%s) = %q, want %q", tc.typ, got, tc.want)
		}
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 5 << 20: "5.0 MiB", 3 << 30: "3.00 GiB"} {
		if got := viz.HumanBytes(n); got != want {
			t.Errorf("HumanBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// render runs Graphviz on src when it is installed, and checks the result
// is SVG.
func render(t *testing.T, src string) []byte {
	t.Helper()
	if !viz.HaveGraphviz() {
		t.Log("Graphviz not installed: not rendering")
		return nil
	}
	svg, err := viz.RenderSVG(context.Background(), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(svg), "<svg") {
		t.Fatalf("dot output is not SVG: %.200s", svg)
	}
	textFits(t, svg)
	return svg
}

// textFits fails the test when a text of svg runs outside its box (the
// canvas, or its node or cluster).
func textFits(t *testing.T, svg []byte) {
	t.Helper()
	bad, err := svgcheck.Overflows(svg)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range bad {
		if i == 10 {
			t.Errorf("... and %d more", len(bad)-10)
			break
		}
		t.Errorf("text outside its box: %s", b)
	}
}

// clusterBoxes returns the vertical extent [top, bottom] of every cluster
// of a Graphviz SVG, by cluster name (cluster_layer_3, ...).
func clusterBoxes(t *testing.T, svg []byte) map[string][2]float64 {
	t.Helper()
	re := regexp.MustCompile(`class="cluster">\s*<title>([^<]+)</title>\s*<(?:path|polygon)[^>]* (?:d|points)="([^"]+)"`)
	out := map[string][2]float64{}
	for _, m := range re.FindAllSubmatch(svg, -1) {
		nums := regexp.MustCompile(`-?[0-9.]+`).FindAll(m[2], -1)
		top, bottom := math.Inf(1), math.Inf(-1)
		for i := 1; i < len(nums); i += 2 {
			y, _ := strconv.ParseFloat(string(nums[i]), 64)
			top, bottom = min(top, y), max(bottom, y)
		}
		out[string(m[1])] = [2]float64{top, bottom}
	}
	return out
}

func TestRenderSVGErrors(t *testing.T) {
	old := viz.DotCommand
	defer func() { viz.DotCommand = old }()
	viz.DotCommand = "irtool-no-such-graphviz"
	_, err := viz.RenderSVG(context.Background(), []byte("digraph {}"))
	if !errors.Is(err, viz.ErrNoGraphviz) || !strings.Contains(err.Error(), "apt-get install graphviz") {
		t.Errorf("missing Graphviz: got %v, want ErrNoGraphviz naming the package", err)
	}
	viz.DotCommand = old
	if !viz.HaveGraphviz() {
		t.Skip("Graphviz not installed")
	}
	if _, err := viz.RenderSVG(context.Background(), []byte("digraph { a -> }")); err == nil || !strings.Contains(err.Error(), "syntax error") {
		t.Errorf("bad DOT: got %v, want dot's syntax error", err)
	}
}

func TestWriteSVGPage(t *testing.T) {
	var b strings.Builder
	svg := `<?xml version="1.0"?>` + "\n" + `<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x.dtd">` + "\n" + `<svg width="10"></svg>`
	if err := viz.WriteSVGPage(&b, "a <b>", []byte(svg)); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, "<?xml") || strings.Contains(page, "DOCTYPE svg") || !strings.Contains(page, `<svg width="10"></svg>`) ||
		!strings.Contains(page, "<title>a &lt;b&gt;</title>") {
		t.Errorf("page:\n%s", page)
	}
	if err := viz.WriteSVGPage(&b, "x", []byte("digraph {}")); err == nil {
		t.Error("a page of something that is not SVG: no error")
	}
}

// TestGraphDOTViewsJoinSegments checks that a view the lowering left out of
// every segment is drawn in the segment of the tensor it views.
func TestGraphDOTViewsJoinSegments(t *testing.T) {
	g := fuseNorms(t, tinyGraph(t)) // %2 fused, %4 reshape(%2), %5 mul_mat(%3, %4)
	part := &viz.Partition{Nodes: map[int]viz.Placement{
		2: {Device: "npu", Segment: 0},
		4: {Device: "npu", Segment: -1},
		5: {Device: "npu", Segment: 0},
	}}
	d, err := viz.GraphDOT(g, viz.GraphOptions{Partition: part})
	if err != nil {
		t.Fatal(err)
	}
	out := d.String()
	i := strings.Index(out, `label="segment 0"`)
	if i < 0 {
		t.Fatal("no segment cluster")
	}
	// The segment cluster is the innermost block around its label.
	start := strings.LastIndex(out[:i], "subgraph cluster_")
	end := start + strings.Index(out[start:], "\n\t\t}")
	if seg := out[start:end]; !strings.Contains(seg, `label="%4 reshape`) {
		t.Errorf("the reshape of a segment's tensor is drawn outside the segment:\n%s", seg)
	}
	if part.Nodes[4].Segment != -1 {
		t.Error("GraphDOT modified the caller's partition")
	}
}

// TestGraphDOTCollectives: a rank's all_reduce and all_gather are drawn
// in teal, with their ranks and group as the tooltip.
func TestGraphDOTCollectives(t *testing.T) {
	g, err := ir.ParseString(`graph "rank" {
  %0 = input() : f32[8,n_tokens] "x"
  %1 = weight() : f32[8,4] "w"
  %2 = mul_mat(%1, %0) : f32[4,n_tokens] "partial"
  %3 = all_reduce(%2) {group="tp", ranks=2} : f32[4,n_tokens] "sum"
  %4 = all_gather(%3) {dim=0, ranks=2} : f32[8,n_tokens] "gathered"
  outputs(%4)
}`)
	if err != nil {
		t.Fatal(err)
	}
	d, err := viz.GraphDOT(g, viz.GraphOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := d.String()
	for _, want := range []string{
		`label="%3 all_reduce\nf32[4,n_tokens]\nsum"`,
		`fillcolor="#ccfbf1"`,
		`tooltip="group=\"tp\", ranks=2"`,
		`label="%4 all_gather\nf32[8,n_tokens]\ngathered"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("DOT lacks %s", want)
		}
	}
}
