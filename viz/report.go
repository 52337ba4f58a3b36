package viz

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/irtool/irtool/ir"
)

// Report is the content of the HTML compile report: the IR after every pass
// side by side (in the spirit of the Go compiler's GOSSAFUNC ssa.html), the
// memory plan, the partition and the lowered program. Every part is
// optional. WriteHTML renders it as one self-contained page.
type Report struct {
	// Title heads the page.
	Title string
	// Summary is shown under the title as a two-column table, in order.
	Summary [][2]string
	// Columns are the graphs to show side by side, in pipeline order
	// (usually the graph as built, then the graph after each pass).
	Columns []Column
	// Charts are memory plans (for example the worst case and decode).
	Charts []ReportChart
	// Partition is the device assignment, if the graph was partitioned.
	Partition *ReportPartition
	// Program is the lowered program, if the graph was lowered.
	Program *Program
}

// Column is one graph of the side-by-side view.
type Column struct {
	// Name heads the column (a pass name, "input", ...).
	Name string
	// Note follows the name in smaller type (for example "3 rewrites").
	Note string
	// Graph is the IR the column lists, one line per node.
	Graph *ir.Graph
}

// ReportChart is a liveness chart in the report.
type ReportChart struct {
	// Chart is drawn as WriteSVG draws it, its boxes linked to the IR.
	Chart *Chart
	// Graph is the graph whose node IDs the chart's buffers use (the
	// static graph the plan was made for). Nil means the last column.
	Graph *ir.Graph
	// Interference adds the plan's interference matrix under the chart
	// (Chart.WriteInterferenceSVG): which buffers may share memory.
	Interference bool
}

// ReportPartition is a device assignment in the report.
type ReportPartition struct {
	// Graph is the partitioned graph (nil: the last column); Partition's
	// node IDs refer to it.
	Graph *ir.Graph
	// Partition places the nodes.
	Partition *Partition
	// Notes are shown above the table (for example the number of copies).
	Notes []string
}

// Program is a lowered program as the report shows it: fixed device
// regions and segments of kernel launches. It mirrors the lowering's
// program without depending on it.
type Program struct {
	// Graph is the graph whose node IDs the kernels name (nil: the last
	// column).
	Graph *ir.Graph
	// Regions are the program's fixed allocations.
	Regions []Region
	// Segments are its kernel runs, in execution order.
	Segments []Segment
	// Steps lists what the runtime does, in order, one line each
	// ("upload inp_tokens", "segment 0", "copy %57 npu→cpu").
	Steps []string
	// Notes are shown above the tables.
	Notes []string
}

// Region is one fixed allocation of a program.
type Region struct {
	// Name says what the region holds ("arena", "weights", "kv", ...).
	Name string
	// Device holds the region; Bytes is its size.
	Device string
	Bytes  int64
}

// Segment is a run of kernels on one device; a capturable segment is
// recorded once as a device graph and replayed.
type Segment struct {
	// ID numbers the segment; Device runs it.
	ID     int
	Device string
	// Capturable segments are captured once and replayed.
	Capturable bool
	// Blocker says why a segment is not capturable.
	Blocker string
	// Key is the replay-cache key of a capturable segment.
	Key     string
	Kernels []Kernel
}

// Kernel is one launch of a segment.
type Kernel struct {
	// Name is the kernel (for example "aclnnRmsNorm"); Op the IR op.
	Name, Op string
	// Node is the IR node the kernel computes, or -1.
	Node int
	// Output describes the result tensor (dtype, shape, address).
	Output string
	// Workspace is the kernel's scratch memory in bytes.
	Workspace int64
}

// column is a Column with its report keys.
type column struct {
	Column
	keys []int
	set  map[int]bool
}

