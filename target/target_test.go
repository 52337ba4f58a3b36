package target_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/target"
	"github.com/stretchr/testify/require"
)

func node(t *testing.T, src, name string) *ir.Node {
	t.Helper()
	g, err := ir.ParseString(src)
	if err != nil {
		t.Fatal(err)
	}
	n := g.Find(name)
	if n == nil {
		t.Fatalf("no node %q", name)
	}
	return n
}

func TestGet(t *testing.T) {
	for _, name := range target.Names() {
		p, err := target.Get(strings.ToUpper(name))
		if err != nil || p.Name != name {
			t.Fatalf("Get(%q) = %v, %v", name, p, err)
		}
		if p.HasNPU() != (name != "cpu") || p.Align <= 0 || p.Host.MemBW <= 0 || p.Host.Source == "" {
			t.Errorf("%s: %+v", name, p)
		}
		if p.HasNPU() && (p.NPU.MatmulFLOPS <= 0 || p.NPU.MemBW <= 0 || p.NPU.Source == "" || p.LinkBW <= 0) {
			t.Errorf("%s: NPU %+v", name, p.NPU)
		}
	}
	if _, err := target.Get("gpu"); err == nil || !strings.Contains(err.Error(), "ascend910b") {
		t.Errorf("unknown target: %v", err)
	}
	// Profiles are copies.
	a, _ := target.Get("ascend910b")
	a.Overheads.LaunchUS = 1e6
	if b, _ := target.Get("ascend910b"); b.Overheads.LaunchUS == 1e6 {
		t.Error("Get shares profiles")
	}
	if !a.GraphCapture {
		t.Error("910B has ACL graph capture")
	}
	if p, _ := target.Get("ascend310b"); p.GraphCapture {
		t.Error("310B has no ACL graph capture")
	}
}

const ops = `graph "ops" {
  %0 = input() : f32[64,4] "x"
  %1 = weight() : f16[64,32] "wf16"
  %2 = weight() : q4_0[64,32] "wq4"
  %3 = weight() : q4_K[256,32] "wq4k"
  %4 = input() : f32[256,4] "x256"
  %5 = mul_mat(%1, %0) : f32[32,4] "mm_f16"
  %6 = mul_mat(%2, %0) : f32[32,4] "mm_q4"
  %7 = mul_mat(%3, %4) : f32[32,4] "mm_q4k"
  %8 = input() : i32[4] "ids"
  %9 = get_rows(%2, %8) : f32[64,4] "rows_q4"
  %10 = get_rows(%1, %8) : f32[64,4] "rows_f16"
  %11 = rms_norm(%0) {eps=1e-05} : f32[64,4] "norm"
  %12 = reshape(%0) : f32[16,4,4] "x3"
  %13 = input() : i32[4] "pos"
  %14 = rope(%12, %13) {freq_base=10000, freq_scale=1, mode=2, n_dims=16} : f32[16,4,4] "rope"
  %15 = soft_max(%0) {scale=1} : f32[64,4] "sm_plain"
  %16 = input() : f32[64,64] "mask"
  %17 = soft_max(%0, %16) {max_bias=0, scale=0.125} : f32[64,4] "sm_mask"
  %18 = state() : f16[64,16] "cache"
  %19 = input() : i64[4] "idx"
  %20 = set_rows(%18, %0, %19) : f16[64,16] "write"
  %21 = scale(%0) {scale=2} : f32[64,4] "scale"
  %22 = transpose(%0) : f32[4,64] "t"
  %23 = cont(%22) : f32[4,64] "cont"
  %24 = input() : i32[4,64] "ints"
  %25 = cont(%24) : i32[4,64] "cont_i32"
  %26 = weight() : q8_K[256,32] "wq8k"
  %27 = mul_mat(%26, %4) : f32[32,4] "mm_q8k"
  %28 = get_rows(%3, %8) : f32[256,4] "rows_q4k"
  %29 = weight() : q5_K[256,32] "wq5k"
  %30 = get_rows(%29, %8) : f32[256,4] "rows_q5k"
  outputs(%5, %6, %7, %9, %10, %11, %14, %15, %17, %20, %21, %23, %25, %27, %28, %30)
}`

