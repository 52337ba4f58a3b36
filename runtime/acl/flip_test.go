//go:build cann

package acl

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testmodel"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
	"github.com/irtool/irtool/target"
)

// How a quantised model parts from llama.cpp on the emulated CANN path
// when an operator's last bits are not ggml-cpu's, checked rather than
// asserted in prose.
//
// ggml-cpu quantises the f32 activation of every quantised matmul (to
// q8_0 for q4_0/q8_0 weights, to q8_K for K-quants) and stores K and V
// rounded to f16. Those roundings turn a difference in the last bit of an
// f32 value into a whole step of the coarse format whenever the value
// lies that close to a rounding boundary: 2^-11 of an element for f16,
// one q8 step (max|block|/127) for q8_0. The NPU's f32 arithmetic
// (reduction order of aclnnRmsNorm and of the cube's matmuls, its exp)
// differs from ggml-cpu's in such last bits, and no aclnn composition
// reproduces ggml-cpu's order (its dots accumulate per 8-lane FMA chains,
// its norms in double), so such flips happen at a low rate. The test runs
// the "ggml" mode, where the emulator computes every operator with
// ggml-cpu's arithmetic (newDevice; fakeacl/README.md) and the quantised
// matmuls compute ggml-cpu's bits (quantMulMatK for the K-quants,
// quantMulMatQ8 for the q8_0/q8_1-activation types, their mul_mat_id
// twins: ggml's integer block dots and FMA chains), so every quantised
// reference model is bit-identical to the reference executor at every
// step (logged as "all 32 steps within 2e-6 …, bit-identical";
// docs/LOWERING.md has the table). The test keeps checking the mechanism
// of any departure, should an operator stop computing ggml's bits.
//
// The test pins the mechanism down on every quantised reference model
// (the external reference directory's and testdata's; q4_1/q5_1 probed
// as q8_1: q8_0's quants and scale, and its f16 block sum), in the "ggml"
// QuantMatmul mode, against the CPU reference executor (which matches
// llama.cpp to ~1e-9; both with the CPU arithmetic of the llama.cpp build
// that made the run): until the first step whose logits depart from the
// reference by more than 2e-6 of max|logit|, every step agrees within
// 2e-6; at that step the activation of some quantised matmul quantises a
// whole step differently (a q8_0 / q8_K value, or q8_0's f16 block
// scale), or, for a departure below 1e-4, a q8_K block's f32 scale passes
// a difference of its largest value on; and every activation up to that
// one agrees with the reference in f32 within 2e-6 of its max|value|, or
// within depInputTol when it passed one of ggml's f16 roundings (the
// attention over the f16 KV cache, gelu's f16 table) not absorbed by a
// q8_0 quantisation since. A recipe that computed something else would
// show either a departure with no such step, or an activation far from
// the reference before it. The probes must leave the device's numbers
// alone: the probed program's logits equal the plain program's bit for bit.
func TestQuantisedDeparturesAreRoundingFlips(t *testing.T) {
	ran := 0
	for _, path := range referenceModels(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".gguf")
		if !strings.Contains(name, "Q4_0") && !strings.Contains(name, "Q8_0") && !strings.Contains(name, "Q4_1") && !strings.Contains(name, "Q5_") && !strings.Contains(name, "_K") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			name, ref, f, m, ok := openReference(t, path)
			if !ok {
				t.Skip("no llama.cpp run, or an architecture irtool does not build")
			}
			ran++
			departure(t, name, m, f, ref)
		})
	}
	if ran == 0 {
		t.Fatal("no quantised reference model with a llama.cpp run")
	}
}

// depInputTol bounds, relative to the activation's max|value|, how far an
// activation that passed an f16 rounding (probe.f16) may be from the
// reference before the first flip: a few f16 steps (2^-11 each), which is
// what flipped f16 K/V cache entries or f16 probabilities move an
// attention output by. depF32Tol bounds the others: f32 last bits only
// (measured up to 4e-7).
// depLogitTol is the logits' bound until the first departure.
const (
	depInputTol = 2e-3
	depF32Tol   = 2e-6
	depLogitTol = 2e-6
	// depPassedTol bounds a departure no whole step explains, only
	// q8_K scales passing an activation's difference on.
	depPassedTol = 1e-4
)