// WriteHTML writes the report as one HTML page with its style sheet and
// script inline; it loads nothing else. Clicking a value highlights it in
// every column and in the chart, partition and program tables (one colour
// per selected value, up to six at a time); clicking a column's title folds
// it, and a column identical to the one before starts folded. Lines new in
// a column are tinted green and lines the next changed column drops are
// struck out. Opening the page with "#selftest" clicks the first
// value and logs the outcome to the console (used by the headless-browser
// test). The output is deterministic.
func (r *Report) WriteHTML(w io.Writer) error {
	for i, c := range r.Columns {
		if c.Graph == nil {
			return fmt.Errorf("viz: report: column %d (%q) has no graph", i, c.Name)
		}
	}
	var k keyer
	cols := reportColumns(&k, r.Columns)
	keysFor := func(g *ir.Graph) func(int) string { return keysFor(&k, cols, g) }

	bw := bufio.NewWriter(w)
	r.writeHeader(bw, cols)
	if len(cols) > 0 {
		writeColumns(bw, cols)
	}
	if len(r.Charts) > 0 {
		if err := r.writeCharts(bw, keysFor); err != nil {
			return err
		}
	}
	if p := r.Partition; p != nil && p.Partition != nil {
		writePartition(bw, p, keysFor(p.Graph), graphOr(p.Graph, cols))
	}
	if p := r.Program; p != nil {
		writeProgram(bw, p, keysFor(p.Graph), graphOr(p.Graph, cols))
	}
	fmt.Fprintf(bw, "<script>%s</script>\n</body>\n</html>\n", reportJS)
	return bw.Flush()
}

// reportColumns gives every column its report keys, matched column to
// column by k.
func reportColumns(k *keyer, columns []Column) []column {
	cols := make([]column, len(columns))
	for i, c := range columns {
		cols[i].Column = c
		if i == 0 {
			cols[i].keys = k.first(c.Graph)
		} else {
			cols[i].keys = k.match(cols[i-1].Graph, cols[i-1].keys, c.Graph)
		}
		cols[i].set = make(map[int]bool, len(cols[i].keys))
		for _, key := range cols[i].keys {
			cols[i].set[key] = true
		}
	}
	return cols
}

// keysFor returns a function giving the report key of a node ID of g: a
// column's graph has its column's keys, nil the last column's, any other
// graph keys matched against the last column.
func keysFor(k *keyer, cols []column, g *ir.Graph) func(int) string {
	if len(cols) == 0 {
		return func(int) string { return "" }
	}
	var keys []int
	if g == nil {
		g, keys = cols[len(cols)-1].Graph, cols[len(cols)-1].keys
	} else {
		for _, c := range cols {
			if c.Graph == g {
				keys = c.keys
			}
		}
		if keys == nil {
			last := cols[len(cols)-1]
			keys = k.match(last.Graph, last.keys, g)
		}
	}
	return func(id int) string {
		if id < 0 || id >= len(keys) {
			return ""
		}
		return "k" + strconv.Itoa(keys[id])
	}
}

