package partition

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/internal/floatbits"
	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/target"
)

func prof(t testing.TB, name string) *target.Profile {
	t.Helper()
	p, err := target.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var testModels = []string{"stories260K.gguf", "synth-llama-F16.gguf", "synth-llama-Q8_0.gguf", "synth-llama-Q4_0.gguf"}

// checkResult verifies the invariants every partition must hold.
func checkResult(t *testing.T, p *target.Profile, g *ir.Graph, r *Result) {
	t.Helper()
	if len(r.Device) != len(g.Nodes) {
		t.Fatalf("%d devices for %d nodes", len(r.Device), len(g.Nodes))
	}
	segOf := make([]int, len(g.Nodes))
	for i := range segOf {
		segOf[i] = -1
	}
	for _, s := range r.Segments {
		for _, id := range s.Nodes {
			segOf[id] = s.ID
			if r.Device[id] != s.Device {
				t.Errorf("node %d on %s in a %s segment", id, r.Device[id], s.Device)
			}
		}
	}
	if err := CheckAcyclic(g, segOf); err != nil {
		t.Fatal(err)
	}
	npu, cpu := 0, 0
	var bytes int64
	for _, n := range g.Nodes {
		if !isCompute(n) {
			if n.Op == ir.OpTransfer {
				from, _ := n.Attrs.Str("from")
				if from == string(r.Device[n.ID]) {
					t.Errorf("transfer %s from %s to itself", n, from)
				}
			}
			continue
		}
		if segOf[n.ID] < 0 {
			t.Errorf("compute node %s (%s) in no segment", n, n.Op)
		}
		d := r.Device[n.ID]
		if d == target.NPU {
			npu++
			if s := p.Supports(n); !s.OK {
				t.Errorf("%s (%s %q) on the NPU but %s", n, n.Op, n.Name, s.Reason)
			}
		} else {
			cpu++
		}
		// Every operand lives on the node's device, or is a weight,
		// constant or input (placed per device at load time).
		for _, a := range n.Args {
			root := a
			for {
				info, _ := ir.Lookup(root.Op)
				if info.Kind != ir.KindView {
					break
				}
				root = root.Args[info.AliasArg]
			}
			switch root.Op {
			case ir.OpWeight, ir.OpConst, ir.OpInput:
				continue
			}
			if r.Device[root.ID] != d {
				t.Errorf("%s (%s %q) on %s reads %s (%s %q) held on %s", n, n.Op, n.Name, d, a, a.Op, a.Name, r.Device[root.ID])
			}
		}
	}
	for _, c := range r.Copies {
		bytes += c.Bytes
	}
	if npu != r.NPUNodes || cpu != r.CPUNodes || bytes != r.CopyBytes {
		t.Errorf("report npu %d cpu %d bytes %d; counted %d %d %d", r.NPUNodes, r.CPUNodes, r.CopyBytes, npu, cpu, bytes)
	}
}

func TestPartitionInvariants(t *testing.T) {
	for _, file := range testModels {
		_, m := testmodel.Build(t, testref.Testdata(file), models.Options{NCtx: 64})
		for _, tn := range target.Names() {
			p := prof(t, tn)
			for _, refine := range []bool{true, false} {
				g, r, err := RunOptions(m.Graph, p, Options{NoRefine: !refine})
				if err != nil {
					t.Fatalf("%s %s: %v", file, tn, err)
				}
				checkResult(t, p, g, r)
				if !p.HasNPU() && (r.NPUNodes != 0 || len(r.Copies) != 0 || len(r.Segments) != 1) {
					t.Errorf("%s cpu: npu %d, copies %d, segments %d", file, r.NPUNodes, len(r.Copies), len(r.Segments))
				}
			}
		}
	}
}

// TestPartitionKeepsNumbering: when every node runs on one device the
// partition keeps every node at its place, so node %N of the partitioned
// graph is node %N of the input (drawings and reports of the two stages
// can be read side by side).
func TestPartitionKeepsNumbering(t *testing.T) {
	single := 0
	for _, file := range testModels {
		_, m := testmodel.Build(t, testref.Testdata(file), models.Options{NCtx: 64})
		for _, tn := range target.Names() {
			g, r, err := RunOptions(m.Graph, prof(t, tn), Options{})
			if err != nil {
				t.Fatalf("%s %s: %v", file, tn, err)
			}
			if r.CPUNodes > 0 && r.NPUNodes > 0 {
				continue
			}
			single++
			if len(g.Nodes) != len(m.Graph.Nodes) {
				t.Fatalf("%s %s: one device, yet %d nodes became %d", file, tn, len(m.Graph.Nodes), len(g.Nodes))
			}
			for i, n := range g.Nodes {
				if in := m.Graph.Nodes[i]; in.Op != n.Op || in.Name != n.Name {
					t.Errorf("%s %s: %%%d is %s %q, was %s %q", file, tn, i, n.Op, n.Name, in.Op, in.Name)
					break
				}
			}
		}
	}
	if single == 0 {
		t.Fatal("no model ran on a single device")
	}
}

// Test310BFallsBackVisibly: on the 310B, RoPE has no aclnn kernel, so every
// rope runs on the CPU, the report names the reason, and the boundary
// copies and their bytes show up; the segments form no cycle.
func Test310BFallsBackVisibly(t *testing.T) {
	_, m := testmodel.Build(t, testref.Testdata("stories260K.gguf"), models.Options{NCtx: 64})
	p := prof(t, "ascend310b")
	g, r, err := Run(m.Graph, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, p, g, r)
	ropes := 0
	for _, f := range r.Fallbacks {
		if f.Op == ir.OpRope {
			ropes++
			if !strings.Contains(f.Reason, "aclnnRotaryPositionEmbedding") {
				t.Errorf("rope fallback reason %q", f.Reason)
			}
		}
	}
	if ropes != 2*5 {
		t.Errorf("%d ropes fell back, want 10 (Q and K of 5 layers)", ropes)
	}
	if len(r.Copies) == 0 || r.CopyBytes == 0 || r.NPUNodes == 0 || len(r.Segments) < 3 {
		t.Errorf("copies %d (%d B), npu %d, segments %d", len(r.Copies), r.CopyBytes, r.NPUNodes, len(r.Segments))
	}
	for _, c := range r.Copies {
		if c.Bytes <= 0 || c.From == c.To {
			t.Errorf("copy %+v", c)
		}
	}
	// The same model fits the 910B NPU: fewer fallbacks, fewer copies.
	_, r9, err := Run(m.Graph, prof(t, "ascend910b"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r9.Copies) >= len(r.Copies) || r9.NPUNodes <= r.NPUNodes {
		t.Errorf("910B: copies %d npu %d; 310B: copies %d npu %d", len(r9.Copies), r9.NPUNodes, len(r.Copies), r.NPUNodes)
	}
	// Quantised matmul has no 310B kernel either.
	_, mq := testmodel.Build(t, testref.Testdata("synth-llama-Q8_0.gguf"), models.Options{NCtx: 64})
	_, rq, err := RunOptions(mq.Graph, p, Options{NoRefine: true})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range rq.Fallbacks {
		if f.Op == ir.OpMulMat && strings.Contains(f.Reason, "aclnnWeightQuantBatchMatmulV2") {
			found = true
		}
	}
	if !found {
		t.Errorf("q8_0 matmul did not fall back on the 310B: %+v", rq.Fallbacks)
	}
}

func TestCheckAcyclicFindsCycle(t *testing.T) {
	g, err := ir.ParseString(`graph "c" {
  %0 = input() : f32[4] "x"
  %1 = silu(%0) : f32[4] "a"
  %2 = silu(%1) : f32[4] "b"
  %3 = silu(%2) : f32[4] "c"
  outputs(%3)
}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckAcyclic(g, []int{-1, 0, 1, 1}); err != nil {
		t.Errorf("chain: %v", err)
	}
	// a and c in one segment, b in another: each waits for the other.
	err = CheckAcyclic(g, []int{-1, 0, 1, 0})
	if err == nil || !strings.Contains(err.Error(), "cycle") || !strings.Contains(err.Error(), "[0 1]") {
		t.Errorf("cycle not found: %v", err)
	}
	if err := CheckAcyclic(g, []int{0}); err == nil {
		t.Error("short segment list accepted")
	}
}

// run executes a graph (specialised with b) through the reference executor
// and returns output 0.
func run(t *testing.T, g *ir.Graph, w eval.WeightSource, b ir.Bindings, in map[string][]byte, state map[string][]byte) []float32 {
	t.Helper()
	sg, err := g.Specialize(b)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := eval.NewExecutor(sg, w, eval.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sg.Leaves(ir.OpState) {
		if state[s.Name] == nil {
			n, _ := s.Type.Bytes()
			state[s.Name] = make([]byte, n)
		}
		if err := ex.BindState(s.Name, state[s.Name]); err != nil {
			t.Fatal(err)
		}
	}
	return testmodel.RunOutput(t, ex, in)
}

// TestPartitionedGraphComputesTheSame runs the original and the
// partitioned graph (transfers, helper conts, moved nodes and all) through
// the reference executor: the logits must be identical, bit for bit, over a
// prefill and a decode step.
func TestPartitionedGraphComputesTheSame(t *testing.T) {
	f, m := testmodel.Build(t, testref.Testdata("synth-llama-Q8_0.gguf"), models.Options{NCtx: 64})
	for _, c := range []struct {
		target string
		policy Policy
	}{
		{"ascend310b", nil},
		{"ascend910b", PinCPU(ir.OpSetRows)}, // the KV cache on the host, read by the NPU
		{"ascend310b-strict", nil},
	} {
		p := prof(t, c.target)
		g, r, err := RunOptions(m.Graph, p, Options{Policy: c.policy, NoRefine: true})
		if err != nil {
			t.Fatal(err)
		}
		checkResult(t, p, g, r)
		s0, s1 := map[string][]byte{}, map[string][]byte{}
		pos := int64(0)
		for _, toks := range [][]int32{{1, 5, 9, 200}, {17}} {
			n := int64(len(toks))
			b := ir.Bindings{models.SymTokens: n, models.SymOutputs: 1, models.SymKV: models.KVLen(pos+n, 64)}
			in := models.Inputs(toks, pos, b)
			want := run(t, m.Graph, f, b, in, s0)
			got := run(t, g, f, b, in, s1)
			for i := range want {
				if want[i] != got[i] {
					t.Fatalf("%s pos %d: logit %d = %g, original %g", c.target, pos, i, got[i], want[i])
				}
			}
			pos += n
		}
	}
}

func TestPolicy(t *testing.T) {
	_, m := testmodel.Build(t, testref.Testdata("stories260K.gguf"), models.Options{NCtx: 64})
	p9 := prof(t, "ascend910b")
	g, r, err := Run(m.Graph, p9, PinCPU(ir.OpSoftMax))
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, p9, g, r)
	pinned := 0
	for _, f := range r.Fallbacks {
		if f.Op == ir.OpSoftMax && strings.Contains(f.Reason, "policy") {
			pinned++
		}
	}
	if pinned != 5 {
		t.Errorf("%d softmaxes pinned to the cpu, want 5", pinned)
	}
	// Pinning an unsupported node to the NPU is an error naming it.
	toNPU := PolicyFunc(func(n *ir.Node, _ target.Support) target.Device {
		if n.Op == ir.OpRope {
			return target.NPU
		}
		return ""
	})
	if _, _, err := Run(m.Graph, prof(t, "ascend310b"), toNPU); err == nil || !strings.Contains(err.Error(), "rope") || !strings.Contains(err.Error(), "aclnnRotaryPositionEmbedding") {
		t.Errorf("unsupported pin: %v", err)
	}
	bad := PolicyFunc(func(*ir.Node, target.Support) target.Device { return "gpu" })
	if _, _, err := Run(m.Graph, p9, bad); err == nil || !strings.Contains(err.Error(), "gpu") {
		t.Errorf("unknown device: %v", err)
	}
	// A state and its writers share a device.
	g, r, err = Run(m.Graph, p9, PinCPU(ir.OpSetRows))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range g.Nodes {
		if n.Op == ir.OpState && r.Device[n.ID] != target.CPU {
			t.Errorf("state %s on %s, its writers on the cpu", n.Name, r.Device[n.ID])
		}
	}
	// Conflicting pins on the writers of one state are refused.
	half := PolicyFunc(func(n *ir.Node, _ target.Support) target.Device {
		if n.Op == ir.OpSetRows && strings.HasPrefix(n.Name, "k_cache_set-0") {
			return target.CPU
		}
		return ""
	})
	if _, _, err := Run(m.Graph, p9, half); err != nil {
		t.Errorf("a single pinned writer should move the others: %v", err)
	}
	if _, _, err := Run(nil, p9, nil); err == nil {
		t.Error("nil graph accepted")
	}
}

// TestRefineLowersCost: the cost-driven moves never make the modelled step
// slower; on the 910B, where every copy also splits a captured segment,
// they never add copies either.
func TestRefineLowersCost(t *testing.T) {
	for _, file := range testModels {
		_, m := testmodel.Build(t, testref.Testdata(file), models.Options{NCtx: 64})
		for _, tn := range []string{"ascend910b", "ascend310b"} {
			p := prof(t, tn)
			_, a, err := RunOptions(m.Graph, p, Options{NoRefine: true})
			if err != nil {
				t.Fatal(err)
			}
			_, b, err := RunOptions(m.Graph, p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if b.PredictedUS > a.PredictedUS+1e-9 {
				t.Errorf("%s %s: refined %.1f us > greedy %.1f us", file, tn, b.PredictedUS, a.PredictedUS)
			}
			if p.GraphCapture && len(b.Copies) > len(a.Copies) {
				t.Errorf("%s %s: refined %d copies > greedy %d", file, tn, len(b.Copies), len(a.Copies))
			}
			t.Logf("%s %s: greedy %.0f us, %d copies, %d segments; refined %.0f us, %d copies, %d segments, %d moved",
				file, tn, a.PredictedUS, len(a.Copies), len(a.Segments), b.PredictedUS, len(b.Copies), len(b.Segments), b.Moved)
		}
	}
}

// ggmlCANNRules are the default rules with ggml-cann's own limit on
// quantised matmuls (q4_0 and q8_0 only): the target requantisation is
// for, now that the default rules take every gguf/wqconv type.
func ggmlCANNRules(t testing.TB) *target.Rules {
	t.Helper()
	r := target.NewRules()
	for _, op := range []ir.Op{ir.OpMulMat, ir.OpMulMatAdd} {
		base, _ := target.DefaultRules().Lookup(op)
		rule := base
		rule.NPU = func(n *ir.Node) target.Support {
			if dt := n.Args[0].Type.DType; dt.Quantized() && dt != ir.Q4_0 && dt != ir.Q8_0 {
				return target.Support{Reason: "ggml-cann multiplies only q4_0 and q8_0 quantised matmul"}
			}
			return base.NPU(n)
		}
		if err := r.Override(op, rule); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func TestRequant(t *testing.T) {
	// A K-quant model: Q4_K_M from the external reference data, else the
	// Q2_K copy in testdata.
	path := filepath.Join(testref.SharedDir(), "models", "synth-llama256-Q4_K_M.gguf")
	if testref.SharedDir() == "" {
		path = testref.Testdata("synth-llama256-Q2_K.gguf")
	}
	f, m := testmodel.Build(t, path, models.Options{NCtx: 64})
	// The default rules take K-quants (converted at load): nothing to do.
	if _, _, rep, err := Requant(m.Graph, prof(t, "ascend910b"), f, ir.Q8_0); err != nil || len(rep.Tensors) != 0 {
		t.Fatalf("requantised for the default ascend910b: %+v %v", rep, err)
	}
	p, err := ggmlCANNRules(t).Profile("ascend910b")
	if err != nil {
		t.Fatal(err)
	}
	_, before, err := Run(m.Graph, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	rg, src, rep, err := Requant(m.Graph, p, f, ir.Q8_0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Tensors) == 0 || rep.BytesAfter <= 0 {
		t.Fatalf("nothing requantised: %+v", rep)
	}
	for _, x := range rep.Tensors {
		if x.To != "q8_0" || x.From == "q8_0" || x.RelRMSE <= 0 || x.RelRMSE > 0.05 || x.MaxAbs <= 0 {
			t.Errorf("tensor %+v", x)
		}
	}
	g, after, err := Run(rg, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, p, g, after)
	for _, f := range after.Fallbacks {
		if f.Op == ir.OpMulMat && strings.Contains(f.Reason, "quantised matmul") {
			t.Errorf("matmul still falls back after requant: %+v", f)
		}
	}
	if after.NPUNodes <= before.NPUNodes {
		t.Errorf("npu nodes %d -> %d", before.NPUNodes, after.NPUNodes)
	}
	// End to end the numbers move only by the requantisation error.
	b := ir.Bindings{models.SymTokens: 3, models.SymOutputs: 1, models.SymKV: 32}
	in := models.Inputs([]int32{1, 2, 3}, 0, b)
	want := run(t, m.Graph, f, b, in, map[string][]byte{})
	got := run(t, rg, src, b, in, map[string][]byte{})
	d, mx := 0.0, 0.0
	for i := range want {
		d = max(d, math.Abs(float64(got[i]-want[i])))
		mx = max(mx, math.Abs(float64(want[i])))
	}
	if d == 0 || d/mx > 0.05 {
		t.Errorf("requantised logits: max|Δ|/max = %.3g", d/mx)
	}
	t.Logf("requant q4_K/q6_K -> q8_0: %d tensors, worst rel RMSE %.3g, logits max|Δ|/max %.3g", len(rep.Tensors), rep.WorstRelRMSE, d/mx)
	// The 310B has no quantised matmul at all, and its get_rows reads the
	// K-quant embedding table from the layout converted at load: nothing
	// is worth converting.
	if _, _, r, err := Requant(m.Graph, prof(t, "ascend310b"), f, ir.Q8_0); err != nil || len(r.Tensors) != 0 {
		t.Errorf("310B requant: %v %+v", err, r)
	}
	if _, _, _, err := Requant(m.Graph, p, f, ir.Q4_K); err == nil {
		t.Error("requant to q4_K accepted")
	}
}

func TestConvert(t *testing.T) {
	vals := make([]float32, 64)
	for i := range vals {
		vals[i] = float32(i%7) - 3.25
	}
	f32, err := Convert(floatbits.Bytes(vals...), ir.F32, ir.F32)
	if err != nil || string(f32) != string(floatbits.Bytes(vals...)) {
		t.Fatalf("f32 -> f32: %v", err)
	}
	q, err := Convert(floatbits.Bytes(vals...), ir.F32, ir.Q8_0)
	if err != nil || len(q) != 2*34 {
		t.Fatalf("q8_0: %d bytes, %v", len(q), err)
	}
	back, err := Convert(q, ir.Q8_0, ir.F32)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		got := math.Float32frombits(uint32(back[4*i]) | uint32(back[4*i+1])<<8 | uint32(back[4*i+2])<<16 | uint32(back[4*i+3])<<24)
		if math.Abs(float64(got-v)) > 0.03 {
			t.Errorf("element %d: %g -> %g", i, v, got)
		}
	}
	if _, err := Convert([]byte{1, 2, 3}, ir.F32, ir.Q8_0); err == nil {
		t.Error("ragged data accepted")
	}
}

// TestDeviceWeightBytes: the NPU's weights are counted once, in the
// layout their kernels read. On testdata's all-q4_K model every q4_K
// weight is only a matmul's matrix or a get_rows table, so it lives in its
// converted copies alone: 0.625 bytes per weight (int4 values, f16 scale
// and offset per 32) for every matrix an NPU matmul reads, and none of its
// ggml bytes. On q8_0 and q4_0 models (the tied one's table is a q4_0
// get_rows and matmul) the layouts are written over the blocks: ggml's
// bytes. A get_rows from a q4_K or q4_0 table (int4 on the NPU) runs on the
// CPU, with its reason among the fallbacks, and adds nothing.
func TestDeviceWeightBytes(t *testing.T) {
	for _, file := range []string{"synth-llama256-Q4_K.gguf", "synth-llama-Q8_0.gguf", "synth-llama-Q4_0.gguf", "synth-qwen2-tied-Q4_0.gguf"} {
		t.Run(file, func(t *testing.T) {
			_, m := testmodel.Build(t, testref.Testdata(file), models.Options{NCtx: 64})
			g, res, err := Run(m.Graph, prof(t, "ascend910b"), nil)
			if err != nil {
				t.Fatal(err)
			}
			var ggml, conv float64
			counted := map[int]bool{}
			for _, n := range g.Nodes {
				if res.Device[n.ID] != target.NPU {
					continue
				}
				for i, a := range n.Args {
					if a.Op != ir.OpWeight {
						continue
					}
					if !counted[a.ID] && a.Type.DType != ir.Q4_K {
						b, _ := a.Type.Bytes()
						ggml += float64(b)
					}
					counted[a.ID] = true
					if i != 0 {
						continue
					}
					e := float64(a.Type.Shape[0].Val * a.Type.Shape[1].Val)
					switch {
					case n.Op == ir.OpGetRows && (a.Type.DType == ir.Q4_K || a.Type.DType == ir.Q4_0):
						t.Errorf("%s: get_rows from a %s table on the NPU", n.Name, a.Type.DType)
					case a.Type.DType == ir.Q4_K:
						conv += 0.625 * e
					}
				}
			}
			if file != "synth-llama-Q8_0.gguf" && !slices.ContainsFunc(res.Fallbacks, func(f Fallback) bool {
				return f.Op == ir.OpGetRows && strings.Contains(f.Reason, "as llama.cpp's input layer")
			}) {
				t.Errorf("no get_rows kept on the cpu as llama.cpp's input layer among %+v", res.Fallbacks)
			}
			if ggml == 0 || float64(res.GGMLWeightBytes) != ggml || float64(res.ConvertedWeightBytes) != conv ||
				res.DeviceWeightBytes != res.GGMLWeightBytes+res.ConvertedWeightBytes {
				t.Errorf("device weights %d = %d ggml + %d converted; want %g + %g", res.DeviceWeightBytes, res.GGMLWeightBytes, res.ConvertedWeightBytes, ggml, conv)
			}
		})
	}
}
