package cann

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/partition"
	"github.com/irtool/irtool/passes"
	"github.com/irtool/irtool/planner"
	"github.com/irtool/irtool/runtime/session"
	"github.com/irtool/irtool/target"
)

// lowerStep is the compile driver's bucket step (compiler.Result.Lower),
// which the tests of this package, below the driver, cannot import:
// specialise the partitioned graph pg for b (restricted to its symbols),
// plan it (planStep) and lower it with part's devices (nil: every compute
// node on the NPU).
func lowerStep(pg *ir.Graph, part *partition.Result, prof *target.Profile, b ir.Bindings, opts Options) (*Program, error) {
	b, err := b.For(pg)
	if err != nil {
		return nil, err
	}
	sg, err := pg.Specialize(b)
	if err != nil {
		return nil, err
	}
	plan, err := planStep(sg, prof)
	if err != nil {
		return nil, err
	}
	if part != nil {
		opts.Devices = part.Device
	}
	opts.Bindings = b
	return Lower(sg, plan, prof, opts)
}

// planStep plans a static graph as the bucket step does, with the
// cheapest strategy to keep the tests quick (any valid plan serves).
func planStep(g *ir.Graph, prof *target.Profile) (*planner.MemoryPlan, error) {
	opts := planner.MemoryOptions{Strategy: planner.StrategyGreedySize, Align: prof.Align, Deterministic: true, Policy: planner.CPUPolicy()}
	if prof.HasNPU() {
		opts.Policy, opts.Workspace = planner.NPUPolicy(), prof.Workspace
	}
	return planner.PlanMemory(g, opts)
}

// pipeline compiles one model for one target and caches a program per
// binding, as a runtime caches per bucket.
type pipeline struct {
	t     testing.TB
	prof  *target.Profile
	m     *models.Model
	pg    *ir.Graph
	part  *partition.Result
	progs map[string]*Program
	opts  Options
}

func newPipeline(t testing.TB, m *models.Model, prof *target.Profile) *pipeline {
	t.Helper()
	return newGraphPipeline(t, m, m.Graph, prof)
}

// newGraphPipeline compiles g, a graph of m's step (after passes, say).
func newGraphPipeline(t testing.TB, m *models.Model, g *ir.Graph, prof *target.Profile) *pipeline {
	t.Helper()
	pg, part, err := partition.Run(g, prof, nil)
	if err != nil {
		t.Fatalf("%s: %v", prof.Name, err)
	}
	return &pipeline{t: t, prof: prof, m: m, pg: pg, part: part, progs: map[string]*Program{}}
}

func (p *pipeline) program(b ir.Bindings) *Program {
	p.t.Helper()
	key := b.String()
	if prog, ok := p.progs[key]; ok {
		return prog
	}
	prog, err := lowerStep(p.pg, p.part, p.prof, b, p.opts)
	if err != nil {
		p.t.Fatalf("%s: %v", p.prof.Name, err)
	}
	p.progs[key] = prog
	return prog
}

// step runs one step of tokens at pos through a program and returns the
// last row of logits.
func (p *pipeline) step(h *hostRuntime, s *session.Session, tokens []int32, pos int64) []float32 {
	p.t.Helper()
	b := s.Bindings(pos, int64(len(tokens)), 1)
	prog := p.program(b)
	out, ne, err := h.run(prog, models.Inputs(tokens, pos, b))
	if err != nil {
		p.t.Fatalf("%s: pos %d: %v", p.prof.Name, pos, err)
	}
	return out[(ne[1]-1)*ne[0]:]
}

