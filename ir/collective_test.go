package ir

import (
	"strings"
	"testing"
)

// rankGraphText is one rank's graph of a two-way tensor-parallel block:
// the partial sum of a row-parallel product reduced, a gathered output,
// a reduce-scatter and a send/recv pair.
func rankGraphText(rank int, peerOp string) string {
	peer := "1"
	if rank == 1 {
		peer = "0"
	}
	return `graph "tp" {
  meta tp_rank="` + string(rune('0'+rank)) + `"
  %0 = input() : f32[8,n_tokens] "x"
  %1 = weight() : f32[8,4] "w"
  %2 = mul_mat(%1, %0) : f32[4,n_tokens] "partial"
  %3 = all_reduce(%2) {group="tp", ranks=2} : f32[4,n_tokens] "sum"
  %4 = all_gather(%3) {dim=0, ranks=2} : f32[8,n_tokens] "gathered"
  %5 = reduce_scatter(%1) {dim=1, ranks=2, reduce="sum"} : f32[8,2] "scattered"
  %6 = ` + peerOp + ` {peer=` + peer + `, ranks=2} : f32[8,n_tokens] "p2p"
  outputs(%4, %5, %6)
}
`
}

func TestCollectiveTextRoundTrip(t *testing.T) {
	for rank, op := range []string{"send(%4)", "recv(%4)"} {
		text := rankGraphText(rank, op)
		g, err := ParseString(text)
		if err != nil {
			t.Fatalf("rank %d: %v", rank, err)
		}
		if got := g.String(); got != text {
			t.Fatalf("rank %d: Print(Parse(text)) differs:\n%s\nwant\n%s", rank, got, text)
		}
	}
}

func TestCollectiveTyping(t *testing.T) {
	x := &Node{Op: OpInput, Type: T(F32, 8, S("n_tokens")), Layer: -1}
	q := &Node{Op: OpWeight, Type: T(Q4_0, 32, 4), Layer: -1}
	cases := []struct {
		op      Op
		args    []*Node
		attrs   Attrs
		want    string // the inferred type, or the error's substring
		wantErr bool
	}{
		{OpAllReduce, []*Node{x}, Attrs{AttrRanks: int64(4)}, "f32[8,n_tokens]", false},
		{OpAllReduce, []*Node{x}, Attrs{}, "missing attribute \"ranks\"", true},
		{OpAllReduce, []*Node{x}, Attrs{AttrRanks: int64(0)}, "ranks", true},
		{OpAllReduce, []*Node{x}, Attrs{AttrRanks: int64(2), AttrReduce: "max"}, "reduce must be \"sum\"", true},
		{OpAllReduce, []*Node{q}, Attrs{AttrRanks: int64(2)}, "must be f32 or f16", true},
		{OpAllReduce, []*Node{x}, Attrs{AttrRanks: int64(2), AttrGroup: "a b"}, "group must be an identifier", true},
		{OpAllGather, []*Node{x}, Attrs{AttrRanks: int64(4)}, "f32[32,n_tokens]", false},
		{OpAllGather, []*Node{x}, Attrs{AttrRanks: int64(4), AttrDim: int64(1)}, "f32[8,n_tokens*4]", false},
		{OpAllGather, []*Node{x}, Attrs{AttrRanks: int64(4), AttrDim: int64(4)}, "not in [0, 4)", true},
		{OpAllGather, []*Node{q}, Attrs{AttrRanks: int64(2)}, "cannot be gathered", true},
		{OpAllGather, []*Node{x}, Attrs{AttrRanks: int64(2), AttrCounts: []int64{8, 4}}, "f32[12,n_tokens]", false},
		{OpAllGather, []*Node{x}, Attrs{AttrRanks: int64(2), AttrCounts: []int64{4, 4}}, "none of the counts [4 4]", true},
		{OpAllGather, []*Node{x}, Attrs{AttrRanks: int64(3), AttrCounts: []int64{8, 4}}, "counts must list 3 sizes", true},
		{OpReduceScatter, []*Node{x}, Attrs{AttrRanks: int64(4)}, "f32[2,n_tokens]", false},
		{OpReduceScatter, []*Node{x}, Attrs{AttrRanks: int64(3)}, "not a constant multiple of 3", true},
		{OpReduceScatter, []*Node{x}, Attrs{AttrRanks: int64(2), AttrDim: int64(1)}, "not a constant multiple", true},
		{OpSend, []*Node{x}, Attrs{AttrRanks: int64(2), AttrPeer: int64(1)}, "f32[8,n_tokens]", false},
		{OpSend, []*Node{x}, Attrs{AttrRanks: int64(2), AttrPeer: int64(2)}, "peer 2 is not a rank of 2", true},
		{OpSend, []*Node{x}, Attrs{AttrRanks: int64(2)}, "missing integer attribute \"peer\"", true},
	}
	for _, c := range cases {
		g := New("t")
		n, err := g.Add(c.op, c.args, c.attrs)
		if c.wantErr {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s %v: err %v, want one containing %q", c.op, c.attrs, err, c.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %v: %v", c.op, c.attrs, err)
			continue
		}
		if got := n.Type.String(); got != c.want {
			t.Errorf("%s %v: type %s, want %s", c.op, c.attrs, got, c.want)
		}
	}
	// recv declares its type.
	g := New("t")
	if _, err := g.AddTyped(OpRecv, nil, Attrs{AttrRanks: int64(2), AttrPeer: int64(0)}, T(F32, 8)); err != nil {
		t.Errorf("recv: %v", err)
	}
	if _, err := g.AddTyped(OpRecv, nil, Attrs{AttrRanks: int64(2), AttrPeer: int64(0)}, T(Q4_0, 32)); err == nil {
		t.Errorf("recv of q4_0: no error")
	}
}

