package ir

import (
	"fmt"
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
	b.WriteString(strconv.Itoa(n.ID))
	b.WriteString(" = ")
	b.WriteString(string(n.Op))
	b.WriteByte('(')
	for j, a := range n.Args {
		if j > 0 {
			b.WriteString(", ")
		}
		if a == nil {
			b.WriteString("%?")
			continue
		}
		b.WriteString("%")
		b.WriteString(strconv.Itoa(a.ID))
	}
	b.WriteByte(')')
	if len(n.Attrs) > 0 {
		b.WriteString(" {")
		b.WriteString(n.Attrs.String())
		b.WriteByte('}')
	}
	b.WriteString(" : ")
	b.WriteString(n.Type.String())
	if n.Name != "" {
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(n.Name))
	}
	if n.Layer >= 0 {
		fmt.Fprintf(&b, " layer=%d", n.Layer)
	}
	if n.Data != nil {
		fmt.Fprintf(&b, " data=<%d bytes>", len(n.Data))
	}
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