func (p probe) tol() float64 {
	if p.f16 {
		return depInputTol
	}
	return depF32Tol
}

// departure runs m through the emulated CANN path and the reference
// executor in step and checks the first departure (see
// TestQuantisedDeparturesAreRoundingFlips).
func departure(t *testing.T, name string, m *models.Model, f *gguf.File, ref *testmodel.LlamaRun) {
	t.Helper()
	departureWith(t, name, m, f, ref, nil)
}

// departureWith is departure with the target's rules (nil: the default).
func departureWith(t *testing.T, name string, m *models.Model, f *gguf.File, ref *testmodel.LlamaRun, rules *target.Rules) {
	t.Helper()
	pm, probes := probeActivations(t, m)
	if len(probes) == 0 {
		t.Fatalf("%s: no quantised matmul activation to probe", name)
	}
	// Two sessions (probed and plain) place their own copies of the weights.
	d := newDevice(t, Options{PoolBytes: max(256<<20, 2*modelPool(f, QuantMatmulGGML)), WorkspaceReserve: 16 << 20, QuantMatmul: QuantMatmulGGML, LlamaBuild: ref.Kernels(t).LlamaBuild})
	pol := device.DefaultGraphPolicy()
	pol.Graphs = false
	opts := program.Options{Policy: pol, Compile: compiler.Options{Target: "ascend910b", Rules: rules}, Kernels: ref.Kernels(t)}
	s, cpu := pairedSessions(t, pm, f, d, opts)
	// The model as the other tests run it, on the same device: the probes
	// must not change what the device computes.
	plain, err := program.NewRunner(m, f, d, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Close() })
	nv := int(m.HParams.NVocab)
	gen, feed := ref.Generation.Tokens, ref.Prompt.Tokens
	exact := true // the logits bit-identical so far
	for i := range gen {
		got, want := stepBoth(t, i, s, cpu, feed)
		pr, err := plain.Step(feed)
		if err != nil {
			t.Fatal(err)
		}
		// The probes' extra outputs can move a node between the devices
		// (with an f32 KV cache the wo matmul after a host attention, for
		// instance); both compute ggml's arithmetic ("ggml" mode), so the
		// logits may differ only by the f32 summation order.
		if pl := pr.Logits[len(pr.Logits)-1]; !slices.Equal(pl, got[:nv]) && testmodel.RelErr(got[:nv], pl) > 1e-6 {
			t.Fatalf("%s step %d: the probed program's logits differ from the model's by %.3g: the probes changed the computation", name, i, testmodel.RelErr(got[:nv], pl))
		}
		feed = []int32{gen[i]}
		exact = exact && slices.Equal(got[:nv], want[:nv])
		e := testmodel.RelErr(got[:nv], want[:nv])
		if e <= depLogitTol {
			continue
		}
		// The first departure: find the first activation, in graph
		// order, whose quantisation takes a whole step (a q8 value, or
		// q8_0's f16 scale); a q8_K block whose f32 scale moved passes
		// its activation's difference on, which explains only a small
		// departure.
		off := nv
		var report []string
		passed := ""
		for _, p := range probes {
			g, w := got[off:off+p.size], want[off:off+p.size]
			off += p.size
			de := testmodel.RelErr(g, w)
			kind, flip := p.flip(g, w)
			report = append(report, fmt.Sprintf("%s (%s): %.2e%s", p.name, p.vecDot, de, flip))
			if tol := p.tol(); de > tol {
				t.Fatalf("%s step %d: logits depart by %.3g, and activation %s is %.3g (more than %.0e) from the reference before any %s rounding flips:\n\t%s",
					name, i, e, p.name, de, tol, p.vecDot, strings.Join(report, "\n\t"))
			}
			switch kind {
			case flipStep:
				t.Logf("%s: steps 0..%d within 2e-6 of the reference executor; step %d departs by %.3g at a %s rounding flip of %s%s (activation within %.2e)",
					name, i-1, i, e, p.vecDot, p.name, flip, de)
				return
			case flipScale:
				if passed == "" {
					passed = p.name + flip
				}
			}
		}
		if passed != "" && e <= depPassedTol {
			t.Logf("%s: steps 0..%d within 2e-6 of the reference executor; step %d departs by %.3g, passed on by q8_K's f32 scale at %s",
				name, i-1, i, e, passed)
			return
		}
		t.Fatalf("%s step %d: logits depart by %.3g without any quantised activation rounding a whole step differently:\n\t%s",
			name, i, e, strings.Join(report, "\n\t"))
	}
	same := ""
	if exact {
		same = ", bit-identical"
	}
	t.Logf("%s: all %d steps within 2e-6 of the reference executor%s", name, len(gen), same)
}