// TestLoweredProgramsGiveReferenceLogits executes every reference model's
// lowered programs for every target, kernel by kernel on the host, and
// checks the logits: bit for bit against the reference executor (a
// session.Session on the unpartitioned graph), and against llama.cpp's
// recorded logits within the foundation tolerances where those exist.
func TestLoweredProgramsGiveReferenceLogits(t *testing.T) {
	for _, path := range testref.Models(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".gguf")
		t.Run(name, func(t *testing.T) {
			var ref *testmodel.LlamaRun
			opts := models.Options{NCtx: 64}
			tokens := []int32{1, 15, 27, 3, 99}
			next := int32(42)
			{
				if data, err := os.ReadFile(filepath.Join(testref.Dir(), "llamacpp", name+".llamacpp.json")); err == nil {
					ref = &testmodel.LlamaRun{}
					if err := json.Unmarshal(data, ref); err != nil {
						t.Fatal(err)
					}
					opts.NCtx = ref.Context.NCtx
					kv, err := models.ParseKVCacheType(ref.Context.TypeK)
					if err != nil {
						t.Fatal(err)
					}
					opts.KVType = kv
					tokens, next = ref.Prompt.Tokens, ref.Decode.Token
				}
			}
			f, m := testmodel.Build(t, path, opts)
			for _, tn := range target.Names() {
				prof, _ := target.Get(tn)
				p := newPipeline(t, m, prof)
				sess, err := session.NewSession(m, f, session.SessionOptions{})
				if err != nil {
					t.Fatal(err)
				}
				h := newHostRuntime(f)
				for step, toks := range [][]int32{tokens, {next}} {
					pos := sess.Pos()
					got := p.step(h, sess, toks, pos)
					want, err := sess.Step(toks)
					if err != nil {
						t.Fatal(err)
					}
					if d := cmp.Diff(want.Logits[len(want.Logits)-1], got); d != "" {
						t.Fatalf("%s step %d: lowered logits differ from the reference executor (-want +got):\n%.600s", tn, step, d)
					}
					if ref != nil {
						r := ref.Prefill.LogitsLast
						if step == 1 {
							r = ref.Decode.Logits
						}
						if e := testmodel.RelErr(got, r); e > testmodel.Tolerance(name) {
							t.Errorf("%s step %d: max|Δ|/max|logit| vs llama.cpp = %.3g > %.0e", tn, step, e, testmodel.Tolerance(name))
						}
					}
				}
				if p.part.NPUNodes > 0 && h.launched[string(target.NPU)] == 0 {
					t.Errorf("%s: no NPU kernel ran", tn)
				}
			}
		})
	}
}

// TestFusedProgramsGiveReferenceLogits lowers graphs after the default
// pass pipeline, whose fused ops (rms_norm_mul, swiglu, attention,
// rope_set_rows, ...) become their aclnn operators, and checks the logits
// against the reference executor on the unfused graph.
func TestFusedProgramsGiveReferenceLogits(t *testing.T) {
	for _, file := range []string{"stories260K.gguf", "synth-llama-Q8_0.gguf", "synth-llama-F16.gguf"} {
		f, m := testmodel.Build(t, testref.Testdata(file), models.Options{NCtx: 64})
		fg, _, err := passes.Run(m.Graph, passes.Default(), passes.Options{})
		if err != nil {
			t.Fatal(err)
		}
		fused := 0
		for _, n := range fg.Nodes {
			if info, _ := ir.Lookup(n.Op); info.Fused {
				fused++
			}
		}
		if fused == 0 {
			t.Fatalf("%s: the default pipeline fused nothing", file)
		}
		for _, tn := range target.Names() {
			prof, _ := target.Get(tn)
			p := newGraphPipeline(t, m, fg, prof)
			sess, err := session.NewSession(m, f, session.SessionOptions{})
			if err != nil {
				t.Fatal(err)
			}
			h := newHostRuntime(f)
			for step, toks := range [][]int32{{1, 15, 27, 3}, {99}, {7}} {
				got := p.step(h, sess, toks, sess.Pos())
				want, err := sess.Step(toks)
				if err != nil {
					t.Fatal(err)
				}
				if e := testmodel.RelErr(got, want.Logits[len(want.Logits)-1]); e > 1e-5 {
					t.Errorf("%s %s step %d: max|Δ|/max|logit| = %.3g", file, tn, step, e)
				}
			}
		}
	}
}

