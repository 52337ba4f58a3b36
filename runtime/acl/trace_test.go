//go:build cann

package acl

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/irtool/irtool/compiler"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testref"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/lower/cann"
	"github.com/irtool/irtool/models"
	"github.com/irtool/irtool/runtime/acl/internal/fakectl"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/runtime/program"
)

// The acceptance test of the binding: a model decodes through the program
// session (runtime/program) on the binding, the binding on the test
// double, and the double's record of every CANN call is checked against
// the lowered program (what `irtool compile --target ascend910b --out`
// writes as program.json):
//
//   - the first step of each shape bucket captures each capturable segment
//     once (aclmdlRICaptureBegin … aclmdlRICaptureEnd) and replays it;
//   - every later step of the bucket is one aclmdlRIExecuteAsync per
//     segment, with no aclnn call and no descriptor made;
//   - inside a capture the launches are the segment's kernels in order, each
//     with its aclnn operator, and the descriptors of the calls carry the
//     program's operands: ACL shape, strides and dtype, at the program's
//     address (region base + offset, one base per region).

// recDevice records the live device allocations of a session, so that the
// test can tell which pool block holds which program region.
type recDevice struct {
	*Device
	mu    sync.Mutex
	live  map[device.Ptr]int64
	order []device.Ptr
}

func (r *recDevice) Malloc(n int64) (device.Ptr, error) {
	p, err := r.Device.Malloc(n)
	if err == nil {
		r.mu.Lock()
		r.live[p] = n
		r.order = append(r.order, p)
		r.mu.Unlock()
	}
	return p, err
}

func (r *recDevice) Free(p device.Ptr) error {
	r.mu.Lock()
	delete(r.live, p)
	r.mu.Unlock()
	return r.Device.Free(p)
}

type launchRec struct {
	name  string
	op    ir.Op
	node  int
	calls []string
}

// tensorRec is an aclCreateTensor record of the double, with the role a
// call gave it.
type tensorRec struct {
	role           string
	id             int64
	dtype          int64
	shape, strides []int64
	offset         int64
	addr           uint64
}

var tensorRoles = map[string]bool{
	"x": true, "gamma": true, "yOut": true, "rstdOut": true, "self": true, "other": true, "out": true,
	"mat2": true, "weight": true, "antiquantScale": true, "y": true, "cos": true, "sin": true, "selfRef": true,
	"src": true, "index": true, "source": true, "query": true, "attentionOut": true, "pseShift": true,
	"attenMask": true, "x1": true, "x2": true, "xOut": true,
}

// traceState accumulates what the double reported across steps.
type traceState struct {
	tensors map[int64]tensorRec
}

func (s *traceState) add(calls []fakectl.Call) {
	for _, c := range calls {
		if c.Fn == "aclCreateTensor" && c.RC == 0 {
			s.tensors[c.Int("tensor")] = tensorRec{id: c.Int("tensor"), dtype: c.Int("dtype"), shape: c.Ints("shape"),
				strides: c.Ints("strides"), offset: c.Int("offset"), addr: c.Uint("addr")}
		}
	}
}

// operands returns the tensors a phase-1 call names.
func (s *traceState) operands(c fakectl.Call) []tensorRec {
	var out []tensorRec
	keys := make([]string, 0, len(c.Args))
	for k := range c.Args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if tensorRoles[k] {
			if t, ok := s.tensors[c.Int(k)]; ok {
				t.role = k
				out = append(out, t)
			}
		}
		if k == "key" || k == "value" {
			for _, id := range c.Ints(k) {
				if t, ok := s.tensors[id]; ok {
					t.role = k
					out = append(out, t)
				}
			}
		}
	}
	return out
}

func trim(shape, strides []int64) ([]int64, []int64) {
	for len(shape) > 1 && shape[0] == 1 {
		shape, strides = shape[1:], strides[1:]
	}
	return shape, strides
}

// outRoles are the argument names aclnn operators write.
var outRoles = map[string]bool{"out": true, "yOut": true, "y": true, "selfRef": true, "attentionOut": true, "xOut": true, "rstdOut": true}

var aclDTypeCodes = map[string]int64{"ACL_FLOAT": 0, "ACL_FLOAT16": 1, "ACL_INT8": 2, "ACL_INT32": 3, "ACL_INT64": 9, "ACL_BF16": 27, "ACL_INT4": 29}

