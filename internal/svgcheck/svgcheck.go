// Package svgcheck finds text that runs outside its box in an SVG picture
// drawn by package viz or by Graphviz's dot -Tsvg: a title wider than the
// canvas, a node label wider than its node, a cluster label wider than its
// cluster. Text widths come from viz.TextWidth, the same font metrics the
// viz pictures are laid out with; Graphviz sizes its boxes with the real
// fonts, which share those metrics (Helvetica, Arial, Liberation Sans).
// Tests use it on every picture they make.
package svgcheck

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/irtool/irtool/viz"
)

// Slack is how far, in pixels, text may pass its box before it counts as
// running outside (rounding of coordinates and of font hinting).
const Slack = 1.5

type rect struct{ x0, y0, x1, y1 float64 }

func (r rect) String() string {
	return fmt.Sprintf("[%.1f,%.1f]-[%.1f,%.1f]", r.x0, r.y0, r.x1, r.y1)
}

func (r rect) contains(o rect) bool {
	return o.x0 >= r.x0-Slack && o.x1 <= r.x1+Slack && o.y0 >= r.y0-Slack && o.y1 <= r.y1+Slack
}

// style is what a text inherits from its enclosing groups.
type style struct {
	size         float64
	bold         bool
	anchor       string
	dx, dy       float64 // translation
	rotated      bool
	shape        *rect // the box of the enclosing Graphviz node or cluster
	shapeOwner   string
	shapePending bool
}

// Overflows returns one line per text element of svg that runs outside its
// box: the canvas (the viewBox, or width and height), and for Graphviz node
// and cluster groups the node's or cluster's shape. Rotated text is checked
// against nothing (viz draws only the short axis label rotated).
func Overflows(svg []byte) ([]string, error) {
	dec := xml.NewDecoder(bytes.NewReader(svg))
	dec.Strict = false
	c := &checker{}
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("svgcheck: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			c.start(t)
		case xml.CharData:
			if c.inText {
				c.text.Write(t)
			}
		case xml.EndElement:
			c.end(t)
		}
	}
	return c.out, nil
}

// checker is Overflows' state: the inherited styles of the open elements,
// the canvas, and the text element being read.
type checker struct {
	stack  []style
	canvas *rect
	out    []string
	inText bool
	text   strings.Builder
	tstyle style
	tx, ty float64
}

// cur is the style the next element inherits.
func (c *checker) cur() style {
	if len(c.stack) == 0 {
		return style{size: 14, anchor: "start"}
	}
	return c.stack[len(c.stack)-1]
}

// start opens an element: its style, the canvas of the first svg, the box
// of a node or cluster group's first shape, or a text to measure.
func (c *checker) start(t xml.StartElement) {
	stack := c.stack
	s := c.cur()
	attr := map[string]string{}
	for _, a := range t.Attr {
		attr[a.Name.Local] = a.Value
	}
	if v, ok := attr["font-size"]; ok {
		if f, err := strconv.ParseFloat(strings.TrimSuffix(v, "px"), 64); err == nil {
			s.size = f
		}
	}
	if v, ok := attr["font-weight"]; ok {
		s.bold = v == "bold" || v == "700" || v == "600"
	}
	if v, ok := attr["text-anchor"]; ok {
		s.anchor = v
	}
	if tr, ok := attr["transform"]; ok {
		dx, dy, rot := parseTransform(tr)
		s.dx += dx
		s.dy += dy
		s.rotated = s.rotated || rot
	}
	switch t.Name.Local {
	case "svg":
		if c.canvas == nil {
			c.canvas = canvasOf(attr)
		}
	case "g":
		if class := attr["class"]; class == "node" || class == "cluster" {
			s.shape, s.shapePending, s.shapeOwner = nil, true, attr["id"]
		}
	case "polygon", "path", "rect", "ellipse":
		if s.shapePending && len(stack) > 0 && stack[len(stack)-1].shapePending {
			if r, ok := shapeBox(t.Name.Local, attr); ok {
				r.x0, r.x1, r.y0, r.y1 = r.x0+s.dx, r.x1+s.dx, r.y0+s.dy, r.y1+s.dy
				stack[len(stack)-1].shape = &r
				stack[len(stack)-1].shapePending = false
			}
		}
	case "text":
		c.inText = true
		c.text.Reset()
		c.tstyle = s
		c.tx, _ = strconv.ParseFloat(attr["x"], 64)
		c.ty, _ = strconv.ParseFloat(attr["y"], 64)
	}
	c.stack = append(stack, s)
}