// TestCpyModeLogits runs llama.cpp's own cpy-mode graph through lowered
// programs, one per position (each position is its own bucket), over a
// few decode steps.
func TestCpyModeLogits(t *testing.T) {
	f, m := testmodel.Build(t, testref.Testdata("stories260K.gguf"), models.Options{NCtx: 64, KVWrite: models.KVCpy})
	prof, _ := target.Get("ascend910b")
	p := newPipeline(t, m, prof)
	sess, err := session.NewSession(m, f, session.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h := newHostRuntime(f)
	toks := []int32{1, 400, 13}
	for step := 0; step < 5; step++ {
		got := p.step(h, sess, toks, sess.Pos())
		want, err := sess.Step(toks)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want.Logits[len(want.Logits)-1], got); d != "" {
			t.Fatalf("step %d: (-want +got):\n%.600s", step, d)
		}
		toks = []int32{session.Argmax(got)}
	}
	if len(p.progs) != 5 {
		t.Errorf("cpy mode made %d programs for 5 positions; every position should be its own bucket", len(p.progs))
	}
}

// decodePrograms lowers the decode steps at the given positions of
// stories260K in a KV write mode for the 910B.
func decodePrograms(t *testing.T, kv models.KVWrite, positions ...int64) []*Program {
	t.Helper()
	_, m := testmodel.Build(t, testref.Testdata("stories260K.gguf"), models.Options{NCtx: 64, KVWrite: kv})
	prof, _ := target.Get("ascend910b")
	p := newPipeline(t, m, prof)
	var out []*Program
	for _, pos := range positions {
		b := ir.Bindings{models.SymTokens: 1, models.SymOutputs: 1, models.SymKVHead: pos, models.SymKV: models.KVLen(pos+1, 64)}
		out = append(out, p.program(b))
	}
	return out
}

// TestDecodeAddressesAreReplaySafe is ggml-cann's re-capture problem and its fix. Under
// the decode binding every NPU segment is capturable. With set_rows, the
// programs of two consecutive positions are identical property for property
// (same keys, same fingerprints), so a graph captured at the first replays
// at the second. With cpy, the KV-write kernels (and only they) write to a
// different address every token, so no captured graph would ever match.
func TestDecodeAddressesAreReplaySafe(t *testing.T) {
	check := func(t *testing.T, ps []*Program) {
		for _, p := range ps {
			npu := 0
			for _, s := range p.Segments {
				if s.Device == string(target.NPU) {
					npu++
					if !s.Capturable {
						t.Errorf("%s: NPU segment %d not capturable: %s", p.Bucket, s.ID, s.Blocker)
					}
				}
			}
			if npu == 0 {
				t.Fatalf("%s: no NPU segment", p.Bucket)
			}
		}
	}
	t.Run("set_rows", func(t *testing.T) {
		ps := decodePrograms(t, models.KVSetRows, 5, 6)
		check(t, ps)
		if len(ps[0].Segments) != len(ps[1].Segments) {
			t.Fatalf("segment counts %d vs %d", len(ps[0].Segments), len(ps[1].Segments))
		}
		for i := range ps[0].Segments {
			a, b := &ps[0].Segments[i], &ps[1].Segments[i]
			if ms := Match(a, b); ms != nil {
				t.Errorf("segment %d does not match the next token's: %v", i, ms[0])
			}
			if a.Key != b.Key || a.Fingerprint != b.Fingerprint {
				t.Errorf("segment %d: key %s/%s fingerprint %.8s/%.8s", i, a.Key, b.Key, a.Fingerprint, b.Fingerprint)
			}
		}
		// The write goes through an index input whose address is fixed.
		var writes int
		for _, s := range ps[0].Segments {
			for _, k := range s.Kernels {
				if k.Op == ir.OpSetRows {
					writes++
					if k.Name != "aclnnInplaceIndexCopy" {
						t.Errorf("set_rows lowered to %s", k.Name)
					}
				}
			}
		}
		if writes != 2*5 {
			t.Errorf("%d KV writes, want 10 (K and V of 5 layers)", writes)
		}
	})
	t.Run("cpy", func(t *testing.T) {
		ps := decodePrograms(t, models.KVCpy, 5, 6)
		check(t, ps)
		mismatched := 0
		for i := range ps[0].Segments {
			a, b := &ps[0].Segments[i], &ps[1].Segments[i]
			if a.Key == b.Key {
				t.Errorf("segment %d has the same key %s at two positions", i, a.Key)
			}
			for _, m := range Match(a, b) {
				k := b.Kernels[m.Kernel]
				if k.Op != ir.OpCpy || !strings.Contains(m.What, "output address") {
					t.Errorf("unexpected mismatch %v (op %s)", m, k.Op)
				}
				mismatched++
			}
		}
		if mismatched != 2*5 {
			t.Errorf("%d kernels changed address between tokens, want the 10 KV writes", mismatched)
		}
	})
}