// probe is one activation of a quantised matmul, appended to the step's
// output so both paths return it.
type probe struct {
	name   string // activation -> matmul
	node   *ir.Node
	size   int    // values of the last token
	vecDot string // "q8_0" or "q8_K": what ggml-cpu quantises it to
	// f16 is set when the activation passes an f16 rounding of ggml's
	// after the last quantised matmul: an attention over the f16 KV cache
	// (Q and the probabilities rounded to f16) or gelu's f16 table.
	f16 bool
}

// probeActivations returns a copy of m whose output 0 is the logits
// followed by the last token's activation of every quantised mul_mat and
// mul_mat_id (q4_0/q8_0 weights: q8_0 activations; K-quants: q8_K), in
// graph order; the model's NVocab is widened to the whole output so both
// sessions return all of it.
func probeActivations(t *testing.T, m *models.Model) (*models.Model, []probe) {
	t.Helper()
	g := m.Graph.Clone()
	var outIDs *ir.Node
	for _, n := range g.Nodes {
		if n.Op == ir.OpInput && n.Name == models.InputOutIDs {
			outIDs = n
		}
	}
	out := g.Outputs[0]
	seen := map[*ir.Node]bool{}
	var probes []probe
	for _, n := range append([]*ir.Node(nil), g.Nodes...) {
		if (n.Op != ir.OpMulMat && n.Op != ir.OpMulMatID) || len(n.Args) < 2 || seen[n.Args[1]] {
			continue
		}
		var vd string
		switch wt := n.Args[0].Type.DType; {
		case wt == ir.Q4_0 || wt == ir.Q8_0 || wt == ir.Q5_0:
			vd = "q8_0"
		case wt == ir.Q4_1 || wt == ir.Q5_1:
			vd = "q8_1"
		case strings.HasSuffix(strings.ToLower(wt.String()), "_k"):
			vd = "q8_K"
		default:
			continue
		}
		a := n.Args[1]
		seen[a] = true
		p, err := a, error(nil)
		if p.Type.Shape.Rank() == 3 && p.Type.Shape[1].IsConst() {
			if p, err = g.AddTyped(ir.OpReshape, []*ir.Node{p}, nil, ir.T(p.Type.DType, p.Type.Shape[0].Val*p.Type.Shape[1].Val, p.Type.Shape[2])); err != nil {
				t.Fatal(err)
			}
		}
		if p.Type.Shape.Rank() > 2 || p.Type.DType != ir.F32 {
			continue
		}
		if !p.Type.Shape[1].Equal(out.Type.Shape[1]) {
			if outIDs == nil {
				continue
			}
			if p, err = g.Add(ir.OpGetRows, []*ir.Node{p, outIDs}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if !p.Type.Shape[0].IsConst() {
			continue
		}
		if out, err = g.Add(ir.OpConcat, []*ir.Node{out, p}, ir.Attrs{"dim": int64(0)}); err != nil {
			t.Fatal(err)
		}
		probes = append(probes, probe{name: a.Name + " -> " + n.Name, node: p, size: int(p.Type.Shape[0].Val), vecDot: vd, f16: f16Fed(a, map[*ir.Node]bool{})})
	}
	g.Outputs = []*ir.Node{out}
	pm := *m
	pm.Graph = g
	pm.HParams.NVocab = out.Type.Shape[0].Val
	return &pm, probes
}

// f16Fed reports whether n depends, without a q4_0/q8_0 matmul in between
// (whose q8_0 input quantisation absorbs differences smaller than a
// rounding step), on an f16 rounding of ggml's: a matmul with an f16
// operand (the attention's products over the f16 KV cache) or gelu.
func f16Fed(n *ir.Node, seen map[*ir.Node]bool) bool {
	if seen[n] {
		return false
	}
	seen[n] = true
	switch {
	case n.Op == ir.OpGelu || n.Op == ir.OpAttention:
		return true
	case n.Op == ir.OpMulMat || n.Op == ir.OpMulMatID:
		switch wt := n.Args[0].Type.DType; {
		case wt == ir.F16:
			return true
		case wt == ir.Q4_0 || wt == ir.Q8_0 || wt == ir.Q5_0:
			// q8_0 activations: the f16 scale and the integer
			// values absorb differences below a rounding step. (q8_K's
			// f32 scale passes them on: look further.)
			return false
		}
	}
	for _, a := range n.Args {
		if f16Fed(a, seen) {
			return true
		}
	}
	return false
}

// What quantising an activation on both paths showed.
const (
	flipNone  = iota
	flipScale // a q8_K block's f32 scale differs (its largest value does)
	flipStep  // a value, or q8_0's f16 scale, rounds a whole step differently
)

// flip quantises both activations as ggml-cpu does for the matmul and
// describes the first difference.
func (p probe) flip(got, want []float32) (int, string) {
	switch p.vecDot {
	case "q8_0", "q8_1":
		gq, gd := quantQ8_0(got)
		wq, wd := quantQ8_0(want)
		if p.vecDot == "q8_1" {
			gs, ws := q8_1Sums(got, gq), q8_1Sums(want, wq)
			for b := range gs {
				if gs[b] != ws[b] && gd[b] == wd[b] && slices.Equal(gq[b*32:b*32+32], wq[b*32:b*32+32]) {
					return flipStep, fmt.Sprintf(": block %d's f16 sum s %g, reference %g (max|x| %.9g, reference %.9g)", b, gs[b], ws[b], blockMax(got, b, 32), blockMax(want, b, 32))
				}
			}
		}
		for j := range gq {
			if gd[j/32] != wd[j/32] {
				return flipStep, fmt.Sprintf(": block %d's f16 scale %g, reference %g (max|x| %.9g, reference %.9g)", j/32, gd[j/32], wd[j/32], blockMax(got, j/32, 32), blockMax(want, j/32, 32))
			}
			if gq[j] != wq[j] {
				return flipStep, fmt.Sprintf(": value %d quantises to %d, reference %d (x = %.9g, reference %.9g; x/d = %.6f)", j, gq[j], wq[j], got[j], want[j], float64(want[j])/float64(wd[j/32]))
			}
		}
	case "q8_K":
		gq, gd := quantQ8_K(got)
		wq, wd := quantQ8_K(want)
		for j := range gq {
			if gq[j] != wq[j] {
				return flipStep, fmt.Sprintf(": value %d quantises to %d, reference %d (x = %.9g, reference %.9g; x/d = %.6f)", j, gq[j], wq[j], got[j], want[j], float64(want[j])/float64(wd[j/256]))
			}
		}
		for b := range gd {
			if gd[b] != wd[b] {
				return flipScale, fmt.Sprintf(": block %d's f32 scale %g, reference %g (%.2g relative)", b, gd[b], wd[b], math.Abs(float64(gd[b]-wd[b])/float64(wd[b])))
			}
		}
	}
	return flipNone, ""
}

func blockMax(x []float32, b, n int) float32 {
	m := float32(0)
	for _, v := range x[b*n : b*n+n] {
		m = max(m, float32(math.Abs(float64(v))))
	}
	return m
}

// quantQ8_0 is ggml-cpu's AVX2 quantize_row_q8_0 (and the "ggml" mode's
// recipe): per block of 32, d = f16(amax/127), q = round_half_even(x ·
// 127/amax).
func quantQ8_0(x []float32) ([]int8, []float32) {
	nb := len(x) / 32
	qs, d := make([]int8, nb*32), make([]float32, nb)
	for b := range nb {
		amax := blockMax(x, b, 32)
		d[b] = gguf.F16ToF32(gguf.F32ToF16(amax / 127))
		id := float32(0)
		if amax != 0 {
			id = 127 / amax
		}
		for j, v := range x[b*32 : b*32+32] {
			qs[b*32+j] = int8(math.RoundToEven(float64(v * id)))
		}
	}
	return qs, d
}

// q8_1Sums are the f16 block sums of ggml-cpu's AVX2 quantize_row_q8_1 of
// x quantised to qs (quantQ8_0's quants): s = f16(amax/127 · Σq), the
// scale taken before its f16 rounding.
func q8_1Sums(x []float32, qs []int8) []float32 {
	s := make([]float32, len(x)/32)
	for b := range s {
		var sum int32
		for _, q := range qs[b*32 : b*32+32] {
			sum += int32(q)
		}
		s[b] = gguf.F16ToF32(gguf.F32ToF16(blockMax(x, b, 32) / 127 * float32(sum)))
	}
	return s
}

// quantQ8_K is ggml's quantize_row_q8_K_ref: per block of 256, iscale =
// -127/max (max the value of largest magnitude), q = min(127,
// nearest_int(iscale·x)), d = 1/iscale.
func quantQ8_K(x []float32) ([]int8, []float32) {
	nb := len(x) / 256
	qs, d := make([]int8, nb*256), make([]float32, nb)
	for b := range nb {
		var mx, amax float32
		for _, v := range x[b*256 : b*256+256] {
			if a := float32(math.Abs(float64(v))); a > amax {
				amax, mx = a, v
			}
		}
		if amax == 0 {
			continue
		}
		is := -127 / mx
		for j, v := range x[b*256 : b*256+256] {
			qs[b*256+j] = int8(min(127, int32(math.RoundToEven(float64(is*v)))))
		}
		d[b] = 1 / is
	}
	return qs, d
}

// TestF32ModelsWithF32KVMatchReferenceExecutor runs the reference models
// whose only f16 roundings in ggml's arithmetic are the KV cache and the
// attention's (f32 weights, no gelu: checked on the graph) with an f32 KV
// cache through the emulated CANN path and the CPU reference executor in
// step: every step's logits within 2e-6 of max|logit|. With the cache in
// f32 the attention runs on the CPU (its recipe takes f16 K/V), so this
// holds every other recipe (norms, rope, f32 matmuls, activations, adds,
// get_rows, routing) to the f32 arithmetic's last bits, where the
// comparison with llama.cpp can only bound them at 1e-3: the f16 cache and
// the attention's f16 roundings turn those last bits into the 1e-4 of the
// f32 models there.
func TestF32ModelsWithF32KVMatchReferenceExecutor(t *testing.T) {
	ran := 0
	for _, path := range referenceModels(t) {
		name := strings.TrimSuffix(filepath.Base(path), ".gguf")
		t.Run(name, func(t *testing.T) {
			name, ref, f, m, ok := openReference(t, path)
			if !ok {
				t.Skip("no llama.cpp run, or an architecture irtool does not build")
			}
			if why := f16Rounding(m.Graph); why != "" {
				t.Skipf("%s: ggml rounds to f16 outside the attention (%s)", name, why)
			}
			o := m.Options
			o.KVType = models.KVF32
			m, err := models.Build(f, o)
			if err != nil {
				t.Fatal(err)
			}
			ran++
			d := newDevice(t, Options{PoolBytes: 256 << 20, WorkspaceReserve: 16 << 20})
			pol := device.DefaultGraphPolicy()
			pol.Graphs = false
			s, cpu := pairedSessions(t, m, f, d, program.Options{Policy: pol, Compile: compiler.Options{Target: "ascend910b"}, Kernels: ref.Kernels(t)})
			worst := 0.0
			gen, feed := ref.Generation.Tokens, ref.Prompt.Tokens
			for i := range gen {
				got, want := stepBoth(t, i, s, cpu, feed)
				feed = []int32{gen[i]}
				e := testmodel.RelErr(got, want)
				worst = max(worst, e)
				if e > 2e-6 {
					t.Errorf("%s step %d: max|Δ|/max|logit| = %.3g against the reference executor, more than 2e-6", name, i, e)
				}
			}
			t.Logf("%s, f32 KV cache: worst %.2e over %d steps", name, worst, len(gen))
		})
	}
	if ran == 0 {
		t.Fatal("no f32 reference model")
	}
}

// f16Rounding names what, in g, makes ggml round a value to f16 or
// coarser outside the attention over the KV cache: a weight that is not
// f32, or gelu (its f16 table); "" when nothing does.
func f16Rounding(g *ir.Graph) string {
	for _, n := range g.Nodes {
		switch {
		case n.Op == ir.OpGelu:
			return "gelu"
		case n.Op == ir.OpWeight && n.Type.DType != ir.F32:
			return fmt.Sprintf("%s weight %s", n.Type.DType, n.Name)
		}
	}
	return ""
}

// TestRopeApplyOnAHostTable: with an f32 KV cache and the K-quant
// matmuls and table kept on the CPU (ggml-cann's own limits,
// cannLimitedRules), the partition leaves synth-llama256-Q2_K's
// rope_cache on the CPU (cheaper than its copies) while
// rope_apply_set_rows stays on the NPU, so the device rotates with a
// table the CPU made; the binding spreads it into its full-width tables
// itself. The run must hold to the departure rule of
// TestQuantisedDeparturesAreRoundingFlips.
func TestRopeApplyOnAHostTable(t *testing.T) {
	name, ref, f, m, ok := openReference(t, testref.Testdata("synth-llama256-Q2_K.gguf"))
	if !ok {
		t.Skip("no llama.cpp run")
	}
	o := m.Options
	o.KVType = models.KVF32
	m, err := models.Build(f, o)
	if err != nil {
		t.Fatal(err)
	}
	// The target keeps the RoPE tables on the NPU (target.Support.Stay);
	// this test lifts that, so that the host-table path still runs.
	rules := cannLimitedRules(t)
	for _, op := range []ir.Op{ir.OpRopeCache, ir.OpRopeCacheTable} {
		r, _ := rules.Lookup(op)
		npu := r.NPU
		r.NPU = func(n *ir.Node) target.Support {
			s := npu(n)
			s.Stay = ""
			return s
		}
		if err := rules.Override(op, r); err != nil {
			t.Fatal(err)
		}
	}
	departureWith(t, name+" (f32 KV cache)", m, f, ref, rules)
	calls := trace(t)
	if n, r := count(calls, "aclnnCosGetWorkspaceSize"), count(calls, "aclnnRotaryPositionEmbeddingGetWorkspaceSize"); n != 0 || r == 0 {
		t.Errorf("%d aclnnCos and %d aclnnRotaryPositionEmbedding calls: the test wants rope_cache on the CPU and the rotation on the NPU", n, r)
	}
}

// cannLimitedRules are the default rules with ggml-cann's own limits on
// quantised weights: matmuls of q4_0 and q8_0 only, tables of q8_0 only.
func cannLimitedRules(t *testing.T) *target.Rules {
	t.Helper()
	r := target.NewRules()
	for _, op := range []ir.Op{ir.OpMulMat, ir.OpMulMatAdd, ir.OpMulMatID, ir.OpGetRows} {
		base, _ := target.DefaultRules().Lookup(op)
		rule := base
		rule.NPU = func(n *ir.Node) target.Support {
			dt := n.Args[0].Type.DType
			if dt.Quantized() && dt != ir.Q8_0 && (dt != ir.Q4_0 || op == ir.OpGetRows) {
				return target.Support{Reason: "ggml-cann's quantised types"}
			}
			return base.NPU(n)
		}
		if err := r.Override(op, rule); err != nil {
			t.Fatal(err)
		}
	}
	return r
}
