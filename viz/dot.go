package viz

import (
	"bytes"
	"io"
	"strings"
)

// DOT is a drawing in Graphviz's DOT language, as GraphDOT and
// InterferenceDOT return it. Its text is deterministic: statements appear
// in the order they were added. Node identifiers carry the IDs of what
// they draw: node n12 is IR node %12 (the same ID as in the IR text, the
// HTML report and irtool's JSON), vertex b7 is buffer 7 of a plan.
type DOT struct {
	directed bool
	root     *dotGraph
	edges    []*dotEdge
}

// String returns the DOT text.
func (d *DOT) String() string { return string(d.Bytes()) }

// Bytes returns the DOT text.
func (d *DOT) Bytes() []byte {
	var b bytes.Buffer
	d.write(&b)
	return b.Bytes()
}

// WriteTo writes the DOT text to w.
func (d *DOT) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(d.Bytes())
	return int64(n), err
}

// dotGraph is the whole drawing or one cluster of it.
type dotGraph struct {
	id       string // "" for the root
	attrs    []string
	nodeDefs []string // node [...] of the root
	edgeDefs []string // edge [...] of the root
	nodes    []*dotNode
	subs     []*dotGraph
}

type dotNode struct {
	id    string
	attrs []string
}

type dotEdge struct {
	from, to *dotNode
	attrs    []string
}

func newDOT(directed bool) *DOT { return &DOT{directed: directed, root: &dotGraph{}} }

// attrs appends key/value pairs to list; a key set again is replaced.
func setAttrs(list []string, kv ...string) []string {
	for i := 0; i+1 < len(kv); i += 2 {
		replaced := false
		for j := 0; j+1 < len(list); j += 2 {
			if list[j] == kv[i] {
				list[j+1] = kv[i+1]
				replaced = true
				break
			}
		}
		if !replaced {
			list = append(list, kv[i], kv[i+1])
		}
	}
	return list
}

func (g *dotGraph) Attrs(kv ...string) { g.attrs = setAttrs(g.attrs, kv...) }

// Subgraph returns a new cluster inside g.
func (g *dotGraph) Subgraph(key string) *dotGraph {
	s := &dotGraph{id: "cluster_" + dotIdent(key)}
	g.subs = append(g.subs, s)
	return s
}

// Node adds a node with the identifier id to g.
func (g *dotGraph) Node(id string) *dotNode {
	n := &dotNode{id: id}
	g.nodes = append(g.nodes, n)
	return n
}

func (n *dotNode) Attrs(kv ...string) *dotNode { n.attrs = setAttrs(n.attrs, kv...); return n }

// Edge adds an edge; label, when not empty, is its label.
func (d *DOT) Edge(from, to *dotNode, label string) *dotEdge {
	e := &dotEdge{from: from, to: to}
	if label != "" {
		e.attrs = []string{"label", label}
	}
	d.edges = append(d.edges, e)
	return e
}

func (e *dotEdge) Attrs(kv ...string) *dotEdge { e.attrs = setAttrs(e.attrs, kv...); return e }

// dotIdent turns a key into a DOT identifier: letters, digits and '_'.
func dotIdent(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// dotQuote quotes a DOT string: backslash and quote escaped, newlines
// written as Graphviz's \n line break.
func dotQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func writeAttrList(w *bytes.Buffer, kv []string) {
	w.WriteByte('[')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			w.WriteString(", ")
		}
		w.WriteString(kv[i])
		w.WriteByte('=')
		w.WriteString(dotQuote(kv[i+1]))
	}
	w.WriteByte(']')
}

func (d *DOT) write(w *bytes.Buffer) {
	if d.directed {
		w.WriteString("digraph {\n")
	} else {
		w.WriteString("graph {\n")
	}
	r := d.root
	if len(r.attrs) > 0 {
		w.WriteString("\tgraph ")
		writeAttrList(w, r.attrs)
		w.WriteString(";\n")
	}
	if len(r.nodeDefs) > 0 {
		w.WriteString("\tnode ")
		writeAttrList(w, r.nodeDefs)
		w.WriteString(";\n")
	}
	if len(r.edgeDefs) > 0 {
		w.WriteString("\tedge ")
		writeAttrList(w, r.edgeDefs)
		w.WriteString(";\n")
	}
	r.writeBody(w, "\t")
	op := " -- "
	if d.directed {
		op = " -> "
	}
	for _, e := range d.edges {
		w.WriteString("\t")
		w.WriteString(e.from.id)
		w.WriteString(op)
		w.WriteString(e.to.id)
		if len(e.attrs) > 0 {
			w.WriteByte(' ')
			writeAttrList(w, e.attrs)
		}
		w.WriteString(";\n")
	}
	w.WriteString("}\n")
}

func (g *dotGraph) writeBody(w *bytes.Buffer, indent string) {
	for _, s := range g.subs {
		w.WriteString(indent)
		w.WriteString("subgraph ")
		w.WriteString(s.id)
		w.WriteString(" {\n")
		if len(s.attrs) > 0 {
			w.WriteString(indent + "\tgraph ")
			writeAttrList(w, s.attrs)
			w.WriteString(";\n")
		}
		s.writeBody(w, indent+"\t")
		w.WriteString(indent)
		w.WriteString("}\n")
	}
	for _, n := range g.nodes {
		w.WriteString(indent)
		w.WriteString(n.id)
		if len(n.attrs) > 0 {
			w.WriteByte(' ')
			writeAttrList(w, n.attrs)
		}
		w.WriteString(";\n")
	}
}
