package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/golden"
	"github.com/irtool/irtool/internal/svgcheck"
	"github.com/irtool/irtool/viz"
)

// TestPicturesRead draws every picture of viz on the embedded model and on
// the 24-layer Qwen2.5-0.5B shape and checks what makes them read at a
// glance: no text outside its box (titles are never clipped), the graph's
// layers stacked top to bottom in order, and the decode interference view
// small enough to read (identical layers drawn once).
func TestPicturesRead(t *testing.T) {
	for _, m := range []struct {
		name   string
		args   []string
		layers int
	}{
		{"stories260K", nil, 5},
		{"qwen", []string{qwenShapesIR, "--target", "cpu"}, 24},
	} {
		for _, v := range []struct {
			name string
			args []string
			dot  bool // needs Graphviz
		}{
			{"liveness", []string{"--what", "liveness", "--strategy", "greedy-size"}, false},
			{"liveness-layer", []string{"--what", "liveness", "--strategy", "greedy-size", "--ubatch", "32", "--layer", "3"}, false},
			{"interference", []string{"--what", "interference", "--ubatch", "1", "--strategy", "greedy-size"}, false},
			{"graph", []string{"--what", "graph"}, true},
			{"segments-310b", []string{"--what", "segments", "--target", "ascend310b", "--strategy", "greedy-size"}, true},
		} {
			t.Run(m.name+"/"+v.name, func(t *testing.T) {
				if v.dot && !viz.HaveGraphviz() {
					t.Skip("Graphviz not installed")
				}
				if v.dot && m.layers > 5 && testing.Short() {
					t.Skip("-short: not laying out the 24-layer graphs")
				}
				svg := vizOut(t, v.name+".svg", append(append([]string{}, m.args...), v.args...)...)
				bad, err := svgcheck.Overflows(svg)
				if err != nil {
					t.Fatal(err)
				}
				for i, b := range bad {
					if i == 5 {
						t.Errorf("... %d more", len(bad)-5)
						break
					}
					t.Errorf("text outside its box: %s", b)
				}
				switch v.name {
				case "graph":
					checkLayersStack(t, svg, m.layers)
				case "interference":
					// The first and last layer differ from the others,
					// which are drawn once.
					if want := fmt.Sprintf("layers 1–%d: ", m.layers-2); !strings.Contains(string(svg), want) {
						t.Errorf("the decode matrix does not draw the middle layers once (%q)", want)
					}
					if n := strings.Count(string(svg), "<rect"); n > 2000 {
						t.Errorf("the decode matrix has %d cells: not readable", n)
					}
				}
			})
		}
	}
}

// checkLayersStack checks that the rendered graph has one cluster per layer
// and that each starts below the one before (SVG y grows downwards).
func checkLayersStack(t *testing.T, svg []byte, layers int) {
	t.Helper()
	re := regexp.MustCompile(`class="cluster">\s*<title>cluster_layer_0*(\d+)</title>\s*<(?:path|polygon)[^>]* (?:d|points)="([^"]+)"`)
	top, bottom := map[int]float64{}, map[int]float64{}
	for _, m := range re.FindAllSubmatch(svg, -1) {
		l, _ := strconv.Atoi(string(m[1]))
		nums := regexp.MustCompile(`-?[0-9.]+`).FindAll(m[2], -1)
		for i := 1; i < len(nums); i += 2 {
			y, _ := strconv.ParseFloat(string(nums[i]), 64)
			if _, ok := top[l]; !ok {
				top[l], bottom[l] = y, y
			}
			top[l], bottom[l] = min(top[l], y), max(bottom[l], y)
		}
	}
	if len(top) != layers {
		t.Fatalf("layer clusters: got %d, want %d", len(top), layers)
	}
	for l := 1; l < layers; l++ {
		if top[l] <= bottom[l-1] {
			t.Errorf("layer %d (y %.0f..%.0f) does not start below layer %d (y %.0f..%.0f)", l, top[l], bottom[l], l-1, top[l-1], bottom[l-1])
		}
	}
}

