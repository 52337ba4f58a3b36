package ir

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Line returns the node on one line, in the form of its line in the IR
// text (docs/IR.md), with operands named by their IDs:
//
//	%10 = mul_mat(%9, %8) : f32[64,n_tokens] "Qcur-0" layer=0
//
// A const's data is summarised by its size (data=<16 bytes>) instead of
// spelled out. The IDs are those of the text IR, the DOT drawings (node
// n10 is %10), the HTML report and the "node" fields of irtool's JSON.
func (n *Node) Line() string {
	if n == nil {
		return "<nil node>"
	}
	var b strings.Builder
	b.WriteString("%")
	writeNode(&b, n, strconv.Itoa(n.ID), func(a *Node) string {
		if a == nil {
			return "%?"
		}
		return "%" + strconv.Itoa(a.ID)
	}, func(data []byte) string { return fmt.Sprintf("<%d bytes>", len(data)) })
	return b.String()
}

// Format makes %+v print a node's one-line form (Line); %v and %s print
// its ID ("%12"), as String does.
func (n *Node) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('+'):
		fmt.Fprint(f, n.Line())
	case verb == 'v' || verb == 's':
		fmt.Fprint(f, n.String())
	case verb == 'q':
		fmt.Fprint(f, strconv.Quote(n.String()))
	default:
		fmt.Fprintf(f, "%%!%c(*ir.Node=%s)", verb, n.String())
	}
}

// nodeWriter is what writeNode writes to (a strings.Builder, a
// bufio.Writer).
type nodeWriter interface {
	io.Writer
	io.StringWriter
	io.ByteWriter
}

// writeNode writes a node's line of the IR text after its leading "%":
// id, " = ", the op, its operands (each named by ref), attributes, type,
// name, layer and, for a node with data, " data=" and data(n.Data). Print
// and Line share it.
func writeNode(w nodeWriter, n *Node, id string, ref func(*Node) string, data func([]byte) string) {
	w.WriteString(id)
	w.WriteString(" = ")
	w.WriteString(string(n.Op))
	w.WriteByte('(')
	for j, a := range n.Args {
		if j > 0 {
			w.WriteString(", ")
		}
		w.WriteString(ref(a))
	}
	w.WriteByte(')')
	if len(n.Attrs) > 0 {
		w.WriteString(" {")
		w.WriteString(n.Attrs.String())
		w.WriteByte('}')
	}
	w.WriteString(" : ")
	w.WriteString(n.Type.String())
	if n.Name != "" {
		w.WriteByte(' ')
		w.WriteString(strconv.Quote(n.Name))
	}
	if n.Layer >= 0 {
		fmt.Fprintf(w, " layer=%d", n.Layer)
	}
	if n.Data != nil {
		w.WriteString(" data=")
		w.WriteString(data(n.Data))
	}
}