func TestSupports(t *testing.T) {
	for _, c := range []struct {
		target, node string
		ok           bool
		kernel       string // or a fragment of the reason
		calls        int
	}{
		{"ascend910b", "mm_f16", true, "aclnnMm", 2}, // the activations cast to f16, the product
		{"ascend910b", "mm_q4", true, "aclnnWeightQuantBatchMatmulV2", 3},
		{"ascend910b", "mm_q4k", true, "aclnnWeightQuantBatchMatmulV2", 3},
		{"ascend910b", "mm_q8k", false, "q8_K weights have no aclnnWeightQuantBatchMatmulV2 layout", 0},
		{"ascend910b", "rows_q4", false, "runs on the cpu, as llama.cpp's input layer", 0}, // int4: no gather
		{"ascend910b", "rows_q4k", false, "runs on the cpu, as llama.cpp's input layer", 0},
		{"ascend910b", "rows_q5k", true, "aclnnGatherV2", 8}, // values, scales, offsets gathered; casts; add; mul
		{"ascend910b", "rows_f16", true, "aclnnGatherV2", 2},
		{"ascend910b", "norm", true, "aclnnRmsNorm", 1},
		{"ascend910b", "rope", true, "aclnnRotaryPositionEmbedding", 4}, // gather the angles, cos, sin, rotate
		{"ascend910b", "sm_plain", true, "aclnnSoftmax", 1},
		{"ascend910b", "sm_mask", true, "aclnnSoftmax", 3},
		{"ascend910b", "write", true, "aclnnInplaceIndexCopy", 2},
		{"ascend910b", "scale", true, "aclnnMuls", 1},
		{"ascend910b", "cont", true, "aclnnInplaceCopy", 1},
		{"ascend910b", "cont_i32", false, "f32/f16 only", 0},
		{"ascend910b", "x", true, "", 0}, // a leaf launches nothing
		{"ascend910b", "t", true, "", 0}, // nor does a view
		{"ascend310b", "rope", false, "aclnnRotaryPositionEmbedding", 0},
		{"ascend310b", "mm_q4", false, "aclnnWeightQuantBatchMatmulV2", 0},
		{"ascend310b", "mm_f16", true, "aclnnMm", 2},
		{"ascend310b", "norm", true, "aclnnRmsNorm", 1},
		{"ascend310b-strict", "mm_f16", false, "aclnnMm", 0},
		{"ascend310b-strict", "norm", false, "aclnnRmsNorm", 0},
		{"ascend310b-strict", "write", false, "aclnnInplaceIndexCopy", 0},
		{"ascend310b-strict", "sm_mask", true, "aclnnSoftmax", 3},
		{"cpu", "scale", false, "no NPU", 0},
	} {
		p, _ := target.Get(c.target)
		s := p.Supports(node(t, ops, c.node))
		if s.OK != c.ok {
			t.Errorf("%s %s: ok %v (%s), want %v", c.target, c.node, s.OK, s.Reason, c.ok)
			continue
		}
		if c.ok && (s.Kernel != c.kernel || len(s.Calls) != c.calls) {
			t.Errorf("%s %s: kernel %s calls %v, want %s x%d", c.target, c.node, s.Kernel, s.Calls, c.kernel, c.calls)
		}
		if !c.ok && !strings.Contains(s.Reason, c.kernel) {
			t.Errorf("%s %s: reason %q lacks %q", c.target, c.node, s.Reason, c.kernel)
		}
	}
}