// writeHeader writes the page's head, its title, the summary table and
// the navigation to the sections present.
func (r *Report) writeHeader(bw *bufio.Writer, cols []column) {
	title := r.Title
	if title == "" {
		title = "irtool compile report"
	}
	fmt.Fprintf(bw, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n", esc(title), reportCSS)
	fmt.Fprintf(bw, "<header>\n<h1>%s</h1>\n", esc(title))
	if len(r.Summary) > 0 {
		bw.WriteString("<table class=\"kv\">\n")
		for _, kv := range r.Summary {
			fmt.Fprintf(bw, "<tr><th>%s</th><td>%s</td></tr>\n", esc(kv[0]), esc(kv[1]))
		}
		bw.WriteString("</table>\n")
	}
	bw.WriteString("<nav>")
	if len(cols) > 0 {
		bw.WriteString(`<a href="#passes">passes</a>`)
	}
	if len(r.Charts) > 0 {
		bw.WriteString(`<a href="#memory">memory</a>`)
	}
	if r.Partition != nil {
		bw.WriteString(`<a href="#partition">partition</a>`)
	}
	if r.Program != nil {
		bw.WriteString(`<a href="#program">program</a>`)
	}
	bw.WriteString("<span id=\"status\"></span></nav>\n</header>\n")
}

// writeColumns writes the IR after each pass, one column per pass.
func writeColumns(bw *bufio.Writer, cols []column) {
	bw.WriteString("<h2 id=\"passes\">IR after each pass</h2>\n")
	bw.WriteString("<p class=\"help\">Click a value to highlight it in every column, chart and table (click again to clear); click a column's title to fold it. " +
		"<span class=\"new\">Tinted</span> lines are new in that column; <span class=\"gone\">struck-out</span> lines are gone in the next one.</p>\n")
	bw.WriteString("<div class=\"cols\">\n")
	// A column identical to the one before is folded; "gone" marks
	// compare with the next column that changed something, so that a
	// folded column does not hide them.
	unchanged := make([]bool, len(cols))
	for i := 1; i < len(cols); i++ {
		unchanged[i] = slices.Equal(cols[i].keys, cols[i-1].keys) && cols[i].Graph.String() == cols[i-1].Graph.String()
	}
	for i, c := range cols {
		var prev, next map[int]bool
		if i > 0 {
			prev = cols[i-1].set
		}
		for n := i + 1; n < len(cols); n++ {
			if !unchanged[n] || n == len(cols)-1 {
				next = cols[n].set
				break
			}
		}
		writeColumn(bw, c, prev, next, unchanged[i])
	}
	bw.WriteString("</div>\n")
}

// writeCharts writes the memory plan section: each chart, and its
// interference matrices when asked for.
func (r *Report) writeCharts(bw *bufio.Writer, keysFor func(*ir.Graph) func(int) string) error {
	bw.WriteString("<h2 id=\"memory\">Memory plan</h2>\n")
	bw.WriteString("<p class=\"help\">Each box is a tensor: x is its lifetime in execution steps, y its place in the arena. Hover for details; click to highlight its node.</p>\n")
	for _, rc := range r.Charts {
		if rc.Chart == nil {
			continue
		}
		bw.WriteString("<figure class=\"chart\">\n")
		rc.Chart.svg(bw, keysFor(rc.Graph))
		bw.WriteString("</figure>\n")
		if rc.Interference {
			bw.WriteString("<figure class=\"chart\">\n")
			if err := rc.Chart.WriteInterferenceSVG(bw); err != nil {
				return err
			}
			bw.WriteString("</figure>\n")
		}
	}
	return nil
}

// graphOr returns g, or the last column's graph when g is nil.
func graphOr(g *ir.Graph, cols []column) *ir.Graph {
	if g == nil && len(cols) > 0 {
		return cols[len(cols)-1].Graph
	}
	return g
}

func writeColumn(w *bufio.Writer, c column, prev, next map[int]bool, unchanged bool) {
	class := "col"
	note := c.Note
	if unchanged {
		class += " folded"
		if note != "" {
			note += ", "
		}
		note += "no change"
	}
	fmt.Fprintf(w, "<section class=\"%s\">\n<h3 title=\"click to fold\">%s", class, esc(c.Name))
	if note != "" {
		fmt.Fprintf(w, " <span class=\"note\">%s</span>", esc(note))
	}
	fmt.Fprintf(w, " <span class=\"note\">(%d ops)</span></h3>\n<pre>", c.Graph.NumOps())
	pos := indexOf(c.Graph)
	ref := func(n *ir.Node) string {
		i, ok := pos[n]
		if !ok {
			return "%?"
		}
		return fmt.Sprintf(`<span class="ref" data-k="k%d">%%%d</span>`, c.keys[i], i)
	}
	for i, n := range c.Graph.Nodes {
		key := c.keys[i]
		cls := "l"
		if n.IsLeaf() {
			cls += " leaf"
		}
		if prev != nil && !prev[key] {
			cls += " new"
		}
		if next != nil && !next[key] {
			cls += " gone"
		}
		fmt.Fprintf(w, `<div class="%s" data-k="k%d">%%%d = `, cls, key, i)
		if info, ok := n.Info(); ok && info.Fused {
			fmt.Fprintf(w, `<b class="fused">%s</b>`, esc(string(n.Op)))
		} else {
			w.WriteString(esc(string(n.Op)))
		}
		w.WriteByte('(')
		for j, a := range n.Args {
			if j > 0 {
				w.WriteString(", ")
			}
			w.WriteString(ref(a))
		}
		w.WriteByte(')')
		if len(n.Attrs) > 0 {
			fmt.Fprintf(w, ` <span class="at" title="%s">{…}</span>`, esc(n.Attrs.String()))
		}
		fmt.Fprintf(w, " : %s", esc(n.Type.String()))
		if n.Name != "" {
			fmt.Fprintf(w, ` <span class="nm">%s</span>`, esc(strconv.Quote(n.Name)))
		}
		w.WriteString("</div>")
	}
	w.WriteString(`<div class="l out">outputs(`)
	for j, o := range c.Graph.Outputs {
		if j > 0 {
			w.WriteString(", ")
		}
		w.WriteString(ref(o))
	}
	w.WriteString(")</div></pre>\n</section>\n")
}

// nodeRef renders a clickable reference to node id of g.
func nodeRef(g *ir.Graph, id int, keyOf func(int) string) string {
	text := "%" + strconv.Itoa(id)
	if g != nil && id >= 0 && id < len(g.Nodes) {
		text += " " + string(g.Nodes[id].Op)
	}
	if k := keyOf(id); k != "" {
		return fmt.Sprintf(`<span class="ref" data-k="%s">%s</span>`, k, esc(text))
	}
	return esc(text)
}

func writePartition(w *bufio.Writer, rp *ReportPartition, keyOf func(int) string, g *ir.Graph) {
	p := rp.Partition
	w.WriteString("<h2 id=\"partition\">Partition</h2>\n")
	for _, n := range rp.Notes {
		fmt.Fprintf(w, "<p class=\"help\">%s</p>\n", esc(n))
	}
	type group struct {
		device  string
		segment int
	}
	members := map[group][]int{}
	for _, id := range sortedKeys(p.Nodes) {
		pl := p.Nodes[id]
		gk := group{pl.Device, pl.Segment}
		members[gk] = append(members[gk], id)
	}
	groups := make([]group, 0, len(members))
	for gk := range members {
		groups = append(groups, gk)
	}
	// Execution order: by the first node of each group.
	slices.SortFunc(groups, func(a, b group) int { return members[a][0] - members[b][0] })
	w.WriteString("<table class=\"grid\">\n<tr><th>device</th><th>segment</th><th>nodes</th><th>members</th></tr>\n")
	for _, gk := range groups {
		seg := "—"
		if gk.segment >= 0 {
			seg = strconv.Itoa(gk.segment)
			if c := p.Segments[gk.segment]; c != "" {
				seg += ": " + c
			}
		}
		refs := make([]string, 0, len(members[gk]))
		for _, id := range members[gk] {
			refs = append(refs, nodeRef(g, id, keyOf))
		}
		fmt.Fprintf(w, "<tr><td class=\"dev-%s\">%s</td><td>%s</td><td class=\"num\">%d</td><td class=\"refs\">%s</td></tr>\n",
			esc(cssIdent(gk.device)), esc(gk.device), esc(seg), len(members[gk]), strings.Join(refs, " "))
	}
	w.WriteString("</table>\n")
	if g == nil {
		return
	}
	var cuts []string
	for _, n := range g.Nodes {
		pn, ok := p.Nodes[n.ID]
		if !ok {
			continue
		}
		for _, a := range n.Args {
			pa, ok := p.Nodes[a.ID]
			if ok && pa.Device != "" && pn.Device != "" && pa.Device != pn.Device {
				cuts = append(cuts, fmt.Sprintf("%s (%s) → %s (%s), %s", nodeRef(g, a.ID, keyOf), esc(pa.Device),
					nodeRef(g, n.ID, keyOf), esc(pn.Device), esc(TensorBytes(a.Type))))
			}
		}
	}
	fmt.Fprintf(w, "<p class=\"help\">%d edges cross devices.</p>\n", len(cuts))
	if len(cuts) > 0 {
		w.WriteString("<ul class=\"cuts\">\n")
		for _, c := range cuts {
			fmt.Fprintf(w, "<li>%s</li>\n", c)
		}
		w.WriteString("</ul>\n")
	}
}

func writeProgram(w *bufio.Writer, p *Program, keyOf func(int) string, g *ir.Graph) {
	w.WriteString("<h2 id=\"program\">Lowered program</h2>\n")
	for _, n := range p.Notes {
		fmt.Fprintf(w, "<p class=\"help\">%s</p>\n", esc(n))
	}
	if len(p.Regions) > 0 {
		w.WriteString("<table class=\"grid\">\n<tr><th>region</th><th>device</th><th>bytes</th><th></th></tr>\n")
		for _, r := range p.Regions {
			fmt.Fprintf(w, "<tr><td>%s</td><td>%s</td><td class=\"num\">%d</td><td class=\"num\">%s</td></tr>\n",
				esc(r.Name), esc(r.Device), r.Bytes, esc(HumanBytes(r.Bytes)))
		}
		w.WriteString("</table>\n")
	}
	if len(p.Steps) > 0 {
		w.WriteString("<p class=\"help\">Steps of one run, in order:</p>\n<ol class=\"steps\">\n")
		for _, s := range p.Steps {
			fmt.Fprintf(w, "<li>%s</li>\n", esc(s))
		}
		w.WriteString("</ol>\n")
	}
	for _, s := range p.Segments {
		mode := "eager"
		switch {
		case s.Capturable:
			mode = "captured once, replayed"
		case s.Blocker != "":
			mode = "eager (" + s.Blocker + ")"
		}
		fmt.Fprintf(w, "<h3 class=\"seg\">segment %d on %s: %d kernels, %s", s.ID, esc(s.Device), len(s.Kernels), esc(mode))
		if s.Key != "" {
			fmt.Fprintf(w, ", key <code>%s</code>", esc(s.Key))
		}
		w.WriteString("</h3>\n<table class=\"grid\">\n<tr><th>#</th><th>kernel</th><th>op</th><th>node</th><th>output</th><th>workspace</th></tr>\n")
		for i, k := range s.Kernels {
			node := "—"
			if k.Node >= 0 {
				node = nodeRef(g, k.Node, keyOf)
			}
			fmt.Fprintf(w, "<tr><td class=\"num\">%d</td><td><code>%s</code></td><td>%s</td><td>%s</td><td><code>%s</code></td><td class=\"num\">%d</td></tr>\n",
				i, esc(k.Name), esc(k.Op), node, esc(k.Output), k.Workspace)
		}
		w.WriteString("</table>\n")
	}
}

// cssIdent keeps letters, digits and dashes.
func cssIdent(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, strings.ToLower(s))
}

