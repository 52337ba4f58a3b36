package target_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/target"
)

// HCCLRules puts on the NPU the collectives HCCL computes on whole
// buffers, gives an all_gather along an inner dim the workspace of its
// result, and leaves the rest on the host with the reason; the default
// rules are unchanged (collectives on the host).
func TestHCCLRules(t *testing.T) {
	rules, err := target.HCCLRules()
	if err != nil {
		t.Fatal(err)
	}
	prof, err := rules.Profile("ascend910b")
	if err != nil {
		t.Fatal(err)
	}
	def, err := target.Get("ascend910b")
	if err != nil {
		t.Fatal(err)
	}
	two := int64(2)
	for _, c := range []struct {
		name   string
		op     ir.Op
		dt     ir.DType
		in     []int64 // the operand's shape
		attrs  ir.Attrs
		kernel string // "" = stays on the host
		why    string
		ws     int64
	}{
		{"all_reduce", ir.OpAllReduce, ir.F32, []int64{64, 5}, ir.Attrs{ir.AttrRanks: two}, "HcclAllReduce", "", 0},
		{"all_reduce f16", ir.OpAllReduce, ir.F16, []int64{64}, ir.Attrs{ir.AttrRanks: two}, "HcclAllReduce", "", 0},
		{"all_gather outer", ir.OpAllGather, ir.F32, []int64{16, 1}, ir.Attrs{ir.AttrRanks: two}, "HcclAllGather", "", 0},
		{"all_gather inner", ir.OpAllGather, ir.F32, []int64{16, 3}, ir.Attrs{ir.AttrRanks: two}, "HcclAllGather", "", 2 * 16 * 3 * 4},
		{"all_gather counts", ir.OpAllGather, ir.F32, []int64{16}, ir.Attrs{ir.AttrRanks: two, ir.AttrCounts: []int64{16, 8}}, "", "unequal parts", 0},
		{"reduce_scatter outer", ir.OpReduceScatter, ir.F32, []int64{32}, ir.Attrs{ir.AttrRanks: two}, "HcclReduceScatter", "", 0},
		{"reduce_scatter inner", ir.OpReduceScatter, ir.F32, []int64{32, 3}, ir.Attrs{ir.AttrRanks: two}, "", "scatters whole buffers", 0},
		{"send", ir.OpSend, ir.F32, []int64{8}, ir.Attrs{ir.AttrRanks: two, ir.AttrPeer: int64(1)}, "HcclSend", "", 0},
		{"recv", ir.OpRecv, ir.F32, []int64{8}, ir.Attrs{ir.AttrRanks: two, ir.AttrPeer: int64(1)}, "HcclRecv", "", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := ir.New("t")
			dims := make([]any, len(c.in))
			for i, v := range c.in {
				dims[i] = v
			}
			x, err := g.AddTyped(ir.OpInput, nil, nil, ir.T(c.dt, dims...))
			if err != nil {
				t.Fatal(err)
			}
			var n *ir.Node
			if c.op == ir.OpRecv { // its type is what it receives
				n, err = g.AddTyped(c.op, []*ir.Node{x}, c.attrs, x.Type)
			} else {
				n, err = g.Add(c.op, []*ir.Node{x}, c.attrs)
			}
			if err != nil {
				t.Fatal(err)
			}
			s := prof.Supports(n)
			if s.OK != (c.kernel != "") || s.Kernel != c.kernel {
				t.Fatalf("Supports = %+v, want kernel %q", s, c.kernel)
			}
			if !s.OK && !strings.Contains(s.Reason, c.why) {
				t.Errorf("reason %q does not say %q", s.Reason, c.why)
			}
			if ws := prof.Workspace(n); s.OK && ws != c.ws {
				t.Errorf("workspace %d B, want %d", ws, c.ws)
			}
			if d := def.Supports(n); d.OK {
				t.Errorf("the default rules put %s on the NPU", c.op)
			}
		})
	}
}

// Under HCCLRules an all_reduce of a tensor-parallel graph runs on the
// NPU as HcclAllReduce; under the default rules it stays on the host.
func ExampleHCCLRules() {
	g, err := ir.ParseString(`graph "g" {
  %0 = input() : f32[64,n_tokens] "x"
  %1 = all_reduce(%0) {ranks=2} : f32[64,n_tokens] "sum"
  outputs(%1)
}`)
	if err != nil {
		panic(err)
	}
	rules, err := target.HCCLRules()
	if err != nil {
		panic(err)
	}
	hccl, _ := rules.Profile("ascend910b")
	def, _ := target.Get("ascend910b")
	n := g.Nodes[1]
	fmt.Println(hccl.Supports(n).Kernel)
	fmt.Println(def.Supports(n).OK)
	// Output:
	// HcclAllReduce
	// false
}