// TestLlamaCppProfile: llama.cpp's program on a part keeps every node the
// NPU supports there (Stay), and on 310P runs RoPE on the NPU as
// ggml-cann's 310P emulation, where irtool's own 310P profile keeps it on
// the host.
func TestLlamaCppProfile(t *testing.T) {
	p310, err := target.Get("ascend310p")
	require.NoError(t, err)
	rope := node(t, ops, "rope")
	s := p310.Supports(rope)
	require.False(t, s.OK, "irtool's 310P program keeps RoPE on the host")
	require.Contains(t, s.Reason, "emulates RoPE")
	s = p310.LlamaCpp().Supports(rope)
	require.True(t, s.OK, s.Reason)
	require.Equal(t, "aclnnAdd", s.Kernel)
	require.Equal(t, []string{"aclnnGatherV2", "aclnnCos", "aclnnSin", "aclnnRoll", "aclnnInplaceFillScalar", "aclnnInplaceMuls",
		"aclnnMul", "aclnnInplaceMul", "aclnnInplaceMul", "aclnnAdd"}, s.Calls)
	require.NotEmpty(t, s.Stay)
	// The quantised matmul stays gated off on 310P in both.
	require.False(t, p310.LlamaCpp().Supports(node(t, ops, "mm_q4")).OK)

	a2, err := target.Get("ascend910b")
	require.NoError(t, err)
	own, ll := a2.Supports(node(t, ops, "norm")), a2.LlamaCpp().Supports(node(t, ops, "norm"))
	require.Empty(t, own.Stay)
	require.Equal(t, own.Calls, ll.Calls)
	require.NotEmpty(t, ll.Stay)
	cpu, err := target.Get("cpu")
	require.NoError(t, err)
	require.Same(t, cpu, cpu.LlamaCpp())
}

// TestEveryOpHasALowering: every compute op in the registry, the fused
// ones included, has an NPU rule on the 910B or a written reason to stay
// on the host, so nothing falls back merely for want of a table entry.
func TestEveryOpHasALowering(t *testing.T) {
	p, _ := target.Get("ascend910b")
	have := map[ir.Op]bool{}
	for _, op := range p.Ops() {
		have[op] = true
	}
	for _, info := range ir.Ops() {
		if info.Kind == ir.KindLeaf || info.Kind == ir.KindView && !info.SideEffect {
			continue
		}
		r, _ := target.DefaultRules().Lookup(info.Name)
		if !have[info.Name] && r.CPUOnly == "" {
			t.Errorf("op %q (fused %v) has no aclnn lowering and no reason to stay on the CPU", info.Name, info.Fused)
		}
	}
}

func TestMatmulKernel(t *testing.T) {
	for _, c := range []struct {
		a, b ir.Shape
		want string
	}{
		{ir.Sh(64, 32), ir.Sh(64, "n_tokens"), "aclnnMm"},
		{ir.Sh(64, "n_kv", 8), ir.Sh(64, "n_tokens", 8), "aclnnBatchMatMul"},
		// Grouped-query attention repeats a's batch: BatchMatMul cannot
		// broadcast, Matmul can.
		{ir.Sh(64, "n_kv", 4), ir.Sh(64, "n_tokens", 8), "aclnnMatmul"},
		{ir.Sh(64, 32, 4, 2), ir.Sh(64, 8, 4, 2), "aclnnMatmul"},
		{ir.Sh(64, 32, 1, "n"), ir.Sh(64, 8), "aclnnMatmul"},
	} {
		if got := target.MatmulKernel(c.a, c.b); got != c.want {
			t.Errorf("%s x %s: %s, want %s", c.a, c.b, got, c.want)
		}
	}
}

