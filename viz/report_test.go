package viz_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/irtool/irtool/internal/golden"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/viz"
)

// testReport is a report with every part filled: three columns (as built,
// after the test fusion, then specialised), a chart of the static graph,
// a partition and a program.
func testReport(t *testing.T) *viz.Report {
	t.Helper()
	g := tinyGraph(t)
	fused := fuseNorms(t, g)
	static, err := fused.Specialize(ir.Bindings{"n_tokens": 4})
	if err != nil {
		t.Fatal(err)
	}
	chart, bufferNode := planStatic(t, static)
	if err := chart.LabelNodes(static, bufferNode); err != nil {
		t.Fatal(err)
	}
	chart.Title = "worst case"
	part := &viz.Partition{Nodes: map[int]viz.Placement{}, Segments: map[int]string{0: "captured"}}
	prog := &viz.Program{
		Regions: []viz.Region{{Name: "arena", Device: "npu", Bytes: chart.Arena}, {Name: "weights", Device: "npu", Bytes: 2432}},
		Steps:   []string{"upload x", "segment 0", "download out-1"},
	}
	seg := viz.Segment{ID: 0, Device: "npu", Capturable: true, Key: "s0/n_tokens=4"}
	for _, n := range fused.Nodes {
		if n.IsLeaf() {
			continue
		}
		part.Nodes[n.ID] = viz.Placement{Device: "npu", Segment: 0}
		seg.Kernels = append(seg.Kernels, viz.Kernel{Name: "aclnn_" + string(n.Op), Op: string(n.Op), Node: n.ID, Output: n.Type.String()})
	}
	prog.Segments = []viz.Segment{seg}
	return &viz.Report{
		Title:   "tiny <report>",
		Summary: [][2]string{{"model", "tiny"}, {"nodes", "14 → 12"}},
		Columns: []viz.Column{
			{Name: "input", Graph: g},
			{Name: "fuse", Note: "2 rewrites", Graph: fused},
			{Name: "dce", Graph: fused.Clone()},
		},
		Charts:    []viz.ReportChart{{Chart: chart, Graph: static, Interference: true}},
		Partition: &viz.ReportPartition{Partition: part, Notes: []string{"all on the NPU"}},
		Program:   prog,
	}
}

// planStatic plans a static graph the simple way (one buffer per compute
// node, live from its step to its last use, views aliasing their operand):
// enough to draw a realistic chart without the graph planner.
func planStatic(t *testing.T, g *ir.Graph) (*viz.Chart, []int) {
	t.Helper()
	root := make([]int, len(g.Nodes))
	end := make([]int, len(g.Nodes))
	for i, n := range g.Nodes {
		root[i] = i
		if info, _ := ir.Lookup(n.Op); info.Kind == ir.KindView {
			root[i] = root[n.Args[0].ID]
		}
		end[i] = i + 1
		for _, a := range n.Args {
			end[root[a.ID]] = max(end[root[a.ID]], i+1)
		}
	}
	for _, o := range g.Outputs {
		end[root[o.ID]] = len(g.Nodes)
	}
	p := &planner.Problem{Alignment: 32}
	var bufferNode []int
	for i, n := range g.Nodes {
		if n.IsLeaf() || root[i] != i {
			continue
		}
		size, err := n.Type.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		p.Buffers = append(p.Buffers, planner.Buffer{ID: len(p.Buffers), Start: i, End: end[i], Size: size})
		bufferNode = append(bufferNode, i)
	}
	a, _, err := planner.Solve(context.Background(), p, planner.StrategyGreedySize, planner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := viz.ChartFromProblem(p, a)
	if err != nil {
		t.Fatal(err)
	}
	return c, bufferNode
}

func TestReportGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := testReport(t).WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	testReport(t).WriteHTML(&again)
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Fatal("two reports of the same compile differ")
	}
	golden.Check(t, filepath.Join("testdata", "report.html"), buf.Bytes())
}

// TestReportKeys checks that a value keeps its key through the fusion's
// renumbering and through Specialize, and that fused values get new ones.
func TestReportKeys(t *testing.T) {
	var buf bytes.Buffer
	if err := testReport(t).WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	lineKey := regexp.MustCompile(`<div class="l[^"]*" data-k="(k\d+)">%(\d+) = (?:<b class="fused">)?([a-z_0-9]+)(?:</b>)?\(`)
	cols := strings.Split(html, `<section class="col`)[1:]
	if len(cols) != 3 {
		t.Fatalf("columns: got %d, want 3", len(cols))
	}
	type line struct{ key, id, op string }
	var parsed [][]line
	for _, c := range cols {
		var ls []line
		for _, m := range lineKey.FindAllStringSubmatch(c, -1) {
			ls = append(ls, line{m[1], m[2], m[3]})
		}
		parsed = append(parsed, ls)
	}
	find := func(col int, op string, nth int) line {
		for _, l := range parsed[col] {
			if l.op == op {
				if nth == 0 {
					return l
				}
				nth--
			}
		}
		t.Fatalf("column %d has no %s #%d", col, op, nth)
		return line{}
	}
	// The second add is %13 as built and %11 after fusion: same value.
	a0, a1 := find(0, "add", 1), find(1, "add", 1)
	if a0.id != "13" || a1.id != "11" || a0.key != a1.key {
		t.Errorf("add of layer 1: as built %v, fused %v; want ids 13 and 11 with one key", a0, a1)
	}
	if f := find(1, string(opFused), 0); f.key == find(0, "mul", 0).key || f.key == find(0, "rms_norm", 0).key {
		t.Errorf("the fused node reuses a key of a node it replaced")
	}
	if !strings.Contains(cols[0], `class="l gone" data-k="`+find(0, "rms_norm", 0).key) {
		t.Error("rms_norm, gone after fusion, is not struck out in the first column")
	}
	if !strings.Contains(cols[1], `class="l new" data-k="`+find(1, string(opFused), 0).key) {
		t.Error("the fused node is not marked new in the fusion column")
	}
	if !strings.Contains(cols[2], "no change") || !strings.Contains(cols[2], "folded") {
		t.Error("an unchanged column is not folded")
	}
	// The chart is of the specialised graph: its boxes use the columns' keys.
	chart := html[strings.Index(html, `<h2 id="memory">`):]
	if !strings.Contains(chart, `data-k="`+a1.key+`"`) {
		t.Errorf("the chart's box for add %%11 lacks key %s", a1.key)
	}
	// So do the partition and program tables.
	for _, sec := range []string{`<h2 id="partition">`, `<h2 id="program">`} {
		part := html[strings.Index(html, sec):]
		if !strings.Contains(part, `data-k="`+a1.key+`">%11 add`) {
			t.Errorf("section %s lacks a reference to %%11 with key %s", sec, a1.key)
		}
	}
}