func TestCollectiveAccessorDefaults(t *testing.T) {
	var a Attrs
	if a.Ranks() != 1 || a.Group() != DefaultGroup || a.Reduce() != "sum" || a.Peer() != -1 || a.GatherDim() != 0 {
		t.Fatalf("defaults: ranks %d group %q reduce %q peer %d dim %d", a.Ranks(), a.Group(), a.Reduce(), a.Peer(), a.GatherDim())
	}
	a = Attrs{AttrRanks: int64(8), AttrGroup: "pp", AttrPeer: int64(3), AttrDim: int64(1)}
	if a.Ranks() != 8 || a.Group() != "pp" || a.Peer() != 3 || a.GatherDim() != 1 {
		t.Fatalf("set: %v", a)
	}
}

func TestVerifyCollectives(t *testing.T) {
	parse := func(s string) *Graph {
		t.Helper()
		g, err := ParseString(s)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	good := []*Graph{parse(rankGraphText(0, "send(%4)")), parse(rankGraphText(1, "recv(%4)"))}
	if err := VerifyCollectives(good); err != nil {
		t.Fatalf("matching ranks: %v", err)
	}
	cases := []struct {
		name string
		r0   string
		r1   string
		want string
	}{
		{"two sends", rankGraphText(0, "send(%4)"), rankGraphText(1, "send(%4)"),
			"has no matching recv on rank 1"},
		{"missing all_reduce", rankGraphText(0, "send(%4)"),
			strings.Replace(strings.Replace(rankGraphText(1, "recv(%4)"), `all_reduce(%2) {group="tp", ranks=2}`, "scale(%2) {scale=1.0}", 1), "%5 = reduce_scatter", "%5 = reduce_scatter", 1),
			"collective 0: rank 0 issues %3 all_reduce(f32[4,n_tokens]) group tp, rank 1 issues %4 all_gather"},
		{"other dim", rankGraphText(0, "send(%4)"),
			strings.Replace(strings.Replace(rankGraphText(1, "recv(%4)"), "reduce_scatter(%1) {dim=1", "reduce_scatter(%1) {dim=0", 1), "f32[8,2] \"scattered\"", "f32[4,4] \"scattered\"", 1),
			"collective 2: rank 0 issues %5 reduce_scatter(f32[8,4]) group tp dim 1, rank 1 issues %5 reduce_scatter(f32[8,4]) group tp dim 0"},
		{"recv of another type", rankGraphText(0, "send(%4)"),
			strings.Replace(rankGraphText(1, "recv(%4)"), `recv(%4) {peer=0, ranks=2} : f32[8,n_tokens]`, `recv(%4) {peer=0, ranks=2} : f16[8,n_tokens]`, 1),
			"rank 0 sends %6 send(f32[8,n_tokens]) group tp peer 1, rank 1 receives %6 recv(f16[8,n_tokens]) group tp peer 0"},
	}
	for _, c := range cases {
		err := VerifyCollectives([]*Graph{parse(c.r0), parse(c.r1)})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v\nwant one containing %q", c.name, err, c.want)
		}
	}
	// Three graphs for collectives of two ranks.
	err := VerifyCollectives(append(good, parse(rankGraphText(0, "send(%4)"))))
	if err == nil || !strings.Contains(err.Error(), "ranks=2, but there are 3 ranks") {
		t.Errorf("3 graphs: %v", err)
	}
	if err := VerifyCollectives(nil); err == nil {
		t.Errorf("no graphs: no error")
	}
}

// TestVerifyGroupCollectives: the stages of one tensor-parallel rank are
// checked as a pipeline group, their tensor-parallel collectives left to
// the other group.
func TestVerifyGroupCollectives(t *testing.T) {
	stage := func(body string) *Graph {
		g, err := ParseString("graph \"s\" {\n  %0 = input() : f32[8] \"x\"\n" + body + "}\n")
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	s0 := stage("  %1 = all_reduce(%0) {ranks=2} : f32[8] \"a\"\n  %2 = send(%1) {group=\"pp\", peer=1, ranks=2} : f32[8] \"h\"\n  outputs(%2)\n")
	s1 := stage("  %1 = recv() {group=\"pp\", peer=0, ranks=2} : f32[8] \"h\"\n  %2 = all_gather(%1) {ranks=2} : f32[16] \"b\"\n  outputs(%2)\n")
	if err := VerifyGroupCollectives([]*Graph{s0, s1}, "pp"); err != nil {
		t.Errorf("pp group: %v", err)
	}
	if err := VerifyCollectives([]*Graph{s0, s1}); err == nil || !strings.Contains(err.Error(), "group tp: collective 0") {
		t.Errorf("all groups: %v", err)
	}
}
