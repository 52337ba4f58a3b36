package cli

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/viz"
)

// vizOut runs irtool viz writing to a file in a temporary directory and
// returns the file's contents.
func vizOut(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	code, _, stderr := runCLI(t, append([]string{"viz", "-o", path}, args...)...)
	if code != 0 {
		t.Fatalf("viz %v: exit %d: %s", args, code, stderr)
	}
	if !strings.Contains(stderr, "irtool viz: wrote "+path+" (") {
		t.Errorf("viz %v does not say which file it wrote: %q", args, stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestVizGraph checks that --passes none draws exactly the graph the model
// builder makes, and that the default pipeline's drawing is stable.
func TestVizGraph(t *testing.T) {
	f, err := openModel("")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := models.Build(f, models.Options{NCtx: 64})
	if err != nil {
		t.Fatal(err)
	}
	want, err := viz.GraphDOT(m.Graph, viz.GraphOptions{Title: "embedded:stories260K.gguf (graph)"})
	if err != nil {
		t.Fatal(err)
	}
	code, got, stderr := runCLI(t, "viz", "--what", "graph", "--passes", "none", "--ctx", "64")
	if code != 0 || got != want.String() {
		t.Errorf("viz --passes none (exit %d, %s) differs from viz.GraphDOT of the built graph", code, stderr)
	}
	a := vizOut(t, "a.dot", "--what", "graph")
	b := vizOut(t, "b.dot", "--what", "graph")
	if !bytes.Equal(a, b) {
		t.Error("two drawings of the compiled graph differ")
	}
	if !bytes.Contains(a, []byte("subgraph cluster_")) || !bytes.Contains(a, []byte(`label="layer 4"`)) {
		t.Error("the graph drawing has no layer clusters")
	}
	noW := vizOut(t, "c.dot", "--what", "graph", "--no-weights")
	if bytes.Contains(noW, []byte(`\nweight`)) || !bytes.Contains(a, []byte(` weight\n`)) {
		t.Error("--no-weights did not drop the weights (or the default drawing has none)")
	}
}

func TestVizLiveness(t *testing.T) {
	svg := vizOut(t, "l.svg", "--what", "liveness", "--ctx", "64", "--strategy", "greedy-size")
	if err := xml.Unmarshal(svg, new(struct{})); err != nil {
		t.Fatalf("liveness chart is not XML: %v", err)
	}
	// One tooltip per planned buffer, each naming its node.
	boxes := regexp.MustCompile(`<title>%\d+ [a-z_]+`).FindAll(svg, -1)
	if len(boxes) < 20 {
		t.Errorf("liveness chart of stories260K has %d named buffers", len(boxes))
	}
	for _, want := range []string{"worst case n_tokens=64, n_kv=64", "lower bound", "execution step"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("liveness chart lacks %q", want)
		}
	}
	page := vizOut(t, "l.html", "--what", "liveness", "--ctx", "64", "--ubatch", "1", "--strategy", "greedy-size")
	if !bytes.Contains(page, []byte("<!DOCTYPE html>")) || !bytes.Contains(page, []byte(`<h2 id="memory">`)) ||
		!bytes.Contains(page, []byte("n_tokens=1")) || !regexp.MustCompile(`<rect [^>]*data-k="k\d+"`).Match(page) {
		t.Error("liveness .html is not a report page whose boxes link to the graph")
	}
}

func TestVizInterference(t *testing.T) {
	d := vizOut(t, "i.dot", "--what", "interference", "--ctx", "64", "--strategy", "greedy-size")
	if !bytes.HasPrefix(d, []byte("graph ")) || !bytes.Contains(d, []byte(" -- b")) {
		t.Errorf("interference DOT is not an undirected graph with edges: %.100s", d)
	}
	if bytes.Contains(d, []byte("overlapping addresses")) {
		t.Error("the compiled plan draws overlapping live buffers")
	}
	// .svg is the matrix, which needs no Graphviz.
	svg := vizOut(t, "i.svg", "--what", "interference", "--ubatch", "1", "--ctx", "64", "--strategy", "greedy-size")
	for _, want := range []string{"decode step n_tokens=1", "which buffers may share memory", "layers 1–3: ", "outside the layers: "} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("interference matrix lacks %q", want)
		}
	}
	if bytes.Contains(svg, []byte("overlap while both live")) {
		t.Error("the compiled plan overlaps live buffers")
	}
	if !viz.HaveGraphviz() {
		t.Skip("Graphviz not installed")
	}
	page := vizOut(t, "g.html", "--what", "graph", "--passes", "none", "--no-weights")
	if !bytes.HasPrefix(page, []byte("<!DOCTYPE html>")) || !bytes.Contains(page, []byte("<svg")) || bytes.Contains(page, []byte("<?xml")) {
		t.Error("graph .html is not a page with the SVG inline")
	}
}

