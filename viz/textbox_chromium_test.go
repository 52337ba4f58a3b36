package viz_test

import (
	"bytes"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/viz"
)

// textCheckJS measures every text of every inline SVG of the page with the
// browser's own layout (getBBox, mapped into the picture's coordinates) and
// records those that run outside the picture or, in a Graphviz drawing,
// outside their node's or cluster's shape.
const textCheckJS = `
(function () {
  "use strict";
  var bad = [], n = 0;
  function box(el, svg) {
    var b = el.getBBox();
    var m = svg.getScreenCTM().inverse().multiply(el.getScreenCTM());
    var xs = [], ys = [];
    [[b.x, b.y], [b.x + b.width, b.y], [b.x, b.y + b.height], [b.x + b.width, b.y + b.height]].forEach(function (c) {
      var p = svg.createSVGPoint(); p.x = c[0]; p.y = c[1]; p = p.matrixTransform(m);
      xs.push(p.x); ys.push(p.y);
    });
    return {x0: Math.min.apply(null, xs), y0: Math.min.apply(null, ys), x1: Math.max.apply(null, xs), y1: Math.max.apply(null, ys)};
  }
  function inside(a, o, slack) {
    return a.x0 >= o.x0 - slack && a.x1 <= o.x1 + slack && a.y0 >= o.y0 - slack && a.y1 <= o.y1 + slack;
  }
  document.querySelectorAll("svg").forEach(function (svg) {
    var vb = svg.viewBox.baseVal;
    var canvas = {x0: vb.x, y0: vb.y, x1: vb.x + vb.width, y1: vb.y + vb.height};
    svg.querySelectorAll("text").forEach(function (t) {
      if (!t.textContent.trim()) { return; }
      n++;
      var b = box(t, svg);
      if (!inside(b, canvas, 1)) { bad.push(svg.id + ": " + JSON.stringify(t.textContent) + " outside the picture"); }
      var g = t.closest("g.node, g.cluster");
      var shape = g && g.querySelector("polygon, path, ellipse");
      if (shape && !inside(b, box(shape, svg), 1.5)) {
        bad.push(svg.id + ": " + JSON.stringify(t.textContent) + " outside its " + g.getAttribute("class"));
      }
    });
  });
  document.documentElement.setAttribute("data-textcheck", JSON.stringify({texts: n, bad: bad}));
})();
`

// TestTextInsideInChromium draws the liveness chart and the interference
// matrix with long titles and labels, and Graphviz's rendering of the
// test graph and of the embedded model's graph, into one page, and lets
// headless Chromium measure every text: none may run outside its box.
// Skipped without Chromium (and the Graphviz pictures without Graphviz).
func TestTextInsideInChromium(t *testing.T) {
	bin := chromiumBinary(t)
	pictures := map[string][]byte{}
	c := solved(t, smallProblem())
	c.Title = "cmd/irtool/testdata/qwen2.5-0.5b-shapes.ir: worst case n_tokens=32, n_kv=512, greedy-size plan, layer 5 (steps 115 to 140)"
	var buf bytes.Buffer
	if err := c.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	pictures["liveness"] = bytes.Clone(buf.Bytes())
	m := layeredChart()
	m.Title = c.Title
	m.Buffers[2].Label = strings.Repeat("%2 add_rms_norm_mul with a long name ", 4)
	buf.Reset()
	if err := m.WriteInterferenceSVG(&buf); err != nil {
		t.Fatal(err)
	}
	pictures["interference"] = bytes.Clone(buf.Bytes())
	if viz.HaveGraphviz() {
		d, err := viz.GraphDOT(fuseNorms(t, tinyGraph(t)), viz.GraphOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pictures["graph-tiny"] = render(t, d.String())
		f, err := gguf.Parse(irtool.EmbeddedModel, irtool.EmbeddedModelName)
		if err != nil {
			t.Fatal(err)
		}
		model, err := models.Build(f, models.Options{NCtx: 64})
		if err != nil {
			t.Fatal(err)
		}
		d, err = viz.GraphDOT(model.Graph, viz.GraphOptions{Title: "embedded:stories260K.gguf as built, a long title to wrap"})
		if err != nil {
			t.Fatal(err)
		}
		pictures["graph-stories"] = render(t, d.String())
	}
	var page strings.Builder
	page.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"></head><body>\n")
	for _, name := range []string{"liveness", "interference", "graph-tiny", "graph-stories"} {
		svg, ok := pictures[name]
		if !ok {
			continue
		}
		s := string(svg)
		s = s[strings.Index(s, "<svg"):]
		s = strings.Replace(s, "<svg", `<svg id="`+name+`"`, 1)
		page.WriteString("<div>" + s + "</div>\n")
	}
	page.WriteString("<script>" + textCheckJS + "</script>\n</body></html>\n")
	path := filepath.Join(t.TempDir(), "text.html")
	if err := os.WriteFile(path, []byte(page.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, _ := runChromium(t, bin, path, "--dump-dom")
	attr := regexp.MustCompile(`data-textcheck="([^"]*)"`).FindStringSubmatch(dom)
	if attr == nil {
		t.Fatalf("the page's check did not run: %.300s", dom)
	}
	var res struct {
		Texts int
		Bad   []string
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(attr[1])), &res); err != nil {
		t.Fatal(err)
	}
	if res.Texts < 50 {
		t.Errorf("the browser measured %d texts, want the pictures' hundreds", res.Texts)
	}
	for i, b := range res.Bad {
		if i == 10 {
			t.Errorf("... and %d more", len(res.Bad)-10)
			break
		}
		t.Errorf("in Chromium: %s", b)
	}
}