func TestProgramJSONRoundTrip(t *testing.T) {
	f, m := testmodel.Build(t, testref.Testdata("stories260K.gguf"), models.Options{NCtx: 64})
	for _, tn := range []string{"ascend910b", "ascend310b"} {
		prof, _ := target.Get(tn)
		p := newPipeline(t, m, prof)
		b := ir.Bindings{models.SymTokens: 3, models.SymOutputs: 1, models.SymKV: 32}
		prog := p.program(b)
		var buf bytes.Buffer
		if err := prog.Write(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := Read(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(prog, back); d != "" {
			t.Fatalf("%s: round trip changed the program (-want +got):\n%.2000s", tn, d)
		}
		// The decoded program runs and gives the same logits.
		in := models.Inputs([]int32{1, 2, 3}, 0, b)
		want, _, err := newHostRuntime(f).run(prog, in)
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := newHostRuntime(f).run(back, in)
		if err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(want, got) {
			t.Errorf("%s: decoded program gives other logits", tn)
		}
	}
	if _, err := Read(strings.NewReader(`{"version": 99}`)); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Errorf("bad version: %v", err)
	}
	if _, err := Read(strings.NewReader(`{"version":1,"segments":[{"kernels":[{"attrs":{"x":{}}}]}]}`)); err == nil {
		t.Error("attribute without a value was accepted")
	}
}

func TestAttrsRoundTrip(t *testing.T) {
	a := ir.Attrs{"i": int64(-3), "f": 0.1, "nan": math.NaN(), "inf": math.Inf(-1), "b": true, "s": "x y",
		"ints": []int64{1, 2}, "floats": []float64{1.5, math.Inf(1)}, "dim": ir.Padded("n_tokens", 64), "empty": []int64{}}
	enc, err := encodeAttrs(a)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(enc)
	var dec map[string]attrJSON
	if err := json.Unmarshal(raw, &dec); err != nil {
		t.Fatal(err)
	}
	back, err := decodeAttrs(dec)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Equal(back) {
		t.Errorf("attrs %v came back as %v", a, back)
	}
	if _, err := encodeAttrs(ir.Attrs{"bad": struct{}{}}); err == nil {
		t.Error("unsupported attribute type accepted")
	}
}

// TestKernelNames lowers stories260K entirely on the 910B NPU and checks
// that each op becomes the aclnn operator ggml-cann uses for it.
func TestKernelNames(t *testing.T) {
	_, m := testmodel.Build(t, testref.Testdata("stories260K.gguf"), models.Options{NCtx: 64})
	prof, _ := target.Get("ascend910b")
	prog, err := lowerStep(m.Graph, nil, prof, ir.Bindings{models.SymTokens: 1, models.SymOutputs: 1, models.SymKV: 32}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[ir.Op]string{
		ir.OpGetRows: "aclnnGatherV2", ir.OpRMSNorm: "aclnnRmsNorm", ir.OpMul: "aclnnMul", ir.OpAdd: "aclnnAdd",
		ir.OpSilu: "aclnnSilu", ir.OpRope: "aclnnRotaryPositionEmbedding", ir.OpSetRows: "aclnnInplaceIndexCopy",
		ir.OpSoftMax: "aclnnSoftmax", ir.OpCont: "aclnnInplaceCopy",
	}
	seen := map[ir.Op]bool{}
	for _, s := range prog.Segments {
		if s.Device != "npu" {
			t.Fatalf("segment %d on %s", s.ID, s.Device)
		}
		for _, k := range s.Kernels {
			seen[k.Op] = true
			if w, ok := want[k.Op]; ok && k.Name != w {
				t.Errorf("node %d (%s): kernel %s, want %s", k.Node, k.Op, k.Name, w)
			}
			if k.Op == ir.OpMulMat && !strings.HasPrefix(k.Name, "aclnnMm") && k.Name != "aclnnBatchMatMul" && k.Name != "aclnnMatmul" {
				t.Errorf("mul_mat lowered to %s", k.Name)
			}
			if k.Op == ir.OpRMSNorm {
				if len(k.Extra) != 2 || k.Extra[0].Role != "gamma" || k.Extra[1].Role != "rstd" || k.Extra[0].Addr.Region != RegionConsts {
					t.Errorf("rms_norm operands %+v", k.Extra)
				}
			}
			if k.Op == ir.OpSoftMax && (k.WorkspaceBytes == 0 || k.Workspace.Region != RegionArena) {
				t.Errorf("masked softmax has no planned workspace: %+v", k)
			}
		}
	}
	for op := range want {
		if !seen[op] {
			t.Errorf("no %s kernel", op)
		}
	}
	if got := prog.Kernels(); got != m.Graph.NumOps()-countViews(m.Graph) {
		t.Errorf("%d kernels for %d compute nodes: one kernel per node", got, m.Graph.NumOps()-countViews(m.Graph))
	}
	if r := prog.Region(RegionArena); r == nil || r.Bytes == 0 {
		t.Error("no arena")
	}
	for _, w := range prog.Weights {
		if w.Addr.Region != RegionWeights || w.Addr.Offset%prof.Align != 0 {
			t.Errorf("weight %s at %s", w.Name, w.Addr)
		}
	}
}

func countViews(g *ir.Graph) int {
	n := 0
	for _, x := range g.Nodes {
		if info, _ := ir.Lookup(x.Op); info.Kind == ir.KindView && !info.SideEffect {
			n++
		}
	}
	return n
}

// TestDescriptor checks the ACL view of a permuted f16 window, the mapping
// ggml-cann uses (CANN docs, aclCreateTensor and the two-phase aclnn calls).
func TestDescriptor(t *testing.T) {
	// ggml: ne = [8, 32, 4, 1] f16 with nb = [2, 128, 16, 4096].
	d := newDesc(ir.F16, [4]int64{8, 32, 4, 1}, [4]int64{2, 128, 16, 4096}, Addr{Region: "kv", Offset: 256})
	want := TensorDesc{DType: ir.F16, ACLDType: "ACL_FLOAT16", Ne: [4]int64{8, 32, 4, 1}, Nb: [4]int64{2, 128, 16, 4096},
		Shape: []int64{1, 4, 32, 8}, Strides: []int64{2048, 8, 64, 1}, StorageShape: []int64{1 + 3*8 + 31*64 + 7},
		Format: "ND", Addr: Addr{Region: "kv", Offset: 256}}
	if dd := cmp.Diff(want, d); dd != "" {
		t.Errorf("(-want +got):\n%s", dd)
	}
	q := newDesc(ir.Q8_0, [4]int64{64, 16, 1, 1}, [4]int64{34, 68, 1088, 1088}, Addr{})
	if q.ACLDType != "ACL_INT8" || !cmp.Equal(q.Strides, []int64{1024, 1024, 64, 1}) {
		t.Errorf("q8_0 descriptor %+v", q)
	}
}

func TestLowerErrors(t *testing.T) {
	_, m := testmodel.Build(t, testref.Testdata("stories260K.gguf"), models.Options{NCtx: 64})
	b := ir.Bindings{models.SymTokens: 1, models.SymOutputs: 1, models.SymKV: 32}
	sg, err := m.Graph.Specialize(b)
	if err != nil {
		t.Fatal(err)
	}
	p310, _ := target.Get("ascend310b")
	plan, err := planStep(sg, p310)
	if err != nil {
		t.Fatal(err)
	}
	// Lowering unpartitioned: RoPE cannot run on the 310B NPU.
	if _, err := Lower(sg, plan, p310, Options{}); err == nil || !strings.Contains(err.Error(), "rope") || !strings.Contains(err.Error(), "partition") {
		t.Errorf("unsupported node: %v", err)
	}
	// A placement with a cross-device operand and no transfer.
	devs := make([]target.Device, len(sg.Nodes))
	for i := range devs {
		devs[i] = target.NPU
	}
	for _, n := range sg.Nodes {
		if n.Op == ir.OpRope {
			devs[n.ID] = target.CPU
		}
	}
	if _, err := Lower(sg, plan, p310, Options{Devices: devs}); err == nil || !strings.Contains(err.Error(), "transfer is missing") {
		t.Errorf("missing transfer: %v", err)
	}
	if _, err := Lower(sg, plan, p310, Options{Devices: devs[:3]}); err == nil {
		t.Error("short device list accepted")
	}
	if _, err := Lower(sg, plan, p310, Options{KVWrite: "cpy"}); err == nil || !strings.Contains(err.Error(), "built with \"set_rows\"") {
		t.Errorf("KV mode mismatch: %v", err)
	}
	if _, err := Lower(m.Graph, plan, p310, Options{}); err == nil || !strings.Contains(err.Error(), "not static") {
		t.Errorf("symbolic graph: %v", err)
	}
}

// TestCapturePolicy: a prefill program keeps its NPU segments eager unless
// PrefillGraph is set; the 310B never captures.
func TestCapturePolicy(t *testing.T) {
	_, m := testmodel.Build(t, testref.Testdata("stories260K.gguf"), models.Options{NCtx: 64})
	b := ir.Bindings{models.SymTokens: 7, models.SymOutputs: 1, models.SymKV: 32}
	for _, c := range []struct {
		target  string
		prefill bool
		want    bool
		blocker string
	}{
		{"ascend910b", false, false, "prefill"},
		{"ascend910b", true, true, ""},
		{"ascend310b", true, false, "no ACL graph capture"},
	} {
		prof, _ := target.Get(c.target)
		pg, part, err := partition.Run(m.Graph, prof, nil)
		if err != nil {
			t.Fatal(err)
		}
		prog, err := lowerStep(pg, part, prof, b, Options{PrefillGraph: c.prefill})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range prog.Segments {
			if s.Device != "npu" {
				continue
			}
			if s.Capturable != c.want || !strings.Contains(s.Blocker, c.blocker) {
				t.Errorf("%s prefill-graph=%v: segment %d capturable=%v (%s)", c.target, c.prefill, s.ID, s.Capturable, s.Blocker)
			}
		}
	}
}

// FuzzRead: Read never panics on hostile program.json text, and a program
// it accepts writes back to JSON that reads to the same program.
func FuzzRead(f *testing.F) {
	f.Add(`{"version": 1}`)
	f.Add(`{"version":1,"segments":[{"kernels":[{"attrs":{"x":{"i":3},"y":{"f":"NaN"},"z":{"dim":"n_kv*2"}}}]}]}`)
	f.Add(`{"version":1,"regions":[{"name":"arena","bytes":-5}],"segments":[{"kernels":[{"inputs":[{"dtype":"q4_0","ne":[1,2,3,4]}]}]}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		p, err := Read(strings.NewReader(in))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "cann: ") {
				t.Fatalf("error without the package prefix: %v", err)
			}
			return
		}
		var a bytes.Buffer
		if err := p.Write(&a); err != nil {
			return // a value JSON cannot hold (e.g. from an attr decoding) is refused, not a crash
		}
		q, err := Read(bytes.NewReader(a.Bytes()))
		if err != nil {
			t.Fatalf("a written program does not read back: %v\n%s", err, a.String())
		}
		var b bytes.Buffer
		if err := q.Write(&b); err != nil {
			t.Fatal(err)
		}
		if a.String() != b.String() {
			t.Fatalf("write(read(write(p))) != write(p)")
		}
	})
}