func TestVizNoGraphviz(t *testing.T) {
	old := viz.DotCommand
	defer func() { viz.DotCommand = old }()
	viz.DotCommand = "irtool-test-no-graphviz"
	out := filepath.Join(t.TempDir(), "g.svg")
	code, _, stderr := runCLI(t, "viz", "--what", "graph", "-o", out)
	if code != 1 || !strings.Contains(stderr, "apt-get install graphviz") {
		t.Errorf("svg without Graphviz: exit %d, %q; want 1 and the package to install", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a failed viz left an output file")
	}
	// The liveness chart needs no Graphviz.
	vizOut(t, "l.svg", "--what", "liveness", "--ctx", "32", "--strategy", "greedy-size")
}

func TestVizErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--what", "pictures"}, 2, `--what "pictures"`},
		{[]string{"--what", "graph", "-o", filepath.Join(dir, "g.png")}, 2, `unknown extension ".png"`},
		{[]string{"--what", "liveness", "-o", filepath.Join(dir, "l.dot")}, 2, "the liveness chart is SVG"},
		{[]string{"--what", "graph", "--after", "no-such-pass"}, 1, "--after no-such-pass"},
		{[]string{"--ctx", "-1"}, 2, "--ctx -1: want 0 (the model's context_length)"},
		{[]string{"--align", "3"}, 2, "--align 3: want a power of two"},
		{[]string{"--ctx", "256", "--ubatch", "512"}, 2, "--ubatch must be in"},
		{[]string{"--ubatch", "3000"}, 1, "--ubatch 3000 is more than the context (2048)"},
		{[]string{"a.gguf", "b.gguf"}, 2, "at most one model"},
		{[]string{filepath.Join(dir, "missing.gguf")}, 1, "missing.gguf"},
	} {
		code, _, stderr := runCLI(t, append([]string{"viz"}, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.msg) {
			t.Errorf("viz %q: exit %d, %q; want %d and %q", c.args, code, stderr, c.code, c.msg)
		}
	}
}

// TestCompileReport writes the report of a compile and checks its parts;
// two runs give the same bytes.
func TestCompileReport(t *testing.T) {
	dir := t.TempDir()
	page := func(name string) string {
		path := filepath.Join(dir, name)
		code, _, stderr := runCLI(t, "compile", "--ctx", "64", "--strategy", "greedy-size", "--report", path)
		if code != 0 {
			t.Fatalf("compile --report: exit %d: %s", code, stderr)
		}
		if !strings.Contains(stderr, "irtool compile: wrote "+path) {
			t.Errorf("compile does not say where the report went: %q", stderr)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	a, b := page("a.html"), page("b.html")
	if a != b {
		t.Error("two reports of the same compile differ")
	}
	for _, want := range []string{
		`<h2 id="passes">`, `as built`, `<h2 id="memory">`, "worst case:", "decode:", "embedded:stories260K.gguf",
		`<h2 id="partition">`, `<h2 id="program">`, "aclnn",
	} {
		if !strings.Contains(a, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(a, "http://") && !strings.Contains(a, "http://www.w3.org/2000/svg") || strings.Contains(a, "https://") || strings.Contains(a, ` src="`) {
		t.Error("the report links to something outside itself")
	}
	// Without --report nothing is written and nothing is said.
	code, stdout, _ := runCLI(t, "compile", "--ctx", "32", "--strategy", "greedy-size")
	if code != 0 || strings.Contains(stdout, "report:") {
		t.Errorf("compile without --report: exit %d, %q", code, stdout)
	}
	code, _, stderr := runCLI(t, "compile", "--ctx", "32", "--strategy", "greedy-size", "--report", filepath.Join(dir, "no", "such", "dir.html"))
	if code != 2 || !strings.Contains(stderr, "--report") {
		t.Errorf("unwritable report: exit %d, %q", code, stderr)
	}
}

// TestVizAfter checks --after: after the pipeline's last pass the drawing
// is the compiled graph's; after an earlier one it is that pass's snapshot.
func TestVizAfter(t *testing.T) {
	names := passes.Default().Names()
	if len(names) < 2 {
		t.Skip("the default pipeline has fewer than two passes")
	}
	untitled := func(b []byte) string {
		return regexp.MustCompile(`label="embedded:stories260K.gguf[^"]*", labelloc`).ReplaceAllString(string(b), "")
	}
	full := vizOut(t, "full.dot", "--what", "graph")
	last := vizOut(t, "last.dot", "--what", "graph", "--after", names[len(names)-1])
	if untitled(full) != untitled(last) {
		t.Errorf("--after %s differs from the whole pipeline's graph", names[len(names)-1])
	}
	if !bytes.Contains(last, []byte("after "+names[len(names)-1])) {
		t.Error("--after is not in the title")
	}
	// The first pass run alone gives the graph --after it shows.
	if _, err := passes.Parse(names[0]); err == nil {
		first := vizOut(t, "first.dot", "--what", "graph", "--after", names[0])
		alone := vizOut(t, "alone.dot", "--what", "graph", "--passes", names[0])
		if untitled(first) != untitled(alone) {
			t.Errorf("--after %s is not the graph after that pass", names[0])
		}
	}
	code, _, stderr := runCLI(t, "viz", "--passes", "none", "--after", names[0])
	if code != 1 || !strings.Contains(stderr, "ran no passes") {
		t.Errorf("--after with --passes none: exit %d, %q", code, stderr)
	}
}

func TestVizPartition(t *testing.T) {
	part := vizOut(t, "p.dot", "--what", "partition", "--ctx", "64", "--no-weights")
	if !bytes.Contains(part, []byte(`label="NPU"`)) || bytes.Contains(part, []byte(`label="segment `)) {
		t.Error("the partition view is not clustered by device only")
	}
	segs := vizOut(t, "s.dot", "--what", "segments", "--ctx", "64", "--no-weights")
	if !regexp.MustCompile(`label="segment 0: \d+ kernels`).Match(segs) {
		t.Error("the segments view has no segment clusters captioned by the lowering")
	}
	cpu := vizOut(t, "c.dot", "--what", "partition", "--ctx", "64", "--target", "cpu")
	if bytes.Contains(cpu, []byte(`label="NPU"`)) || !bytes.Contains(cpu, []byte(`label="CPU"`)) {
		t.Error("--target cpu placed nodes on an NPU")
	}
}
