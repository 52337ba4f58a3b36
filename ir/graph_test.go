package ir

import (
	"strings"
	"testing"
)

// chain builds x -> silu -> scale -> add(., x) with an unused side branch.
func chain(t *testing.T) (g *Graph, x, a, b, c, dead *Node) {
	t.Helper()
	g = New("chain")
	var err error
	x, err = g.AddTyped(OpInput, nil, nil, T(F32, 4, "n"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ = g.Add(OpSilu, []*Node{x}, nil)
	dead, _ = g.Add(OpScale, []*Node{x}, Attrs{"scale": 3.0})
	b, _ = g.Add(OpScale, []*Node{a}, Attrs{"scale": 2.0})
	c, err = g.Add(OpAdd, []*Node{b, x}, nil)
	if err != nil {
		t.Fatal(err)
	}
	g.Outputs = []*Node{c}
	if err := Verify(g); err != nil {
		t.Fatal(err)
	}
	return
}

func wantVerifyError(t *testing.T, g *Graph, substr string) {
	t.Helper()
	err := Verify(g)
	if err == nil || !strings.Contains(err.Error(), substr) {
		t.Errorf("Verify = %v, want an error containing %q", err, substr)
	}
}

func TestVerify(t *testing.T) {
	if err := Verify(nil); err == nil {
		t.Error("nil graph")
	}
	if err := Verify(New("empty")); err != nil {
		t.Errorf("empty graph: %v", err)
	}
	t.Run("use before def", func(t *testing.T) {
		g, _, _, _, _, _ := chain(t)
		// Move b (scale of a) before its operand a.
		g.Nodes[1], g.Nodes[3] = g.Nodes[3], g.Nodes[1]
		g.renumber()
		wantVerifyError(t, g, "%1 (scale \"\"): operand 0 (%3) is not defined before its use")
	})
	t.Run("operand not in graph", func(t *testing.T) {
		g, _, a, _, _, _ := chain(t)
		stranger := &Node{Op: OpInput, Type: a.Type, Layer: -1}
		a.Args[0] = stranger
		wantVerifyError(t, g, "operand 0 (%0) is not defined before its use")
	})
	t.Run("cycle", func(t *testing.T) {
		g, x, _, b, _, _ := chain(t)
		// x := silu(b): a cycle x -> a -> b -> x, with x no longer a leaf.
		x.Op, x.Args = OpSilu, []*Node{b}
		wantVerifyError(t, g, "%0 (silu \"\"): operand 0 (%3) is not defined before its use")
	})
	t.Run("self loop", func(t *testing.T) {
		g, _, a, _, _, _ := chain(t)
		a.Args[0] = a
		wantVerifyError(t, g, "is not defined before its use")
	})
	t.Run("output not in graph", func(t *testing.T) {
		g, _, _, _, _, _ := chain(t)
		g.Outputs = append(g.Outputs, &Node{Op: OpInput})
		wantVerifyError(t, g, "output 1 is not a node of the graph")
	})
	t.Run("nil output", func(t *testing.T) {
		g, _, _, _, _, _ := chain(t)
		g.Outputs = []*Node{nil}
		wantVerifyError(t, g, "output 0 is not a node")
	})
	t.Run("nil node", func(t *testing.T) {
		g, _, _, _, _, _ := chain(t)
		g.Nodes = append(g.Nodes, nil)
		wantVerifyError(t, g, "node 5 is nil")
	})
	t.Run("duplicate node", func(t *testing.T) {
		g, _, a, _, _, _ := chain(t)
		g.Nodes = append(g.Nodes, a)
		wantVerifyError(t, g, "appears twice")
	})
	t.Run("stale id", func(t *testing.T) {
		g, _, a, _, _, _ := chain(t)
		a.ID = 9
		wantVerifyError(t, g, "id 9 at position 1")
	})
	t.Run("nil operand", func(t *testing.T) {
		g, _, _, _, c, _ := chain(t)
		c.Args[1] = nil
		wantVerifyError(t, g, "operand 1 is nil")
	})
	t.Run("bad type", func(t *testing.T) {
		g, _, _, b, _, _ := chain(t)
		b.Type = T(F32, 4, "m")
		wantVerifyError(t, g, "declared type f32[4,m], inferred f32[4,n]")
	})
	t.Run("missing attribute", func(t *testing.T) {
		g, _, _, b, _, _ := chain(t)
		delete(b.Attrs, "scale")
		wantVerifyError(t, g, `%3 (scale ""): scale: missing attribute "scale"`)
	})
	t.Run("at most ten problems", func(t *testing.T) {
		g, _, _, _, _, _ := chain(t)
		for i := 0; i < 20; i++ {
			g.Outputs = append(g.Outputs, &Node{})
		}
		err := Verify(g)
		if err == nil || strings.Count(err.Error(), "\n") != 9 {
			t.Errorf("Verify should cap its report: %v", err)
		}
	})
	t.Run("static view out of bounds", func(t *testing.T) {
		g := New("oob")
		x, _ := g.AddTyped(OpInput, nil, nil, T(F32, 4, 4))
		v, err := g.AddTyped(OpView, []*Node{x}, Attrs{"offset": C(8), "nb": []int64{4, 16, 64, 64}}, T(F32, 4, 4))
		if err != nil {
			t.Fatal(err) // the op check alone cannot see the bounds
		}
		g.Outputs = []*Node{v}
		wantVerifyError(t, g, "bytes [8, 72) fall outside %0's 64 bytes")
		// The same view in a symbolic graph is accepted until specialised.
		x.Type = T(F32, 4, "n")
		if err := Verify(g); err != nil {
			t.Errorf("symbolic: %v", err)
		}
		if _, err := g.Specialize(Bindings{"n": 4}); err == nil || !strings.Contains(err.Error(), "fall outside") {
			t.Errorf("Specialize n=4: %v", err)
		}
		if _, err := g.Specialize(Bindings{"n": 5}); err != nil {
			t.Errorf("Specialize n=5: %v", err)
		}
	})
}

func TestClone(t *testing.T) {
	g := attentionGraph(t)
	before := g.String()
	c := g.Clone()
	if c.String() != before {
		t.Fatal("clone prints differently")
	}
	if err := Verify(c); err != nil {
		t.Fatal(err)
	}
	orig := map[*Node]bool{}
	for _, n := range g.Nodes {
		orig[n] = true
	}
	for i, n := range c.Nodes {
		if orig[n] {
			t.Fatalf("node %d is shared", i)
		}
		for _, a := range n.Args {
			if orig[a] {
				t.Fatalf("node %d points into the original", i)
			}
		}
	}
	if orig[c.Outputs[0]] {
		t.Fatal("output shared")
	}
	// Mutate the clone everywhere; the original does not change.
	c.Name = "changed"
	c.Meta["arch"] = "other"
	for _, n := range c.Nodes {
		n.Name += "!"
		n.Layer = 7
		if ax, ok := n.Attrs.Ints("axes"); ok {
			ax[0] = 3
		}
		if nb, ok := n.Attrs.Ints("nb"); ok {
			nb[0] = 99
		}
		if _, ok := n.Attrs["eps"]; ok {
			n.Attrs["eps"] = 0.5
		}
		if len(n.Args) > 0 {
			n.Args[0] = c.Nodes[0]
		}
		n.Type = T(F64, 1)
	}
	c.Nodes = c.Nodes[:3]
	c.Outputs[0] = c.Nodes[0]
	if g.String() != before {
		t.Error("mutating the clone changed the original")
	}
	if err := Verify(g); err != nil {
		t.Error(err)
	}
	if New("x").Clone().Meta != nil {
		t.Error("clone of nil Meta")
	}
}

func TestCompact(t *testing.T) {
	g, x, a, b, c, dead := chain(t)
	if n := g.Compact(); n != 1 {
		t.Errorf("removed %d, want 1", n)
	}
	want := []*Node{x, a, b, c}
	if len(g.Nodes) != len(want) {
		t.Fatalf("%d nodes left", len(g.Nodes))
	}
	for i, n := range want {
		if g.Nodes[i] != n || n.ID != i {
			t.Errorf("position %d: %v (id %d)", i, g.Nodes[i], g.Nodes[i].ID)
		}
	}
	for _, n := range g.Nodes {
		if n == dead {
			t.Error("the dead node is still there")
		}
	}
	if err := Verify(g); err != nil {
		t.Error(err)
	}
	if n := g.Compact(); n != 0 {
		t.Errorf("second Compact removed %d", n)
	}
}

func TestCompactKeepsSideEffects(t *testing.T) {
	g := attentionGraph(t)
	// Output only the embedding: the attention block is dead except the
	// cache writes (set_rows, cpy) and everything they depend on.
	g.Outputs = []*Node{g.Find("inp_embd")}
	removed := g.Compact()
	if err := Verify(g); err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	for _, n := range g.Nodes {
		kept[n.Name] = true
	}
	for _, name := range []string{
		"k_cache_set-0", "cache_k_l0", "Kcur-0 (rows)", "kv_idx", "inp_pos", "rope_freqs",
		"v_cache_view-0 (copy of Vcur-0 (transposed))", "v_cache_view-0", "cache_v_l0", "Vcur-0 (transposed)",
		"blk.0.attn_norm.weight", "inp_embd",
	} {
		if !kept[name] {
			t.Errorf("%q was removed", name)
		}
	}
	for _, name := range []string{"k-0", "v-0", "kq-0", "kq_soft_max_ext-0", "blk.0.attn_q.weight", "Qcur-0", "KQ_mask", "result_output", "inp_out_ids"} {
		if kept[name] {
			t.Errorf("%q was kept", name)
		}
	}
	if removed+len(g.Nodes) != len(attentionGraph(t).Nodes) {
		t.Errorf("removed %d, left %d", removed, len(g.Nodes))
	}
}

func TestReplaceUses(t *testing.T) {
	g, x, a, b, c, _ := chain(t)
	// Replace b (scale) by a: c = add(a, x).
	if n := g.ReplaceUses(b, a); n != 1 {
		t.Errorf("replaced %d uses, want 1", n)
	}
	if c.Args[0] != a {
		t.Error("use not replaced")
	}
	// Replace x everywhere, including the output and repeated uses.
	g2, x2, _, _, c2, _ := chain(t)
	g2.Outputs = []*Node{x2, c2, x2}
	y, _ := g2.AddTyped(OpInput, nil, nil, x2.Type)
	g2.Nodes = append([]*Node{y}, g2.Nodes[:len(g2.Nodes)-1]...)
	g2.renumber()
	if n := g2.ReplaceUses(x2, y); n != 3+2 {
		t.Errorf("replaced %d uses, want 5 (3 operands, 2 outputs)", n)
	}
	if g2.Outputs[0] != y || g2.Outputs[2] != y || g2.Outputs[1] != c2 {
		t.Error("outputs not replaced")
	}
	if removed := g2.Compact(); removed != 2 || g2.Nodes[0] != y {
		t.Errorf("Compact after replacing x removed %d nodes, want 2 (x and the unused scale)", removed)
	}
	if err := Verify(g2); err != nil {
		t.Error(err)
	}
	// A node never becomes its own operand.
	g3, _, a3, b3, _, _ := chain(t)
	if n := g3.ReplaceUses(a3, b3); n != 0 {
		t.Errorf("b uses a; replacing a by b changed %d uses", n)
	}
	_ = x
}

func TestUsersInsertAndQueries(t *testing.T) {
	g, x, a, b, c, dead := chain(t)
	users := g.Users()
	if len(users[x.ID]) != 3 || users[x.ID][0] != a || users[x.ID][1] != dead || users[x.ID][2] != c {
		t.Errorf("users of x: %v", users[x.ID])
	}
	if len(users[c.ID]) != 0 {
		t.Error("c has no users")
	}
	n := &Node{Op: OpInput, Type: T(F32, 1), Layer: -1, Name: "first"}
	g.Insert(0, n)
	if g.Nodes[0] != n || n.ID != 0 || x.ID != 1 || c.ID != 5 {
		t.Error("Insert did not renumber")
	}
	if err := Verify(g); err != nil {
		t.Error(err)
	}
	if g.Find("first") != n || g.Find("nope") != nil {
		t.Error("Find")
	}
	if got := g.Leaves(OpInput); len(got) != 2 || got[0] != n || got[1] != x {
		t.Errorf("Leaves = %v", got)
	}
	if g.NumOps() != 4 {
		t.Errorf("NumOps = %d", g.NumOps())
	}
	if oc := g.OpCounts(); oc["scale"] != 2 || oc["silu"] != 1 || oc["add"] != 1 || oc["input"] != 0 {
		t.Errorf("OpCounts = %v", oc)
	}
	if !n.IsLeaf() || b.IsLeaf() || n.String() != "%0" {
		t.Error("IsLeaf / String")
	}
	if g.IsStatic() {
		t.Error("chain is symbolic")
	}
}

func TestSymbols(t *testing.T) {
	g := attentionGraph(t)
	if got := strings.Join(g.Symbols(), ","); got != "kv_head,n_kv,n_outputs,n_tokens" {
		t.Errorf("Symbols = %s", got)
	}
}

func TestSpecialize(t *testing.T) {
	g := attentionGraph(t)
	before := g.String()
	s, err := g.Specialize(attentionBindings)
	if err != nil {
		t.Fatal(err)
	}
	if g.String() != before {
		t.Fatal("Specialize changed its input")
	}
	if !s.IsStatic() || len(s.Symbols()) != 0 {
		t.Fatalf("not static: %v", s.Symbols())
	}
	check := func(name string, want Type) {
		t.Helper()
		n := s.Find(name)
		if n == nil || !n.Type.Equal(want) {
			t.Errorf("%s: %v, want %s", name, n.Type, want)
		}
	}
	check("KQ_mask", T(F32, 16, 4)) // pad(3,4) = 4
	check("kq-0", T(F32, 16, 3, 2))
	check("out_rows-0", T(F32, 8, 1))
	check("v_cache_view-0", T(F16, 3, 8))
	// Dim-valued attributes are bound too: offset kv_head*2 = 10.
	off, ok := s.Find("v_cache_view-0").Attrs.Dim("offset")
	if !ok || !off.Equal(C(10)) {
		t.Errorf("offset = %v", off)
	}
	if off, _ := g.Find("v_cache_view-0").Attrs.Dim("offset"); !off.Equal(Scaled("kv_head", 2)) {
		t.Error("the original's attribute changed")
	}
	// Padding rounds up to the alignment, not to the next power of two.
	for _, c := range []struct{ n, rows int64 }{{1, 4}, {4, 4}, {5, 8}, {9, 12}} {
		b := Bindings{"n_tokens": c.n, "n_kv": 16, "n_outputs": 1, "kv_head": 0}
		s, err := g.Specialize(b)
		if err != nil {
			t.Fatalf("%v: %v", b, err)
		}
		if got := s.Find("KQ_mask").Type; !got.Equal(T(F32, 16, c.rows)) {
			t.Errorf("n_tokens=%d: mask %s", c.n, got)
		}
	}
	// Unbound symbols fail, naming the node.
	_, err = g.Specialize(Bindings{"n_tokens": 3, "n_kv": 16, "n_outputs": 1})
	if err == nil || !strings.Contains(err.Error(), `symbol "kv_head" is not bound`) || !strings.Contains(err.Error(), "v_cache_view-0") {
		t.Errorf("missing kv_head: %v", err)
	}
	_, err = g.Specialize(Bindings{"n_kv": 16})
	if err == nil || !strings.Contains(err.Error(), `"n_tokens" is not bound`) {
		t.Errorf("missing n_tokens: %v", err)
	}
	// Bindings that make a view overflow its storage fail verification:
	// writing 3 rows at kv_head 14 of a 16-slot cache.
	_, err = g.Specialize(Bindings{"n_tokens": 3, "n_kv": 16, "n_outputs": 1, "kv_head": 14})
	if err == nil || !strings.Contains(err.Error(), "fall outside") {
		t.Errorf("kv_head=14: %v", err)
	}
	// n_kv beyond the cache size.
	_, err = g.Specialize(Bindings{"n_tokens": 3, "n_kv": 17, "n_outputs": 1, "kv_head": 0})
	if err == nil || !strings.Contains(err.Error(), "fall outside") {
		t.Errorf("n_kv=17: %v", err)
	}
	_, err = g.Specialize(Bindings{"n_tokens": -3, "n_kv": 16, "n_outputs": 1, "kv_head": 0})
	if err == nil {
		t.Error("negative binding accepted")
	}
	// A static graph specialises to itself.
	s2, err := s.Specialize(nil)
	if err != nil || s2.String() != s.String() {
		t.Errorf("re-specialise: %v", err)
	}
}

func TestLayouts(t *testing.T) {
	g, err := attentionGraph(t).Specialize(attentionBindings)
	if err != nil {
		t.Fatal(err)
	}
	lay, err := Layouts(g)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		ne, nb [MaxDims]int64
		root   int // node id
		off    int64
		ext    int64
	}
	// Strides and extents as ggml computes them (ggml_new_tensor, ggml_view_*,
	// ggml_permute, ggml_transpose, ggml_nbytes) for these shapes.
	tests := map[string]want{
		"token_embd.weight":   {[4]int64{8, 32, 1, 1}, [4]int64{4, 32, 1024, 1024}, 0, 0, 1024},
		"KQ_mask":             {[4]int64{16, 4, 1, 1}, [4]int64{4, 64, 256, 256}, 4, 0, 256},
		"Qcur-0 (reshaped)":   {[4]int64{4, 2, 3, 1}, [4]int64{4, 16, 32, 96}, 11, 0, 96},
		"Kcur-0 (rows)":       {[4]int64{8, 3, 1, 1}, [4]int64{4, 32, 96, 96}, 17, 0, 96},
		"k_cache_set-0":       {[4]int64{8, 16, 1, 1}, [4]int64{2, 16, 256, 256}, 20, 0, 256},
		"k-0":                 {[4]int64{4, 16, 2, 1}, [4]int64{2, 16, 8, 256}, 20, 0, 256},
		"Vcur-0 (transposed)": {[4]int64{3, 8, 1, 1}, [4]int64{32, 4, 96, 96}, 19, 0, 96},
		"v_cache_view-0":      {[4]int64{3, 8, 1, 1}, [4]int64{2, 32, 0, 0}, 24, 10, 230},
		"v_cache_view-0 (copy of Vcur-0 (transposed))": {[4]int64{3, 8, 1, 1}, [4]int64{2, 32, 0, 0}, 24, 10, 230},
		"v-0":               {[4]int64{16, 4, 2, 1}, [4]int64{2, 32, 128, 256}, 24, 0, 256},
		"q-0":               {[4]int64{4, 3, 2, 1}, [4]int64{4, 32, 16, 96}, 13, 0, 96},
		"kqv_merged-0":      {[4]int64{4, 2, 3, 1}, [4]int64{4, 48, 16, 96}, 32, 0, 96},
		"kqv_merged_cont-0": {[4]int64{8, 3, 1, 1}, [4]int64{4, 32, 96, 96}, 34, 0, 96},
		"result_output":     {[4]int64{8, 1, 1, 1}, [4]int64{2, 16, 16, 16}, 43, 0, 16},
	}
	for name, w := range tests {
		n := g.Find(name)
		l := lay[n.ID]
		if l.Ne != w.ne || l.Nb != w.nb || l.Offset != w.off {
			t.Errorf("%s: ne %v nb %v offset %d; want %v %v %d", name, l.Ne, l.Nb, l.Offset, w.ne, w.nb, w.off)
		}
		if l.Root != g.Nodes[w.root] {
			t.Errorf("%s: root %v, want %%%d", name, l.Root, w.root)
		}
		if got := l.Extent(n.Type.DType); got != w.ext {
			t.Errorf("%s: extent %d, want %d", name, got, w.ext)
		}
	}
	// Every non-view node is its own root at offset 0 with dense strides.
	for _, n := range g.Nodes {
		info, _ := Lookup(n.Op)
		l := lay[n.ID]
		if info.Kind != KindView && (l.Root != n || l.Offset != 0 || !l.Contiguous(n.Type.DType)) {
			t.Errorf("%s %q: root %v offset %d contiguous %v", n, n.Name, l.Root, l.Offset, l.Contiguous(n.Type.DType))
		}
	}
}

func TestContiguousAndExtent(t *testing.T) {
	tests := []struct {
		name string
		dt   DType
		ne   [MaxDims]int64
		nb   [MaxDims]int64
		cont bool
		ext  int64
	}{
		{"dense", F32, [4]int64{4, 3, 1, 1}, [4]int64{4, 16, 48, 48}, true, 48},
		{"transposed", F32, [4]int64{3, 4, 1, 1}, [4]int64{16, 4, 48, 48}, false, 48},
		{"row view", F32, [4]int64{4, 2, 1, 1}, [4]int64{4, 32, 64, 64}, false, 48},
		{"size-1 dims take any stride", F32, [4]int64{4, 1, 3, 1}, [4]int64{4, 999, 16, 7}, true, 48},
		{"1-D view of a cache", F16, [4]int64{24, 1, 1, 1}, [4]int64{2, 0, 0, 0}, true, 48},
		{"permuted single head", F32, [4]int64{4, 3, 1, 1}, [4]int64{4, 16, 4, 48}, true, 48},
		{"quantised", Q8_0, [4]int64{64, 2, 1, 1}, [4]int64{34, 68, 136, 136}, true, 136},
		{"quantised single block", Q8_0, [4]int64{32, 2, 1, 1}, [4]int64{0, 34, 68, 68}, true, 34},
		{"empty", F32, [4]int64{0, 3, 1, 1}, [4]int64{4, 0, 0, 0}, true, 0},
		{"huge strides saturate", F32, [4]int64{2, 1 << 40, 1, 1}, [4]int64{4, 1 << 40, 0, 0}, false, 1<<63 - 1},
	}
	for _, tc := range tests {
		l := Layout{Ne: tc.ne, Nb: tc.nb}
		if got := l.Contiguous(tc.dt); got != tc.cont {
			t.Errorf("%s: Contiguous = %v", tc.name, got)
		}
		if got := l.Extent(tc.dt); got != tc.ext {
			t.Errorf("%s: Extent = %d, want %d", tc.name, got, tc.ext)
		}
	}
	if got := ContiguousStrides(Q4_0, [4]int64{64, 3, 2, 1}); got != [4]int64{18, 36, 108, 216} {
		t.Errorf("q4_0 strides %v", got)
	}
}

func TestLayoutErrors(t *testing.T) {
	static := func(t *testing.T) (*Graph, *Node) {
		g := New("l")
		x, _ := g.AddTyped(OpInput, nil, nil, T(F32, 4, 3))
		return g, x
	}
	t.Run("reshape of a transposed tensor", func(t *testing.T) {
		g, x := static(t)
		tr, _ := g.Add(OpTransp, []*Node{x}, nil)
		r, err := g.AddTyped(OpReshape, []*Node{tr}, nil, T(F32, 12))
		if err != nil {
			t.Fatal(err)
		}
		g.Outputs = []*Node{r}
		wantVerifyError(t, g, "source is not contiguous")
		// Through cont it is fine.
		g2, x2 := static(t)
		tr2, _ := g2.Add(OpTransp, []*Node{x2}, nil)
		c, _ := g2.AddTyped(OpCont, []*Node{tr2}, nil, T(F32, 3, 4))
		r2, _ := g2.AddTyped(OpReshape, []*Node{c}, nil, T(F32, 12))
		g2.Outputs = []*Node{r2}
		if err := Verify(g2); err != nil {
			t.Error(err)
		}
	})
	t.Run("reshape of a permuted tensor whose moved dim is 1", func(t *testing.T) {
		// ggml_is_contiguous ignores dims of size 1: permuting [4,1,3] to
		// [4,3,1] keeps the data dense, so a reshape is allowed.
		g := New("p")
		x, _ := g.AddTyped(OpInput, nil, nil, T(F32, 4, 1, 3))
		p, _ := g.Add(OpPermute, []*Node{x}, Attrs{"axes": []int64{0, 2, 1, 3}})
		r, _ := g.AddTyped(OpReshape, []*Node{p}, nil, T(F32, 12))
		g.Outputs = []*Node{r}
		if err := Verify(g); err != nil {
			t.Error(err)
		}
	})
	t.Run("view past the end", func(t *testing.T) {
		g, x := static(t)
		v, _ := g.AddTyped(OpView, []*Node{x}, Attrs{"offset": C(4), "nb": []int64{4, 16, 48, 48}}, T(F32, 4, 3))
		g.Outputs = []*Node{v}
		wantVerifyError(t, g, "bytes [4, 52) fall outside %0's 48 bytes")
	})
	t.Run("view with a huge offset", func(t *testing.T) {
		g, x := static(t)
		// Refused as the node is added (CheckNode), so a symbolic graph,
		// whose layouts Verify cannot check, refuses it too.
		if _, err := g.AddTyped(OpView, []*Node{x}, Attrs{"offset": C(1<<63 - 1), "nb": []int64{4, 16, 48, 48}}, T(F32, 1)); err == nil || !strings.Contains(err.Error(), "want 0..2^62") {
			t.Fatalf("AddTyped = %v, want an offset error", err)
		}
		v, _ := g.AddTyped(OpView, []*Node{x}, Attrs{"offset": C(44), "nb": []int64{4, 16, 48, 48}}, T(F32, 2))
		g.Outputs = []*Node{v}
		wantVerifyError(t, g, "fall outside")
	})
	t.Run("view with huge strides", func(t *testing.T) {
		g, x := static(t)
		v, _ := g.AddTyped(OpView, []*Node{x}, Attrs{"offset": C(0), "nb": []int64{4, 1 << 62, 0, 0}}, T(F32, 1, 3))
		g.Outputs = []*Node{v}
		wantVerifyError(t, g, "fall outside")
	})
	t.Run("view of a view stacks offsets", func(t *testing.T) {
		g, x := static(t)
		v1, _ := g.AddTyped(OpView, []*Node{x}, Attrs{"offset": C(16), "nb": []int64{4, 16, 32, 32}}, T(F32, 4, 2))
		v2, _ := g.AddTyped(OpView, []*Node{v1}, Attrs{"offset": C(16), "nb": []int64{4, 16, 16, 16}}, T(F32, 4))
		g.Outputs = []*Node{v2}
		lay, err := Layouts(g)
		if err != nil {
			t.Fatal(err)
		}
		if l := lay[v2.ID]; l.Root != x || l.Offset != 32 {
			t.Errorf("root %v offset %d", l.Root, l.Offset)
		}
		v3, _ := g.AddTyped(OpView, []*Node{v1}, Attrs{"offset": C(20), "nb": []int64{4, 16, 16, 16}}, T(F32, 4))
		g.Outputs = []*Node{v3}
		wantVerifyError(t, g, "bytes [36, 52) fall outside")
	})
	t.Run("huge static tensor", func(t *testing.T) {
		g := New("h")
		x, _ := g.AddTyped(OpInput, nil, nil, T(F32, 1<<40, 1<<40))
		g.Outputs = []*Node{x}
		wantVerifyError(t, g, "overflows")
	})
	t.Run("quantised row not whole blocks", func(t *testing.T) {
		g := New("q")
		x, _ := g.AddTyped(OpWeight, nil, nil, T(Q4_0, 48))
		g.Outputs = []*Node{x}
		wantVerifyError(t, g, "not a multiple of the block size")
	})
	t.Run("stale ids", func(t *testing.T) {
		g, x := static(t)
		x.ID = 3
		if _, err := Layouts(g); err == nil || !strings.Contains(err.Error(), "call Compact") {
			t.Errorf("Layouts: %v", err)
		}
	})
	t.Run("symbolic", func(t *testing.T) {
		g := New("s")
		g.AddTyped(OpInput, nil, nil, T(F32, "n"))
		if _, err := Layouts(g); err == nil || !strings.Contains(err.Error(), "not static") {
			t.Errorf("Layouts: %v", err)
		}
	})
	t.Run("unverified graphs do not panic", func(t *testing.T) {
		g, x := static(t)
		g.Nodes = append(g.Nodes,
			&Node{ID: 1, Op: OpView, Type: T(F32, 1)},
			&Node{ID: 2, Op: OpView, Type: T(F32, 1), Args: []*Node{{Op: OpInput, ID: 0}}},
			&Node{ID: 3, Op: OpPermute, Type: T(F32, 4, 3), Args: []*Node{x}, Attrs: Attrs{"axes": []int64{5, 5}}},
			&Node{ID: 4, Op: OpView, Type: T(F32, 1), Args: []*Node{x}},
		)
		for i := 1; i < len(g.Nodes); i++ {
			h := &Graph{Nodes: append(append([]*Node{}, g.Nodes[:1]...), g.Nodes[i])}
			h.Nodes[1].ID = 1
			if _, err := Layouts(h); err == nil {
				t.Errorf("case %d: no error", i)
			}
		}
		if _, err := Layouts(&Graph{Nodes: []*Node{nil}}); err == nil {
			t.Error("nil node")
		}
	})
}
