package cann

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// SrcProps are the properties of one kernel operand graph replay compares.
type SrcProps struct {
	DType string   `json:"dtype"`
	Ne    [4]int64 `json:"ne"`
	Nb    [4]int64 `json:"nb"`
	Addr  Addr     `json:"addr"`
}

// KernelProps is the property tuple of one kernel that a captured graph
// may be replayed only if it is unchanged: the op, the output's dtype,
// shape, strides and address, the same for every operand, and every op
// parameter (ggml-cann's is_matched_graph; llama.cpp PRs #15065, #16166, #21204). Workspace addresses
// are included: a captured graph bakes them in too (ggml-cann's memory pools).
type KernelProps struct {
	Name      string     `json:"name"`
	Op        string     `json:"op"`
	DType     string     `json:"dtype"`
	Ne        [4]int64   `json:"ne"`
	Nb        [4]int64   `json:"nb"`
	Addr      Addr       `json:"addr"`
	Srcs      []SrcProps `json:"srcs"`
	Params    string     `json:"params"`
	Workspace Addr       `json:"workspace"`
}

// Props returns the segment's property list, one entry per kernel in
// order; its length is the kernel count.
func (s *Segment) Props() []KernelProps {
	out := make([]KernelProps, len(s.Kernels))
	for i, k := range s.Kernels {
		p := KernelProps{Name: k.Name, Op: string(k.Op), DType: k.Output.DType.String(), Ne: k.Output.Ne, Nb: k.Output.Nb,
			Addr: k.Output.Addr, Params: k.Attrs.String(), Workspace: k.Workspace}
		for _, in := range append(append([]TensorDesc{}, k.Inputs...), k.Extra...) {
			p.Srcs = append(p.Srcs, SrcProps{DType: in.DType.String(), Ne: in.Ne, Nb: in.Nb, Addr: in.Addr})
		}
		out[i] = p
	}
	return out
}

// Fingerprint hashes a property list (SHA-256 of its JSON, hex). Two
// segments with equal fingerprints are interchangeable for graph replay.
func Fingerprint(props []KernelProps) string {
	b, err := json.Marshal(props)
	if err != nil {
		return ""
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Mismatch is the first property where two segments differ.
type Mismatch struct {
	Kernel int    // index in the segment, -1 for the kernel count
	Node   int    // IR node of the kernel in the second segment
	Name   string // aclnn name
	What   string // which property and both values
}

// Error prints the mismatch.
func (m *Mismatch) Error() string {
	if m.Kernel < 0 {
		return m.What
	}
	return fmt.Sprintf("kernel %d (%s, node %d): %s", m.Kernel, m.Name, m.Node, m.What)
}

// Match applies ggml-cann's replay rule to two segments: a graph captured
// for a may be replayed for b only when the kernel count and every
// kernel's properties are equal. It returns every kernel that differs (nil
// when they match); each Mismatch names the first differing property.
func Match(a, b *Segment) []*Mismatch {
	pa, pb := a.Props(), b.Props()
	if len(pa) != len(pb) {
		return []*Mismatch{{Kernel: -1, What: fmt.Sprintf("kernel count %d vs %d", len(pa), len(pb))}}
	}
	var out []*Mismatch
	for i := range pa {
		x, y := pa[i], pb[i]
		what := ""
		switch {
		case x.Op != y.Op || x.Name != y.Name:
			what = fmt.Sprintf("op %s/%s vs %s/%s", x.Op, x.Name, y.Op, y.Name)
		case x.DType != y.DType:
			what = fmt.Sprintf("dtype %s vs %s", x.DType, y.DType)
		case x.Ne != y.Ne:
			what = fmt.Sprintf("shape %v vs %v", x.Ne, y.Ne)
		case x.Nb != y.Nb:
			what = fmt.Sprintf("strides %v vs %v", x.Nb, y.Nb)
		case x.Addr != y.Addr:
			what = fmt.Sprintf("output address %s vs %s", x.Addr, y.Addr)
		case x.Params != y.Params:
			what = fmt.Sprintf("op params {%s} vs {%s}", x.Params, y.Params)
		case x.Workspace != y.Workspace:
			what = fmt.Sprintf("workspace %s vs %s", x.Workspace, y.Workspace)
		case len(x.Srcs) != len(y.Srcs):
			what = fmt.Sprintf("%d operands vs %d", len(x.Srcs), len(y.Srcs))
		default:
			for j := range x.Srcs {
				if x.Srcs[j] != y.Srcs[j] {
					what = fmt.Sprintf("operand %d %+v vs %+v", j, x.Srcs[j], y.Srcs[j])
					break
				}
			}
		}
		if what != "" {
			out = append(out, &Mismatch{Kernel: i, Node: b.Kernels[i].Node, Name: y.Name, What: what})
		}
	}
	return out
}