const reportCSS = `
body{font:13px/1.45 system-ui,-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:0;color:#1f2937;background:#fff}
header{padding:12px 20px 8px;border-bottom:1px solid #e5e7eb}
h1{font-size:19px;margin:0 0 6px}
h2{font-size:15px;margin:20px 20px 6px}
h3.seg{font-size:13px;margin:14px 20px 4px}
nav a{margin-right:16px;color:#1d4ed8}
#status{color:#6b7280}
table.kv th{text-align:left;font-weight:600;padding:0 14px 0 0;color:#374151}
table.kv td{padding:0}
.help{color:#4b5563;margin:0 20px 8px}
.cols{display:flex;align-items:flex-start;overflow-x:auto;padding:0 20px 16px}
.col{flex:0 0 auto;border:1px solid #d1d5db;margin-right:-1px;max-width:620px;min-width:120px}
.col>h3{margin:0;padding:5px 8px;font-size:12px;background:#f3f4f6;cursor:pointer;white-space:nowrap;border-bottom:1px solid #d1d5db}
.col .note{font-weight:normal;color:#6b7280}
.col.folded{min-width:0;max-width:30px}
.col.folded>h3{writing-mode:vertical-rl;border-bottom:0;padding:8px 5px}
.col.folded>h3 .note{display:none}
.col.folded pre{display:none}
.col pre{margin:0;padding:4px 8px;font:11px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;overflow-x:auto}
.l{white-space:pre}
.leaf{color:#9ca3af}
.new{background:#dcfce7}
.gone{text-decoration:line-through;text-decoration-color:#dc2626}
.fused{color:#c2410c}
.nm{color:#047857}
.at{color:#7c3aed}
.out{color:#374151;font-weight:600}
[data-k]{cursor:pointer}
figure.chart{margin:0 20px 12px;overflow-x:auto}
table.grid{border-collapse:collapse;margin:0 20px 10px}
table.grid th,table.grid td{border:1px solid #e5e7eb;padding:2px 8px;text-align:left;vertical-align:top}
table.grid th{background:#f9fafb}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.refs{max-width:900px}
td.refs .ref{display:inline-block;margin-right:6px;font-family:ui-monospace,Menlo,Consolas,monospace;font-size:11px}
.dev-npu{background:#ecfdf5}.dev-cpu{background:#eff6ff}
ul.cuts{margin:0 20px 10px;font-size:12px}
ol.steps{margin:0 20px 10px;font-size:12px;columns:3}
.hl0{background:#fde68a!important;outline:1px solid #d97706}
.hl1{background:#bfdbfe!important;outline:1px solid #2563eb}
.hl2{background:#fbcfe8!important;outline:1px solid #db2777}
.hl3{background:#bbf7d0!important;outline:1px solid #16a34a}
.hl4{background:#ddd6fe!important;outline:1px solid #7c3aed}
.hl5{background:#fed7aa!important;outline:1px solid #ea580c}
rect.hl0,rect.hl1,rect.hl2,rect.hl3,rect.hl4,rect.hl5{stroke:#111827;stroke-width:2.5}
rect.hl0{fill:#f59e0b}rect.hl1{fill:#2563eb}rect.hl2{fill:#db2777}rect.hl3{fill:#16a34a}rect.hl4{fill:#7c3aed}rect.hl5{fill:#ea580c}
`

