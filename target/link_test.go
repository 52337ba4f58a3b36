package target

import (
	"math"
	"testing"

	"github.com/irtool/irtool/ir"
)

func TestCollectiveUS(t *testing.T) {
	mesh := &Interconnect{Name: "m", LinkBW: 1e9, StepUS: 10, ReduceBW: 2e9, Algorithm: Mesh, MaxRanks: 8}
	ring := *mesh
	ring.Algorithm = Ring
	const n = 8e6 // 8 MB: β = 1 µs/kB, γ = 0.5 µs/kB
	for _, tc := range []struct {
		name  string
		ic    *Interconnect
		op    ir.Op
		ranks int
		want  float64
	}{
		{"mesh all_reduce p=4", mesh, ir.OpAllReduce, 4, 2*10 + 2*n/4/1e3 + 0.75*n/2e3},
		{"mesh all_gather p=8", mesh, ir.OpAllGather, 8, 10 + n/8/1e3},
		{"mesh reduce_scatter p=2", mesh, ir.OpReduceScatter, 2, 10 + n/2/1e3 + 0.5*n/2e3},
		{"ring all_reduce p=4", &ring, ir.OpAllReduce, 4, 2*3*10 + 2*0.75*n/1e3 + 0.75*n/2e3},
		{"ring all_gather p=8", &ring, ir.OpAllGather, 8, 7*10 + 7.0/8*n/1e3},
		{"send", mesh, ir.OpSend, 2, 10 + n/1e3},
		{"recv is its send's", mesh, ir.OpRecv, 2, 0},
		{"one rank", mesh, ir.OpAllReduce, 1, 0},
	} {
		got, err := tc.ic.CollectiveUS(tc.op, n, tc.ranks)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if math.Abs(got-tc.want) > 1e-9*tc.want+1e-9 {
			t.Errorf("%s: %g µs, want %g", tc.name, got, tc.want)
		}
	}
	if _, err := mesh.CollectiveUS(ir.OpAllReduce, n, 16); err == nil {
		t.Error("16 ranks on an 8-NPU mesh: no error")
	}
	var none *Interconnect
	if _, err := none.CollectiveUS(ir.OpAllReduce, n, 2); err == nil {
		t.Error("no interconnect: no error")
	}
	// More ranks never make a ring all-reduce of the same buffer cheaper
	// in α, and the mesh's bytes per link fall as 1/p.
	a2, _ := mesh.CollectiveUS(ir.OpAllReduce, n, 2)
	a8, _ := mesh.CollectiveUS(ir.OpAllReduce, n, 8)
	if a8 >= a2 {
		t.Errorf("mesh all_reduce of 8 MB: p=8 %g µs not below p=2 %g µs", a8, a2)
	}
}

func TestProfileInterconnect(t *testing.T) {
	p, err := Get("ascend910b")
	if err != nil {
		t.Fatal(err)
	}
	if p.Interconnect == nil || p.Interconnect.Algorithm != Mesh || p.Interconnect.MaxRanks != 8 || p.NPU.MemBytes != 64<<30 {
		t.Fatalf("ascend910b: interconnect %+v, memory %d", p.Interconnect, p.NPU.MemBytes)
	}
	for _, name := range []string{"ascend310b", "cpu"} {
		q, _ := Get(name)
		if q.Interconnect != nil {
			t.Errorf("%s has an interconnect", name)
		}
	}
}
