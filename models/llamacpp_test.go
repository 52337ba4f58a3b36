package models

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
)

type refNode struct {
	I       int      `json:"i"`
	Name    string   `json:"name"`
	Op      string   `json:"op"`
	OpDesc  string   `json:"op_desc"`
	Type    string   `json:"type"`
	Ne      [4]int64 `json:"ne"`
	Nb      [4]int64 `json:"nb"`
	SrcNode []int    `json:"src_node"`
	ViewOff int64    `json:"view_offs"`
}

type refRun struct {
	Prompt struct {
		Tokens []int32 `json:"tokens"`
	} `json:"prompt"`
	Prefill struct {
		Graph struct {
			Nodes []refNode `json:"nodes"`
		} `json:"graph"`
	} `json:"prefill"`
	Decode struct {
		Pos   int64 `json:"pos"`
		Graph struct {
			Nodes []refNode `json:"nodes"`
		} `json:"graph"`
	} `json:"decode"`
}

var ggmlOp = map[string]ir.Op{
	"GET_ROWS": ir.OpGetRows, "RMS_NORM": ir.OpRMSNorm, "MUL": ir.OpMul, "MUL_MAT": ir.OpMulMat,
	"RESHAPE": ir.OpReshape, "ROPE": ir.OpRope, "VIEW": ir.OpView, "CPY": ir.OpCpy,
	"TRANSPOSE": ir.OpTransp, "PERMUTE": ir.OpPermute, "SOFT_MAX": ir.OpSoftMax,
	"CONT": ir.OpCont, "ADD": ir.OpAdd, "SILU": ir.OpSilu,
}

// TestGraphMatchesLlamaCpp builds each reference model in cpy mode (the
// graph llama.cpp c392e50 builds) and compares it node by node with the
// graph llama.cpp recorded: op, name, shape, byte strides and operands.
func TestGraphMatchesLlamaCpp(t *testing.T) {
	dir := filepath.Dir(testref.Shared(t, "llamacpp/stories260K.llamacpp.json"))
	models, _ := filepath.Glob(filepath.Join(dir, "*.llamacpp.json"))
	for _, path := range models {
		name := strings.TrimSuffix(filepath.Base(path), ".llamacpp.json")
		if strings.Contains(name, "dequant") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var ref refRun
			if err := json.Unmarshal(raw, &ref); err != nil {
				t.Fatal(err)
			}
			if len(ref.Prefill.Graph.Nodes) == 0 {
				t.Skip("no recorded graph (llama-ref runs record logits only)")
			}
			f, err := gguf.Open(testref.Shared(t, "models/"+name+".gguf"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			m, err := Build(f, Options{KVWrite: KVCpy, NCtx: 256})
			if err != nil {
				t.Fatal(err)
			}
			nPrompt := int64(len(ref.Prompt.Tokens))
			check := func(t *testing.T, nodes []refNode, b ir.Bindings) {
				g, err := m.Graph.Specialize(b)
				if err != nil {
					t.Fatal(err)
				}
				lay, err := ir.Layouts(g)
				if err != nil {
					t.Fatal(err)
				}
				var ours []*ir.Node
				for _, n := range g.Nodes {
					if !n.IsLeaf() {
						ours = append(ours, n)
					}
				}
				if len(ours) != len(nodes) {
					t.Fatalf("%d nodes, llama.cpp has %d", len(ours), len(nodes))
				}
				pos := map[*ir.Node]int{}
				for i, n := range ours {
					pos[n] = i
				}
				for i, r := range nodes {
					n := ours[i]
					op := r.Op
					if op == "UNARY" {
						op = r.OpDesc
					}
					if ggmlOp[op] != n.Op {
						t.Fatalf("node %d: op %s, llama.cpp %s (%s)", i, n.Op, r.Op, r.Name)
					}
					if !strings.HasPrefix(r.Name, "node_") && r.Name != n.Name {
						t.Errorf("node %d: name %q, llama.cpp %q", i, n.Name, r.Name)
					}
					if lay[n.ID].Ne != r.Ne {
						t.Errorf("node %d (%s): ne %v, llama.cpp %v", i, r.Name, lay[n.ID].Ne, r.Ne)
					}
					// ggml gives a 1-D view the outer strides of its size; only
					// strides of dims > 1 carry meaning.
					for d := 0; d < 4; d++ {
						if r.Ne[d] > 1 && lay[n.ID].Nb[d] != r.Nb[d] {
							t.Errorf("node %d (%s): nb %v, llama.cpp %v", i, r.Name, lay[n.ID].Nb, r.Nb)
							break
						}
					}
					var args []int
					for _, a := range n.Args {
						if p, ok := pos[a]; ok {
							args = append(args, p)
						} else {
							args = append(args, -1)
						}
					}
					for j, s := range r.SrcNode {
						if j >= len(args) || args[j] != s {
							t.Errorf("node %d (%s): operands %v, llama.cpp %v", i, r.Name, args, r.SrcNode)
							break
						}
					}
				}
			}
			t.Run("prefill", func(t *testing.T) {
				check(t, ref.Prefill.Graph.Nodes, ir.Bindings{SymTokens: nPrompt, SymKV: 32, SymOutputs: 1, SymKVHead: 0})
			})
			t.Run("decode", func(t *testing.T) {
				check(t, ref.Decode.Graph.Nodes, ir.Bindings{SymTokens: 1, SymKV: 32, SymOutputs: 1, SymKVHead: ref.Decode.Pos})
			})
		})
	}
}