// exact reports whether a recorded tensor is the program's descriptor at
// base: same dtype, shape and strides (leading dims of 1 aside), offset 0.
func exact(t tensorRec, want cann.TensorDesc, base uint64) bool {
	if t.addr != base+uint64(want.Addr.Offset) || t.offset != 0 || t.dtype != aclDTypeCodes[want.ACLDType] {
		return false
	}
	a, as := trim(t.shape, t.strides)
	b, bs := trim(want.Shape, want.Strides)
	return slices.Equal(a, b) && slices.Equal(as, bs)
}

// transformed lists the operands a recipe passes in another form than the
// program's descriptor (same memory, another view): operand index, -1 for
// the output, mapped to 1. They are checked by address only. Key -2 marks
// a quantised weight (read from its repacked copy), key -3 the index of a
// RoPE table operand (read through its rope_cache's full-width tables).
func transformed(k cann.Kernel) map[int]int {
	m := map[int]int{}
	switch k.Op {
	case ir.OpMulMat:
		m[0] = 1 // aᵀ (and the repacked copy of a quantised weight)
		if k.Inputs[0].Ne[2] != k.Inputs[1].Ne[2] {
			m[1], m[-1] = 1, 1 // GQA: b and out split into (heads_kv, group)
		}
		if k.Inputs[0].DType.Quantized() {
			m[-2] = 1 // not in device memory as such: the shadow is read
		}
	case ir.OpSoftMax:
		m[1] = 1 // the mask's first rows
	case ir.OpCont, ir.OpCpy, ir.OpCast:
		if k.Inputs[0].Ne != k.Output.Ne {
			m[-1] = 1 // a reshaping copy writes the source's shape
		}
	case ir.OpAttention:
		m[0], m[1], m[2], m[3], m[-1] = 1, 1, 1, 1, 1 // BSND views; the mask's first rows
	case ir.OpAddRMSNormMul:
		m[-1] = 1 // written as its two slots
	case ir.OpRopeCache:
		m[-1] = 1 // written through strided views
	case ir.OpRopeApply:
		m[-3] = 1 // the table: read through the full-width tables of its rope_cache (checkRope)
	case ir.OpRopeApplySetRows:
		m[-3] = 2
	case ir.OpGetRows:
		if k.Inputs[0].DType == ir.Q8_0 {
			m[0], m[-1] = 1, 1 // gathered as bytes, written as [rows, blocks, 32]
		} else if k.Inputs[0].DType.Quantized() {
			m[-2], m[-1] = 1, 1 // the copy converted at load is read; written as [rows, groups, span]
		}
	}
	return m
}

// checkKernel matches one program kernel against the operands of its
// calls, given region bases.
func checkKernel(k cann.Kernel, ops []tensorRec, bases map[string]uint64) error {
	tf := transformed(k)
	descs := append(slices.Clone(k.Inputs), k.Output)
	for i, want := range descs {
		idx := i
		if i == len(k.Inputs) {
			idx = -1
		}
		if idx == 0 && tf[-2] == 1 {
			continue
		}
		if r, ok := tf[-3]; ok && idx == r {
			continue
		}
		base, ok := bases[want.Addr.Region]
		if !ok {
			return fmt.Errorf("operand %d at %s: region base unknown", idx, want.Addr)
		}
		// The output must be written; an input read, unless it is the
		// output itself (in-place writes such as set_rows).
		inPlace := idx >= 0 && want.Addr == k.Output.Addr
		found := false
		for _, t := range ops {
			if idx == -1 && !outRoles[t.role] || idx >= 0 && !inPlace && outRoles[t.role] {
				continue
			}
			if tf[idx] == 1 {
				found = t.addr == base+uint64(want.Addr.Offset) || (t.addr <= base+uint64(want.Addr.Offset) && t.offset > 0)
			} else {
				found = exact(t, want, base)
			}
			if found {
				break
			}
		}
		if !found {
			return fmt.Errorf("operand %d (%s %v strides %v at %s) is not among the call operands", idx, want.ACLDType, want.Shape, want.Strides, want.Addr)
		}
	}
	return nil
}

