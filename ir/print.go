package ir

import (
	"bufio"
	"encoding/base64"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Print writes the graph in the text format. The output is deterministic,
// and Parse reads it back to an identical graph:
//
//	graph "stories260K" {
//	  meta arch="llama"
//	  %0 = input() : i32[n_tokens] "inp_tokens"
//	  %1 = weight() : f32[64,512] "token_embd.weight"
//	  %2 = get_rows(%1, %0) : f32[64,n_tokens] "inp_embd"
//	  %3 = rms_norm(%2) {eps=1e-05} : f32[64,n_tokens] "norm-0" layer=0
//	  outputs(%3)
//	}
//
// See docs/IR.md for the grammar.
func Print(w io.Writer, g *Graph) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "graph %s {\n", strconv.Quote(g.Name))
	keys := make([]string, 0, len(g.Meta))
	for k := range g.Meta {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(bw, "  meta %s=%s\n", k, strconv.Quote(g.Meta[k]))
	}
	ids := make(map[*Node]int, len(g.Nodes))
	for i, n := range g.Nodes {
		ids[n] = i
	}
	ref := func(n *Node) string {
		if i, ok := ids[n]; ok {
			return "%" + strconv.Itoa(i)
		}
		return "%?"
	}
	for i, n := range g.Nodes {
		bw.WriteString("  %")
		writeNode(bw, n, strconv.Itoa(i), ref, base64.StdEncoding.EncodeToString)
		bw.WriteByte('\n')
	}
	bw.WriteString("  outputs(")
	for j, o := range g.Outputs {
		if j > 0 {
			bw.WriteString(", ")
		}
		bw.WriteString(ref(o))
	}
	bw.WriteString(")\n}\n")
	return bw.Flush()
}

// String returns the text format of the graph.
func (g *Graph) String() string {
	var b strings.Builder
	_ = Print(&b, g)
	return b.String()
}

// PrintTable writes an FX-style table of the graph: one row per node with
// its opcode, name, target op, operands, attributes and type.
func PrintTable(w io.Writer, g *Graph) error {
	rows := [][]string{{"id", "opcode", "name", "target", "args", "attrs", "type"}}
	for i, n := range g.Nodes {
		opcode := "call_function"
		info, _ := n.Info()
		switch {
		case n.Op == OpInput:
			opcode = "placeholder"
		case info != nil && info.Kind == KindLeaf:
			opcode = "get_attr"
		case info != nil && info.Kind == KindView:
			opcode = "call_view"
		}
		args := make([]string, len(n.Args))
		for j, a := range n.Args {
			args[j] = tableRef(a)
		}
		rows = append(rows, []string{strconv.Itoa(i), opcode, n.Name, string(n.Op), "(" + strings.Join(args, ", ") + ")", n.Attrs.String(), n.Type.String()})
	}
	outs := make([]string, len(g.Outputs))
	for j, o := range g.Outputs {
		outs[j] = tableRef(o)
	}
	rows = append(rows, []string{"", "output", "output", "output", "(" + strings.Join(outs, ", ") + ")", "", ""})
	width := make([]int, len(rows[0]))
	for _, r := range rows {
		for c, s := range r {
			if c < len(r)-1 && len(s) > width[c] {
				width[c] = min(len(s), 60)
			}
		}
	}
	bw := bufio.NewWriter(w)
	for _, r := range rows {
		var line strings.Builder
		for c, s := range r {
			if c == len(r)-1 {
				line.WriteString(s)
				break
			}
			if len(s) > 60 {
				s = s[:57] + "..."
			}
			line.WriteString(s)
			line.WriteString(strings.Repeat(" ", width[c]-len(s)+2))
		}
		bw.WriteString(strings.TrimRight(line.String(), " "))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

func tableRef(n *Node) string {
	if n == nil {
		return "%?"
	}
	return "%" + strconv.Itoa(n.ID)
}