// end closes an element; a text is measured against the canvas and its
// box. An empty or rotated text leaves its style on the stack, as it
// always has.
func (c *checker) end(t xml.EndElement) {
	if t.Name.Local == "text" && c.inText {
		c.inText = false
		s := c.tstyle
		str := strings.TrimSpace(c.text.String())
		if str == "" || s.rotated {
			return
		}
		w := viz.TextWidth(str, s.size, s.bold)
		x := c.tx + s.dx
		switch s.anchor {
		case "middle":
			x -= w / 2
		case "end":
			x -= w
		}
		y := c.ty + s.dy
		box := rect{x, y - 0.75*s.size, x + w, y + 0.2*s.size}
		if c.canvas != nil && !c.canvas.contains(box) {
			c.out = append(c.out, fmt.Sprintf("%q (%.0f px at %.0f px) runs outside the canvas %s", str, w, s.size, c.canvas))
		}
		if s.shape != nil && !s.shape.contains(box) {
			c.out = append(c.out, fmt.Sprintf("%q (%.0f px at %.0f px, %s) runs outside its box %s (%s)", str, w, s.size, box, s.shape, s.shapeOwner))
		}
	}
	if len(c.stack) > 0 {
		// A finished group hands nothing up; a finished shape
		// has already set its group's box.
		c.stack = c.stack[:len(c.stack)-1]
	}
}

// canvasOf returns the picture's box from viewBox, or width and height.
func canvasOf(attr map[string]string) *rect {
	if vb := strings.Fields(strings.ReplaceAll(attr["viewBox"], ",", " ")); len(vb) == 4 {
		var f [4]float64
		for i, s := range vb {
			f[i], _ = strconv.ParseFloat(s, 64)
		}
		return &rect{f[0], f[1], f[0] + f[2], f[1] + f[3]}
	}
	w, err1 := strconv.ParseFloat(strings.TrimSuffix(attr["width"], "pt"), 64)
	h, err2 := strconv.ParseFloat(strings.TrimSuffix(attr["height"], "pt"), 64)
	if err1 != nil || err2 != nil {
		return nil
	}
	return &rect{0, 0, w, h}
}

// parseTransform reads the translations of a transform list and whether it
// rotates by a non-zero angle; scale(1 1) is what Graphviz writes.
func parseTransform(tr string) (dx, dy float64, rotated bool) {
	for tr != "" {
		open := strings.IndexByte(tr, '(')
		end := strings.IndexByte(tr, ')')
		if open < 0 || end < open {
			break
		}
		name := strings.TrimSpace(tr[:open])
		args := numbers(tr[open+1 : end])
		switch name {
		case "translate":
			if len(args) > 0 {
				dx += args[0]
			}
			if len(args) > 1 {
				dy += args[1]
			}
		case "rotate":
			if len(args) > 0 && args[0] != 0 {
				rotated = true
			}
		}
		tr = tr[end+1:]
	}
	return dx, dy, rotated
}

// shapeBox returns the bounding box of a polygon, path (its points and
// control points), rect or ellipse.
func shapeBox(kind string, attr map[string]string) (rect, bool) {
	var pts []float64
	switch kind {
	case "polygon":
		pts = numbers(attr["points"])
	case "path":
		pts = numbers(attr["d"])
	case "rect":
		v := numbers(attr["x"] + " " + attr["y"] + " " + attr["width"] + " " + attr["height"])
		if len(v) != 4 {
			return rect{}, false
		}
		return rect{v[0], v[1], v[0] + v[2], v[1] + v[3]}, true
	case "ellipse":
		v := numbers(attr["cx"] + " " + attr["cy"] + " " + attr["rx"] + " " + attr["ry"])
		if len(v) != 4 {
			return rect{}, false
		}
		return rect{v[0] - v[2], v[1] - v[3], v[0] + v[2], v[1] + v[3]}, true
	}
	if len(pts) < 4 {
		return rect{}, false
	}
	r := rect{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
	for i := 0; i+1 < len(pts); i += 2 {
		r.x0, r.x1 = min(r.x0, pts[i]), max(r.x1, pts[i])
		r.y0, r.y1 = min(r.y0, pts[i+1]), max(r.y1, pts[i+1])
	}
	return r, true
}

// numbers returns the numbers in s, skipping letters (path commands),
// commas and spaces.
func numbers(s string) []float64 {
	f := strings.FieldsFunc(s, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r == '.' || r == '-' || r == 'e' || r == '+')
	})
	var out []float64
	for _, x := range f {
		if v, err := strconv.ParseFloat(x, 64); err == nil {
			out = append(out, v)
		}
	}
	return out
}