// regionBases picks, for each region of the program, the live allocation
// that makes the most operands of the segment's kernels match exactly.
func regionBases(seg cann.Segment, groups [][]tensorRec, live map[device.Ptr]int64) map[string]uint64 {
	bases := map[string]uint64{}
	score := map[string]map[uint64]int{}
	for i, k := range seg.Kernels {
		tf := transformed(k)
		descs := append(slices.Clone(k.Inputs), k.Output)
		for j, want := range descs {
			idx := j
			if j == len(k.Inputs) {
				idx = -1
			}
			if tf[idx] == 1 {
				continue
			}
			if r, ok := tf[-3]; ok && idx == r {
				continue
			}
			for p := range live {
				for _, t := range groups[i] {
					if exact(t, want, uint64(p)) {
						if score[want.Addr.Region] == nil {
							score[want.Addr.Region] = map[uint64]int{}
						}
						score[want.Addr.Region][uint64(p)]++
						break
					}
				}
			}
		}
	}
	for r, m := range score {
		best, n := uint64(0), -1
		for p, c := range m {
			if c > n || (c == n && p < best) {
				best, n = p, c
			}
		}
		bases[r] = best
	}
	return bases
}

func phase1(calls []fakectl.Call) []fakectl.Call {
	var out []fakectl.Call
	for _, c := range calls {
		if strings.HasPrefix(c.Fn, "aclnn") && strings.HasSuffix(c.Fn, "GetWorkspaceSize") {
			out = append(out, c)
		}
	}
	return out
}

// principal is the aclnn operator the program names for a kernel, with
// the one substitution the binding makes: a batched matmul whose batches
// broadcast by repetition (GQA) runs as aclnnMatmul with an inserted dim,
// as ggml-cann does; aclnnBatchMatMul cannot express it.
func principal(k cann.Kernel) string {
	if k.Name == "aclnnBatchMatMul" && k.Inputs[0].Ne[2] != k.Inputs[1].Ne[2] {
		return "aclnnMatmul"
	}
	return k.Name
}

func TestDecodeTraceMatchesProgram(t *testing.T) {
	for _, name := range []string{"stories260K.gguf", "synth-llama-F32.gguf", "synth-llama-F16.gguf", "synth-llama-Q8_0.gguf", "synth-llama-Q4_0.gguf"} {
		t.Run(strings.TrimSuffix(name, ".gguf"), func(t *testing.T) { decodeTrace(t, name, "default") })
	}
	// Without fusion the programs use the plain ops: rms_norm, rope,
	// soft_max, mul_mat of K and V, silu, mul, add, cont.
	t.Run("stories260K/passes=none", func(t *testing.T) { decodeTrace(t, "stories260K.gguf", "none") })
	t.Run("synth-llama-Q8_0/passes=none", func(t *testing.T) { decodeTrace(t, "synth-llama-Q8_0.gguf", "none") })
}