const reportJS = `
(function () {
  "use strict";
  var slots = ["hl0", "hl1", "hl2", "hl3", "hl4", "hl5"];
  var owner = {}; // slot -> key
  function marked(key) {
    return document.querySelectorAll('[data-k="' + key + '"]');
  }
  function toggle(key) {
    var i, s = -1, free = -1;
    for (i = 0; i < slots.length; i++) {
      if (owner[slots[i]] === key) { s = i; }
      if (free < 0 && !owner[slots[i]]) { free = i; }
    }
    var els = marked(key);
    if (s >= 0) {
      for (i = 0; i < els.length; i++) { els[i].classList.remove(slots[s]); }
      delete owner[slots[s]];
      return 0;
    }
    if (free < 0) { free = 0; toggle(owner[slots[0]]); }
    owner[slots[free]] = key;
    for (i = 0; i < els.length; i++) { els[i].classList.add(slots[free]); }
    return els.length;
  }
  document.addEventListener("click", function (ev) {
    var t = ev.target;
    if (!(t instanceof Element)) { return; }
    var h = t.closest(".col > h3");
    if (h) { h.parentNode.classList.toggle("folded"); return; }
    var el = t.closest("[data-k]");
    if (el) { toggle(el.getAttribute("data-k")); }
  });
  if (location.hash === "#selftest") {
    // Click the first computed value that lives through every column.
    var cands = document.querySelectorAll(".col:last-child .l[data-k]:not(.leaf)"), first = null;
    for (var c = 0; c < cands.length && !first; c++) {
      if (document.querySelector('.col:first-child .l[data-k="' + cands[c].getAttribute("data-k") + '"]')) { first = cands[c]; }
    }
    first = first || document.querySelector("[data-k]");
    if (!first) { console.log("irtool-report selftest: ok, nothing to click"); return; }
    var key = first.getAttribute("data-k");
    first.click();
    var lit = document.querySelectorAll("." + slots[0]).length;
    var cols = 0, all = document.querySelectorAll(".col");
    for (var i = 0; i < all.length; i++) { if (all[i].querySelector('.l[data-k="' + key + '"].' + slots[0])) { cols++; } }
    var ok = lit > 0 && lit === marked(key).length;
    document.documentElement.setAttribute("data-selftest", (ok ? "ok" : "fail") + " key=" + key + " highlighted=" + lit + " columns=" + cols);
    document.getElementById("status").textContent = "self-test: " + (ok ? "ok" : "FAILED");
    console.log("irtool-report selftest: " + (ok ? "ok" : "FAIL") + " key=" + key + " highlighted=" + lit + " columns=" + cols);
  }
})();
`