// TestOneNodeNumbering: a node has one number everywhere: the IR text of
// irtool ir, viz --what graph --passes none and the report's "as built"
// column agree; the IR text after the passes (irtool passes), viz --what
// graph and the report's partition and program tables agree.
func TestOneNodeNumbering(t *testing.T) {
	dir := t.TempDir()
	irText := func(args ...string) map[int]string {
		code, out, stderr := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		return idOps(t, out, `(?m)^\s*%(\d+) = ([a-z_0-9]+)\(`)
	}
	dotIDs := func(args ...string) map[int]string {
		return idOps(t, string(vizOut(t, "g.dot", args...)), `\bn(\d+) \[label="%\d+ ([a-z_0-9]+)`)
	}
	built, builtDOT := irText("ir"), dotIDs("--what", "graph", "--passes", "none")
	irFile := dir + "/m.ir"
	if code, _, stderr := runCLI(t, "ir", "-o", irFile); code != 0 {
		t.Fatalf("ir -o: %s", stderr)
	}
	compiled, compiledDOT := irText("passes", irFile), dotIDs("--what", "graph")
	same(t, "ir vs viz --passes none", built, builtDOT, true)
	same(t, "passes vs viz", compiled, compiledDOT, true)

	report := dir + "/r.html"
	if code, _, stderr := runCLI(t, "compile", "--strategy", "greedy-size", "--report", report); code != 0 {
		t.Fatalf("compile: %s", stderr)
	}
	page := string(readFile(t, report))
	first := page[strings.Index(page, `<section class="col`):]
	first = first[:strings.Index(first, "</section>")]
	same(t, "ir vs the report's as-built column", built, idOps(t, first, `<div class="l[^"]*" data-k="k\d+">%(\d+) = (?:<b class="fused">)?([a-z_0-9]+)`), true)
	tables := page[strings.Index(page, `id="partition"`):]
	refs := idOps(t, tables, `<span class="ref" data-k="k\d+">%(\d+) ([a-z_0-9]+)</span>`)
	if len(refs) < 50 {
		t.Fatalf("the report's partition and program tables name %d nodes", len(refs))
	}
	same(t, "viz vs the report's tables", compiledDOT, refs, false)

	// With copies between devices (the 310B runs some ops on the CPU), the
	// JSON's fallbacks and viz --what partition number the partitioned
	// graph alike.
	code, stdout, stderr := runCLI(t, "compile", "--target", "ascend310b", "--strategy", "greedy-size", "--json")
	if code != 0 {
		t.Fatalf("compile --json: %s", stderr)
	}
	var out struct {
		Partition struct {
			Copies    int
			Fallbacks []struct {
				Node int
				Op   string
			}
		}
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Partition.Copies == 0 || len(out.Partition.Fallbacks) == 0 {
		t.Fatalf("the 310B partition has %d copies and %d fallbacks; the test wants some", out.Partition.Copies, len(out.Partition.Fallbacks))
	}
	fallbacks := map[int]string{}
	for _, f := range out.Partition.Fallbacks {
		fallbacks[f.Node] = f.Op
	}
	same(t, "viz --what partition vs compile --json", dotIDs("--what", "partition", "--target", "ascend310b", "--strategy", "greedy-size"), fallbacks, false)
}

// idOps maps node IDs to ops by a regexp with two groups, failing on a
// node given two ops.
func idOps(t *testing.T, text, expr string) map[int]string {
	t.Helper()
	m := map[int]string{}
	for _, g := range regexp.MustCompile(expr).FindAllStringSubmatch(text, -1) {
		id, _ := strconv.Atoi(g[1])
		if op, ok := m[id]; ok && op != g[2] {
			t.Fatalf("%%%d is both %s and %s", id, op, g[2])
		}
		m[id] = g[2]
	}
	if len(m) == 0 {
		t.Fatalf("no node matches %s", expr)
	}
	return m
}

// same reports nodes whose ops differ; with all, the two must name the
// same nodes, else b's must be among a's.
func same(t *testing.T, what string, a, b map[int]string, all bool) {
	t.Helper()
	if all && len(a) != len(b) {
		t.Errorf("%s: %d nodes vs %d", what, len(a), len(b))
	}
	bad := 0
	for id, op := range b {
		if a[id] != op {
			if bad++; bad <= 5 {
				t.Errorf("%s: %%%d is %q in one and %q in the other", what, id, a[id], op)
			}
		}
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPicturesGolden keeps golden renders of the embedded model's pictures
// that irtool draws itself (go test ./cli -run TestPicturesGolden
// -update rewrites them): README's liveness chart, one layer of the decode
// interference matrix and the compiled graph's DOT without weights. The
// greedy-size strategy makes the plans, and so the bytes, deterministic.
func TestPicturesGolden(t *testing.T) {
	for _, g := range []struct {
		path string
		args []string
	}{
		{"../docs/img/stories260K-liveness.svg", []string{"--what", "liveness", "--strategy", "greedy-size"}},
		{"testdata/viz/stories260K-decode-interference-layer2.svg", []string{"--what", "interference", "--ubatch", "1", "--layer", "2", "--strategy", "greedy-size"}},
		{"testdata/viz/stories260K-graph.dot", []string{"--what", "graph", "--no-weights"}},
	} {
		t.Run(g.path, func(t *testing.T) {
			got := vizOut(t, "out"+g.path[strings.LastIndex(g.path, "."):], g.args...)
			golden.Check(t, g.path, got)
		})
	}
}

// TestCommandsNameTheirFiles: every command that writes a file names it on
// stderr, and nothing of it on stdout.
func TestCommandsNameTheirFiles(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args  []string
		files []string
	}{
		{[]string{"ir", "-o", dir + "/m.ir"}, []string{"m.ir"}},
		{[]string{"passes", dir + "/m.ir", "-o", dir + "/p.ir"}, []string{"p.ir"}},
		{[]string{"viz", "--what", "liveness", "--strategy", "greedy-size", "-o", dir + "/l.svg"}, []string{"l.svg"}},
		{[]string{"compile", "--strategy", "greedy-size", "--json", "--report", dir + "/r.html", "--export-buffers", dir + "/b.csv",
			"--out", dir + "/out", "--dump-dir", dir + "/dump"}, []string{"r.html", "b.csv", "out/program.json", "out/partition.dot", "out/segments.dot", "dump"}},
	} {
		code, stdout, stderr := runCLI(t, c.args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, stderr)
		}
		for _, f := range c.files {
			if !regexp.MustCompile(`irtool \w+: wrote (\d+ IR files into )?` + regexp.QuoteMeta(dir+"/"+f) + `\b`).MatchString(stderr) {
				t.Errorf("%s: stderr does not name %s:\n%s", c.args[0], f, stderr)
			}
			if strings.Contains(stdout, dir) {
				t.Errorf("%s: stdout names a file: %.200s", c.args[0], stdout)
			}
		}
	}
}

// TestRunReportsItsArena: run's summary gives the compute arena it used,
// in a unit that shows it (the embedded model's is a few KiB).
func TestRunReportsItsArena(t *testing.T) {
	code, _, stderr := runCLI(t, "run", "-p", "Once upon a time", "-n", "2")
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	m := regexp.MustCompile(`compute arenas ([0-9.]+) (B|KiB|MiB)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("run's summary gives no compute arena: %s", stderr)
	}
	if v, _ := strconv.ParseFloat(m[1], 64); v <= 0 {
		t.Errorf("run reports a compute arena of %s %s", m[1], m[2])
	}
}

// TestReadmeFirstCommand keeps README's first command what it says: the
// first command of "First two commands" is compile on the embedded model,
// and every line README shows of its output (up to a "...", pass timings
// aside) is in what it prints today.
func TestReadmeFirstCommand(t *testing.T) {
	readme := string(readFile(t, "../README.md"))
	i := strings.Index(readme, "\n## First two commands\n")
	if i < 0 {
		t.Fatal(`README has no "First two commands" section`)
	}
	var blocks [][]string // indented blocks of the section, in order
	inBlock := false
	for _, line := range strings.Split(readme[i+1:], "\n")[1:] {
		if strings.HasPrefix(line, "## ") {
			break
		}
		if strings.HasPrefix(line, "    ") {
			if !inBlock {
				blocks = append(blocks, nil)
			}
			blocks[len(blocks)-1] = append(blocks[len(blocks)-1], line[4:])
		}
		inBlock = strings.HasPrefix(line, "    ")
	}
	first := "mkdir -p out && go run ./cmd/irtool compile --report out/report.html"
	if len(blocks) < 2 || len(blocks[0]) != 2 || blocks[0][0] != first || blocks[0][1] != "go test ./..." {
		t.Fatalf("README's first commands are %q, want %q, then go test ./...", blocks, first)
	}
	dir := t.TempDir()
	code, stdout, stderr := runCLI(t, "compile", "--report", dir+"/report.html")
	if code != 0 {
		t.Fatalf("compile: exit %d: %s", code, stderr)
	}
	passRow := regexp.MustCompile(`^\s+[a-z-]+\s+(yes|no)\s+[0-9.]+\s`)
	checked := 0
	for _, line := range blocks[1] {
		want := strings.TrimRight(strings.SplitN(line, "...", 2)[0], " ,")
		if strings.TrimSpace(want) == "" || strings.HasPrefix(line, "passes ") || passRow.MatchString(line) {
			continue
		}
		checked++
		if !strings.Contains(stdout, want) {
			t.Errorf("README shows %q, compile prints no such line:\n%s", want, stdout)
		}
	}
	if checked < 8 {
		t.Errorf("checked %d lines of README's output", checked)
	}
	if !strings.Contains(stderr, "irtool compile: wrote "+dir+"/report.html (") {
		t.Errorf("compile does not name its report on stderr: %s", stderr)
	}
}