func decodeTrace(t *testing.T, file, pipeline string) {
	f, err := gguf.Open(testref.Testdata(file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const nctx = 256
	m, err := models.Build(f, models.Options{NCtx: nctx, KVType: models.KVF16})
	if err != nil {
		t.Fatal(err)
	}
	d := newDevice(t, Options{PoolBytes: 64 << 20})
	rd := &recDevice{Device: d, live: map[device.Ptr]int64{}}
	var launches []launchRec
	d.onLaunch = func(k *device.KernelLaunch, calls []string) {
		launches = append(launches, launchRec{name: k.Name, op: k.Op, node: k.Node, calls: calls})
	}
	pol := device.DefaultGraphPolicy()
	if !pol.Graphs {
		t.Fatal("graph mode is off by default")
	}
	sess, err := program.NewRunner(m, f, rd, program.Options{Policy: pol, Compile: compiler.Options{Target: "ascend910b", Passes: pipeline}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := sess.Close(); err != nil {
			t.Error(err)
		}
	}()
	st := &traceState{tensors: map[int64]tensorRec{}}

	// Prefill eagerly (the default policy), 30 tokens: decode then starts
	// in the n_kv=32 bucket and crosses into n_kv=64.
	prompt := make([]int32, 30)
	for i := range prompt {
		prompt[i] = int32(1 + i%7)
	}
	if _, err := sess.Step(prompt); err != nil {
		t.Fatal(err)
	}
	pre := trace(t)
	st.add(pre)
	if n := count(pre, "aclmdlRICaptureBegin"); n != 0 {
		t.Errorf("prefill captured %d graphs; prefill runs eagerly by default", n)
	}

	seen := map[string]bool{}
	captures, replays := 0, 0
	for step := 0; step < 6; step++ {
		fake.Reset()
		launches = nil
		pos := sess.Pos()
		b := ir.Bindings{models.SymTokens: 1, models.SymKV: models.KVLen(pos+1, nctx), models.SymOutputs: 1, models.SymKVHead: pos}
		prog, err := sess.Compiler().Program(b)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sess.Step([]int32{int32(2 + step%5)}); err != nil {
			t.Fatalf("decode step %d: %v", step, err)
		}
		calls := trace(t)
		st.add(calls)
		for _, c := range calls {
			if c.RC != 0 {
				t.Fatalf("step %d: %s failed with %d", step, c.Fn, c.RC)
			}
			if c.Fn == "aclmdlRIExecuteAsync" && c.Int("dangling") != 0 {
				t.Errorf("step %d: a replayed graph touches %d freed ranges", step, c.Int("dangling"))
			}
		}
		var eagerKernels []cann.Kernel
		nCap := 0
		for _, s := range prog.Segments {
			if s.Device != "npu" {
				continue
			}
			if s.Capturable {
				nCap++
			} else {
				eagerKernels = append(eagerKernels, s.Kernels...)
			}
		}
		if nCap == 0 {
			t.Fatalf("step %d: bucket %s has no capturable segment", step, prog.Bucket)
		}
		first := !seen[prog.Bucket]
		seen[prog.Bucket] = true
		begins, ends, execs := count(calls, "aclmdlRICaptureBegin"), count(calls, "aclmdlRICaptureEnd"), count(calls, "aclmdlRIExecuteAsync")
		if execs != nCap {
			t.Errorf("step %d (%s): %d aclmdlRIExecuteAsync, want one per capturable segment (%d)", step, prog.Bucket, execs, nCap)
		}
		replays += execs
		if !first {
			if begins != 0 || ends != 0 {
				t.Errorf("step %d (%s): %d captures in a bucket already captured", step, prog.Bucket, begins)
			}
			if n := len(launches); n != len(eagerKernels) {
				t.Errorf("step %d (%s): %d kernel launches, want %d (the eager segments' kernels only)", step, prog.Bucket, n, len(eagerKernels))
			}
			if n := count(calls, "aclCreateTensor"); n != 0 {
				t.Errorf("step %d (%s): %d descriptors made; replays and cached kernels make none", step, prog.Bucket, n)
			}
			if len(eagerKernels) == 0 {
				if p := phase1(calls); len(p) != 0 {
					t.Errorf("step %d (%s): a replay step made %d aclnn calls, want none", step, prog.Bucket, len(p))
				}
			}
			continue
		}
		captures += begins
		if begins != nCap || ends != nCap {
			t.Fatalf("step %d (%s): %d captures begun, %d ended; want one per capturable segment (%d)", step, prog.Bucket, begins, ends, nCap)
		}
		checkCapture(t, step, prog, calls, launches, st, rd.live)
	}
	if len(seen) < 2 {
		t.Errorf("decode visited buckets %v; the test means to cross one bucket boundary", seen)
	}
	t.Logf("%s: %d decode steps over %d buckets: %d captures, %d replays", file, 6, len(seen), captures, replays)
}

// checkCapture checks a capture step: the launches inside each capture
// window are its segment's kernels, with their operators and operands.
func checkCapture(t *testing.T, step int, prog *cann.Program, calls []fakectl.Call, launches []launchRec, st *traceState, live map[device.Ptr]int64) {
	t.Helper()
	// Split the phase-1 calls by launch.
	p1 := phase1(calls)
	var groups [][]fakectl.Call
	next := 0
	for _, l := range launches {
		if next+len(l.calls) > len(p1) {
			t.Fatalf("step %d: the double recorded %d aclnn calls, the launches made more", step, len(p1))
		}
		g := p1[next : next+len(l.calls)]
		next += len(l.calls)
		for i, c := range g {
			if want := l.calls[i] + "GetWorkspaceSize"; c.Fn != want {
				t.Fatalf("step %d: call %d of node %d is %s, the binding made %s", step, i, l.node, c.Fn, want)
			}
		}
		groups = append(groups, g)
	}
	if next != len(p1) {
		t.Fatalf("step %d: %d aclnn calls recorded, %d made by launches", step, len(p1), next)
	}
	// Capture windows by sequence number.
	type window struct{ begin, end int64 }
	var wins []window
	for i, c := range calls {
		if c.Fn == "aclmdlRICaptureBegin" {
			for _, e := range calls[i:] {
				if e.Fn == "aclmdlRICaptureEnd" {
					wins = append(wins, window{c.Seq, e.Seq})
					break
				}
			}
		}
	}
	w := 0
	li := 0
	cosOf := map[uint64]uint64{} // rope_cache output address -> its full-width cos table
	for _, seg := range prog.Segments {
		if seg.Device != "npu" {
			continue
		}
		if !seg.Capturable {
			li += len(seg.Kernels)
			continue
		}
		if w >= len(wins) {
			t.Fatalf("step %d: segment %d has no capture window", step, seg.ID)
		}
		win := wins[w]
		w++
		var segGroups [][]tensorRec
		for i, k := range seg.Kernels {
			if li+i >= len(launches) {
				t.Fatalf("step %d: segment %d: %d kernels launched, the program has %d", step, seg.ID, i, len(seg.Kernels))
			}
			l, g := launches[li+i], groups[li+i]
			if l.node != k.Node || l.name != k.Name || l.op != k.Op {
				t.Fatalf("step %d: segment %d kernel %d: launched node %d %s (%s), program has node %d %s (%s)", step, seg.ID, i, l.node, l.name, l.op, k.Node, k.Name, k.Op)
			}
			for _, c := range g {
				if c.Seq < win.begin || c.Seq > win.end || !capturedRun(calls, c) {
					t.Errorf("step %d: kernel %d (node %d) call %s is outside the capture", step, i, k.Node, c.Fn)
				}
			}
			if !slices.Contains(l.calls, principal(k)) {
				t.Errorf("step %d: node %d (%s): calls %v lack the program's operator %s", step, k.Node, k.Op, l.calls, principal(k))
			}
			var ops []tensorRec
			for _, c := range g {
				ops = append(ops, st.operands(c)...)
			}
			segGroups = append(segGroups, ops)
		}
		bases := regionBases(seg, segGroups, live)
		for i, k := range seg.Kernels {
			if err := checkKernel(k, segGroups[i], bases); err != nil {
				t.Errorf("step %d: segment %d kernel %d (node %d %s %s): %v", step, seg.ID, i, k.Node, k.Name, k.Op, err)
			}
			g := groups[li+i]
			switch k.Op {
			case ir.OpRopeCache:
				for _, c := range g {
					if c.Fn == "aclnnCosGetWorkspaceSize" {
						cosOf[bases[k.Output.Addr.Region]+uint64(k.Output.Addr.Offset)] = st.tensors[c.Int("out")].addr
					}
				}
			case ir.OpRopeApply, ir.OpRopeApplySetRows:
				table := k.Inputs[transformed(k)[-3]]
				want, ok := cosOf[bases[table.Addr.Region]+uint64(table.Addr.Offset)]
				got := uint64(0)
				for _, c := range g {
					if c.Fn == "aclnnRotaryPositionEmbeddingGetWorkspaceSize" {
						got = st.tensors[c.Int("cos")].addr
					}
				}
				if !ok || got != want {
					t.Errorf("step %d: node %d (%s) reads cos at %#x; its table %s was made by no rope_cache of the segment, or with its tables at %#x", step, k.Node, k.Op, got, table.Addr, want)
				}
			}
		}
		li += len(seg.Kernels)
	}
}

// capturedRun reports whether the phase-2 call following phase-1 call c
// went into the capture.
func capturedRun(calls []fakectl.Call, c fakectl.Call) bool {
	op := strings.TrimSuffix(c.Fn, "GetWorkspaceSize")
	exec := c.Int("exec")
	for _, r := range calls {
		if r.Fn == op && r.Int("exec") == exec {
			return r.Bool("captured")
		}
	}
	return false
}