func TestReportSelfContained(t *testing.T) {
	var buf bytes.Buffer
	if err := testReport(t).WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	// Nothing to fetch: no src or href except in-page anchors, no URLs but
	// the SVG namespace.
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*"[^#]`).FindString(html); m != "" {
		t.Errorf("report references an external resource: %s", m)
	}
	for _, u := range regexp.MustCompile(`https?://[^"' <]+`).FindAllString(html, -1) {
		if u != "http://www.w3.org/2000/svg" {
			t.Errorf("report contains URL %s", u)
		}
	}
	if !strings.Contains(html, "tiny &lt;report&gt;") {
		t.Error("the title is not escaped")
	}
}

func TestReportErrors(t *testing.T) {
	r := &viz.Report{Columns: []viz.Column{{Name: "x"}}}
	if err := r.WriteHTML(&bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), `column 0 ("x") has no graph`) {
		t.Errorf("column without a graph: got %v", err)
	}
	// An empty report is still a page.
	var buf bytes.Buffer
	if err := (&viz.Report{}).WriteHTML(&buf); err != nil || !strings.Contains(buf.String(), "</html>") {
		t.Errorf("empty report: %v", err)
	}
}

// chromiumBinary finds headless Chromium, or skips.
func chromiumBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: not starting a browser")
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("Chromium not installed (apt-get install chromium)")
	return ""
}

// runChromium runs headless Chromium on the page with extra arguments and
// returns its stdout and the console messages it logged.
func runChromium(t *testing.T, bin, page string, args ...string) (string, []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0"}
	cmd := exec.CommandContext(ctx, bin, append(append(base, args...), "file://"+page+"#selftest")...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	var console []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, ":CONSOLE") {
			console = append(console, l)
		}
	}
	return stdout.String(), console
}

// TestReportInChromium opens the report in headless Chromium: the page must
// log nothing but its self-test line (any script error is a console
// message), the self-test must find the clicked value highlighted in all
// three columns, and a screenshot must be produced.
func TestReportInChromium(t *testing.T) {
	bin := chromiumBinary(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var buf bytes.Buffer
	if err := testReport(t).WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, console := runChromium(t, bin, page, "--dump-dom")
	selftest := 0
	for _, l := range console {
		if strings.Contains(l, "irtool-report selftest: ok") {
			selftest++
			continue
		}
		t.Errorf("console message: %s", l)
	}
	if selftest != 1 {
		t.Errorf("self-test lines on the console: %d, want 1 (console: %q)", selftest, console)
	}
	if !regexp.MustCompile(`data-selftest="ok key=k\d+ highlighted=\d+ columns=3"`).MatchString(dom) {
		m := regexp.MustCompile(`data-selftest="[^"]*"`).FindString(dom)
		t.Errorf("self-test in the DOM: got %q, want ok with the value highlighted in 3 columns", m)
	}
	shot := filepath.Join(dir, "report.png")
	runChromium(t, bin, page, "--window-size=1400,1000", "--hide-scrollbars", "--screenshot="+shot)
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) < 10000 {
		t.Errorf("screenshot: %d bytes, not a plausible PNG", len(png))
	}
	if dir := os.Getenv("IRTOOL_REPORT_SHOT"); dir != "" {
		os.WriteFile(filepath.Join(dir, "report.png"), png, 0o644)
	}
}

// TestReportFoldedColumns checks that a pass that changed nothing is
// folded and does not hide what the next pass removes.
func TestReportFoldedColumns(t *testing.T) {
	g := tinyGraph(t)
	r := &viz.Report{Columns: []viz.Column{
		{Name: "input", Graph: g},
		{Name: "noop", Graph: g.Clone()},
		{Name: "fuse", Graph: fuseNorms(t, g)},
	}}
	var buf bytes.Buffer
	if err := r.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	cols := strings.Split(buf.String(), `<section class="col`)[1:]
	if len(cols) != 3 || !strings.HasPrefix(cols[1], ` folded"`) || strings.HasPrefix(cols[2], ` folded"`) {
		t.Fatalf("want only the noop column folded")
	}
	for i := 0; i < 2; i++ {
		if got := strings.Count(cols[i], `class="l gone"`); got != 4 {
			t.Errorf("column %d: %d lines struck out, want 4 (two rms_norm, two mul)", i, got)
		}
	}
}