func TestContiguous(t *testing.T) {
	g, err := ir.ParseString(`graph "c" {
  %0 = input() : f32[8,4,2] "x"
  %1 = reshape(%0) : f32[32,2] "r"
  %2 = permute(%0) {axes=[0,2,1,3]} : f32[8,2,4] "p"
  %3 = transpose(%1) : f32[2,32] "t"
  %4 = view(%0) {nb=[4,32,128,256], offset=32} : f32[8,3,2] "v"
  %5 = view(%0) {nb=[4,64,128,256], offset=0} : f32[8,2] "vstrided"
  %8 = view(%0) {nb=[4,32,96,256], offset=0} : f32[8,3,2] "vdense"
  %6 = input() : f32[8,1,4] "y"
  %7 = permute(%6) {axes=[0,2,1,3]} : f32[8,4,1] "p1"
  outputs(%1, %2, %3, %4, %5, %7, %8)
}`)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"x": true, "r": true, "p": false, "t": false, "v": false, "vstrided": false, "vdense": true, "p1": true} {
		if got := target.Contiguous(g.Find(name)); got != want {
			t.Errorf("%s: contiguous %v, want %v", name, got, want)
		}
	}
}

func TestEstimate(t *testing.T) {
	p, _ := target.Get("ascend910b")
	mm := node(t, ops, "mm_f16")
	flops, bytes, err := target.Traffic(mm, nil)
	if err != nil {
		t.Fatal(err)
	}
	if flops != 2*64*32*4 || bytes != 64*32*2+64*4*4+32*4*4 {
		t.Errorf("mul_mat traffic %g FLOPs, %g B", flops, bytes)
	}
	e, err := p.Estimate(mm, target.NPU, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Two launches: the f32 activations cast to f16, then the product.
	if e.Calls != 2 || e.LaunchUS != 2*p.Overheads.LaunchUS || e.DeviceUS < p.Overheads.TaskUS {
		t.Errorf("npu %+v", e)
	}
	c, err := p.Estimate(mm, target.CPU, nil)
	if err != nil || c.LaunchUS != 0 || c.DeviceUS < p.Overheads.CPUOpUS {
		t.Errorf("cpu %+v %v", c, err)
	}
	// A KV write costs its rows, not the whole cache.
	_, wb, _ := target.Traffic(node(t, ops, "write"), nil)
	if wb != 64*4*4+4*8+64*4*2 {
		t.Errorf("set_rows moves %g B", wb)
	}
	// A q4_K weight is read in its converted layout: int4 values and f16
	// scales and offsets per 32 (0.625 B/w) instead of ggml's 0.5625.
	q4k := node(t, ops, "mm_q4k")
	_, gb, _ := target.Traffic(q4k, nil)
	if e, err := p.Estimate(q4k, target.NPU, nil); err != nil || e.Bytes != gb+(0.625-0.5625)*256*32 {
		t.Errorf("q4_K mul_mat on the NPU moves %g B, ggml's blocks %g B (%v)", e.Bytes, gb, err)
	}
	if _, err := p.Estimate(node(t, ops, "mm_q8k"), target.NPU, nil); err == nil {
		t.Error("estimate of an unsupported NPU node")
	}
	if _, err := p.Estimate(mm, "gpu", nil); err == nil {
		t.Error("unknown device accepted")
	}
	sym := node(t, `graph "s" {
  %0 = input() : f32[64,n_tokens] "x"
  %1 = silu(%0) : f32[64,n_tokens] "y"
  outputs(%1)
}`, "y")
	if _, _, err := target.Traffic(sym, nil); err == nil {
		t.Error("unbound symbol accepted")
	}
	if _, b, err := target.Traffic(sym, ir.Bindings{"n_tokens": 3}); err != nil || b != 2*64*3*4 {
		t.Errorf("bound: %g %v", b, err)
	}
	if us := p.CopyUS(32e9); us < 1e6 || us > 1e6+100 {
		t.Errorf("32 GB over the link: %g us", us)
	}
}

func TestWorkspace(t *testing.T) {
	p, _ := target.Get("ascend910b")
	for name, want := range map[string]int64{
		"mm_q4":   2*64*4 + 2*32*4, // f16 input and output staging
		"mm_f16":  2*64*4 + 32,     // the activations cast to f16, aligned
		"sm_mask": 4 * 64 * 4,      // the scaled copy
		"norm":    4 * 4,           // rstd: one f32 per row
		"write":   2 * 64 * 4,      // rows cast to f16
		"cont":    0,
	} {
		if got := p.Workspace(node(t, ops, name)); got != want {
			t.Errorf("%s: workspace %d, want %d", name, got, want)
		}
	}
	cpu, _ := target.Get("cpu")
	if cpu.Workspace(node(t, ops, "mm_q4")) != 0 {
		t.Error("cpu target reserves NPU workspace")
	}
}

func ExampleProfile_Supports() {
	g, _ := ir.ParseString(`graph "g" {
  %0 = input() : f32[64,4] "x"
  %1 = input() : i32[4] "pos"
  %2 = reshape(%0) : f32[16,4,4] "x3"
  %3 = rope(%2, %1) {freq_base=10000, freq_scale=1, mode=0, n_dims=16} : f32[16,4,4] "q"
  outputs(%3)
}`)
	for _, name := range []string{"ascend910b", "ascend310b"} {
		p, _ := target.Get(name)
		s := p.Supports(g.Find("q"))
		fmt.Printf("%s: ok=%v kernel=%s reason=%q\n", name, s.OK, s.Kernel, s.Reason)
	}
	// Output:
	// ascend910b: ok=true kernel=aclnnRotaryPositionEmbedding reason=""
	// ascend310b: ok=false kernel= reason="aclnnRotaryPositionEmbedding is not available on Atlas 200I/500 A2 (CANN aclnn operator reference, product support table)"
}

// TestContiguousSymbolicView: a view whose dims after a symbolic one are 1
// is dense when its known strides are; one whose later dims are not 1 cannot
// be shown dense from the graph alone.
func TestContiguousSymbolicView(t *testing.T) {
	g := ir.New("t")
	add := func(op ir.Op, args []*ir.Node, attrs ir.Attrs, ty ir.Type) *ir.Node {
		n, err := g.AddTyped(op, args, attrs, ty)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	x := add(ir.OpInput, nil, nil, ir.T(ir.F32, 64, "n_tokens", 1, 2))
	view := func(nb []int64, ty ir.Type) *ir.Node {
		return add(ir.OpView, []*ir.Node{x}, ir.Attrs{"offset": ir.C(0), "nb": nb}, ty)
	}
	slot := view([]int64{4, 256, 256, 256}, ir.T(ir.F32, 64, "n_tokens"))
	strided := view([]int64{4, 512, 256, 256}, ir.T(ir.F32, 64, "n_tokens"))
	after := view([]int64{4, 256, 256, 256}, ir.T(ir.F32, 64, "n_tokens", 1, 2))
	for _, c := range []struct {
		n    *ir.Node
		want bool
	}{{slot, true}, {strided, false}, {after, false}} {
		if got := target.Contiguous(c.n); got != c.want {
			t.Errorf("%s %v nb %v: Contiguous %v, want %v", c.n, c.n.Type, c.n.Attrs["nb"], got, c.want)
		}
	}
}

// TestTransferDevices: the transfer op (typed in package ir, which cannot
// import this package) accepts exactly the device names defined here.
func TestTransferDevices(t *testing.T) {
	g := ir.New("t")
	x, _ := g.AddTyped(ir.OpInput, nil, nil, ir.T(ir.F32, 4))
	for _, c := range []struct {
		from, to string
		ok       bool
	}{
		{string(target.CPU), string(target.NPU), true},
		{string(target.NPU), string(target.CPU), true},
		{string(target.CPU), "gpu", false},
	} {
		_, err := g.Add(ir.OpTransfer, []*ir.Node{x}, ir.Attrs{"from": c.from, "to": c.to})
		if (err == nil) != c.ok {
			t.Errorf("transfer %s -> %s: error %v, want ok=%v", c.from, c.to, err, c.ok)
		}
	}
}
