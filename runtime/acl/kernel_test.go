//go:build cann

package acl

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/acl/layout"
	"github.com/irtool/irtool/runtime/device"
)

// rmsLaunch is an rms_norm of 4 rows of 64 with its rstd staging planned.
func rmsLaunch(d *Device, t *testing.T, buf device.Ptr) *device.KernelLaunch {
	return &device.KernelLaunch{Name: "aclnnRmsNorm", Op: ir.OpRMSNorm, Node: 3, Attrs: ir.Attrs{"eps": 1e-5},
		Inputs: []device.TensorDesc{f32(buf, 64, 4)}, Output: f32(buf+1024, 64, 4),
		Workspace: buf + 2048, WorkspaceBytes: 16}
}

func TestLaunchDescriptorsAndCache(t *testing.T) {
	d := newDevice(t, Options{})
	buf := malloc(t, d, 4096)
	k := rmsLaunch(d, t, buf)
	fake.Reset()
	if err := d.Launch(device.DefaultStream, k); err != nil {
		t.Fatal(err)
	}
	calls := trace(t)
	var x, y, gamma, rstd *tensorRec
	st := &traceState{tensors: map[int64]tensorRec{}}
	st.add(calls)
	for _, c := range calls {
		if c.Fn != "aclnnRmsNormGetWorkspaceSize" {
			continue
		}
		if c.Float("epsilon") != float64(float32(1e-5)) && c.Float("epsilon") != 1e-5 {
			t.Errorf("epsilon %g", c.Float("epsilon"))
		}
		for _, r := range []struct {
			key string
			dst **tensorRec
		}{{"x", &x}, {"yOut", &y}, {"gamma", &gamma}, {"rstdOut", &rstd}} {
			tr := st.tensors[c.Int(r.key)]
			*r.dst = &tr
		}
	}
	if x == nil {
		t.Fatalf("no aclnnRmsNorm call: %v", fns(calls))
	}
	// ggml [64, 4, 1, 1] f32 is ACL [1, 1, 4, 64] with strides in elements.
	want := func(name string, got *tensorRec, shape, strides []int64, addr device.Ptr) {
		t.Helper()
		if !equal(got.shape, shape) || !equal(got.strides, strides) || got.addr != uint64(addr) || got.offset != 0 || got.dtype != 0 {
			t.Errorf("%s = %+v, want shape %v strides %v at %#x", name, *got, shape, strides, uint64(addr))
		}
	}
	want("x", x, []int64{1, 1, 4, 64}, []int64{256, 256, 64, 1}, buf)
	want("y", y, []int64{1, 1, 4, 64}, []int64{256, 256, 64, 1}, buf+1024)
	want("rstd", rstd, []int64{1, 1, 4, 1}, []int64{4, 4, 1, 1}, buf+2048)
	if !equal(gamma.shape, []int64{64}) {
		t.Errorf("gamma shape %v, want [64] (ones)", gamma.shape)
	}
	// The ones table is uploaded once, from pinned memory, asynchronously.
	if n := count(calls, "aclrtMemcpyAsync"); n != 1 {
		t.Errorf("%d table uploads, want 1", n)
	}
	if n := count(calls, "aclrtMemcpy"); n != 0 {
		t.Errorf("%d synchronous copies in a launch", n)
	}
	// A second launch of the same kernel makes no descriptor: only the
	// two-phase call.
	fake.Reset()
	if err := d.Launch(device.DefaultStream, k); err != nil {
		t.Fatal(err)
	}
	again := fns(trace(t))
	if len(again) != 2 || again[0] != "aclnnRmsNormGetWorkspaceSize" || again[1] != "aclnnRmsNorm" {
		t.Errorf("relaunch calls %v, want the two phases only", again)
	}
	if c := d.Counters(); c.Kernels != 1 || c.AclnnCalls != 2 {
		t.Errorf("Counters = %+v", c)
	}
	// Another workspace is another kernel.
	k2 := *k
	k2.Workspace += 64
	if err := d.Launch(device.DefaultStream, &k2); err != nil {
		t.Fatal(err)
	}
	if c := d.Counters(); c.Kernels != 2 {
		t.Errorf("%d kernels cached, want 2", c.Kernels)
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestWorkspaceLargerThanPlanned(t *testing.T) {
	for _, reserve := range []int64{0, 1 << 16} {
		t.Run(fmt.Sprintf("reserve=%d", reserve), func(t *testing.T) { workspaceLargerThanPlanned(t, reserve) })
	}
}

func workspaceLargerThanPlanned(t *testing.T, reserve int64) {
	{
		d := newDevice(t, Options{WorkspaceReserve: reserve})
		buf := malloc(t, d, 4096)
		k := rmsLaunch(d, t, buf)
		k.WorkspaceBytes = 16 + 512 // rstd, and 512 B for the operator
		fake.Set("workspace:aclnnRmsNorm", 512)
		if err := d.Launch(device.DefaultStream, k); err != nil {
			t.Fatalf("reserve %d: a workspace that fits the plan: %v", reserve, err)
		}
		var wsAddr uint64
		for _, c := range trace(t) {
			if c.Fn == "aclnnRmsNorm" {
				wsAddr = c.Uint("ws_addr")
				if c.Int("ws_size") != 512 {
					t.Errorf("phase 2 given %d B", c.Int("ws_size"))
				}
			}
		}
		if wsAddr != uint64(k.Workspace)+16 {
			t.Errorf("workspace at %#x, want the planned one after the rstd staging (%#x)", wsAddr, uint64(k.Workspace)+16)
		}
		fake.Reset()
		fake.Set("workspace:aclnnRmsNorm", 4096)
		err := d.Launch(device.DefaultStream, k)
		if reserve == 0 {
			var e *Error
			if !errors.As(err, &e) || e.ACL.Call != "aclnnRmsNormGetWorkspaceSize" || !strings.Contains(e.Kernel, "node 3") ||
				!strings.Contains(e.ACL.Msg, "4096 B workspace") || !strings.Contains(e.ACL.Msg, "512 B") {
				t.Errorf("a workspace larger than planned: %v", err)
			}
			for _, c := range trace(t) {
				if c.Fn == "aclnnRmsNorm" || c.Fn == "aclrtMalloc" {
					t.Errorf("after the workspace error the binding called %s", c.Fn)
				}
			}
		} else {
			if err != nil {
				t.Fatalf("reserve %d: %v", reserve, err)
			}
			for _, c := range trace(t) {
				if c.Fn == "aclnnRmsNorm" && (c.Uint("ws_addr") == uint64(k.Workspace)+16 || c.Int("ws_size") != 4096) {
					t.Errorf("an oversized workspace ran at %#x (%d B), not in the stream reserve", c.Uint("ws_addr"), c.Int("ws_size"))
				}
				if c.Fn == "aclrtMalloc" {
					t.Error("the reserve was allocated at launch")
				}
			}
		}
		fake.Reset()
	}
}

// TestCaptureReplayEvict drives the graph cache on the binding: a replay is
// one aclmdlRIExecuteAsync and no launch; eviction destroys the evicted
// graph after synchronising its stream.
func TestCaptureReplayEvict(t *testing.T) {
	d := newDevice(t, Options{})
	buf := malloc(t, d, 1<<16)
	s, err := d.CreateStream()
	if err != nil {
		t.Fatal(err)
	}
	defer d.DestroyStream(s)
	cache, err := device.NewGraphCache(d, device.CacheOptions{Capacity: 1})
	if err != nil {
		t.Fatal(err)
	}
	seq := func(off device.Ptr) []device.KernelLaunch {
		a, b, c := buf+off, buf+off+1024, buf+off+2048
		return []device.KernelLaunch{
			{Name: "aclnnAdd", Op: ir.OpAdd, Node: 1, Inputs: []device.TensorDesc{f32(a, 64, 4), f32(b, 64, 1)}, Output: f32(c, 64, 4)},
			{Name: "aclnnSilu", Op: ir.OpSilu, Node: 2, Inputs: []device.TensorDesc{f32(c, 64, 4)}, Output: f32(a, 64, 4)},
		}
	}
	run := func(ks []device.KernelLaunch) device.Outcome {
		t.Helper()
		props := device.NewGraphProps(ks)
		out, err := cache.Execute(s, props, func(st device.Stream) error {
			for i := range ks {
				if err := d.Launch(st, &ks[i]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.SynchronizeStream(s); err != nil {
			t.Fatal(err)
		}
		return out
	}
	A, B := seq(0), seq(8192)
	fake.Reset()
	if out := run(A); out != device.Captured {
		t.Fatalf("first run: %v", out)
	}
	calls := trace(t)
	want := []string{"aclmdlRICaptureBegin", "aclnnAddGetWorkspaceSize", "aclnnAdd", "aclnnSiluGetWorkspaceSize", "aclnnSilu", "aclmdlRICaptureEnd", "aclmdlRIExecuteAsync", "aclrtSynchronizeStream"}
	if got := fns(calls, "aclmdlRI", "aclnn", "aclrtSynchronize"); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("capture calls:\n got %v\nwant %v", got, want)
	}
	for _, c := range calls {
		if (c.Fn == "aclnnAdd" || c.Fn == "aclnnSilu") && !c.Bool("captured") {
			t.Errorf("%s ran outside the capture", c.Fn)
		}
		if c.Fn == "aclmdlRICaptureEnd" && c.Int("tasks") != 2 {
			t.Errorf("the graph holds %d tasks, want 2", c.Int("tasks"))
		}
	}
	for i := 0; i < 3; i++ {
		fake.Reset()
		if out := run(A); out != device.Replayed {
			t.Fatalf("replay %d: %v", i, out)
		}
		// (aclrtSetDevice appears when the goroutine moved to another OS
		// thread: ACL binds the device per thread.)
		got := fns(trace(t), "aclmdlRI", "aclnn", "aclrtSynchronize", "aclCreate", "aclrtMemcpy")
		if strings.Join(got, " ") != "aclmdlRIExecuteAsync aclrtSynchronizeStream" {
			t.Errorf("replay %d calls %v, want one execute (and the caller's sync)", i, got)
		}
	}
	// B evicts A: A's stream is synchronised, then A destroyed.
	fake.Reset()
	if out := run(B); out != device.Captured {
		t.Fatalf("B: %v", out)
	}
	got := fns(trace(t), "aclmdlRI", "aclrtSynchronize")
	wantB := []string{"aclmdlRICaptureBegin", "aclmdlRICaptureEnd", "aclrtSynchronizeStream", "aclmdlRIDestroy", "aclmdlRIExecuteAsync", "aclrtSynchronizeStream"}
	if strings.Join(got, " ") != strings.Join(wantB, " ") {
		t.Errorf("eviction calls:\n got %v\nwant %v", got, wantB)
	}
	if n := fake.Stat("live_ris"); n != 1 {
		t.Errorf("%d graphs alive after an eviction from a cache of 1", n)
	}
	if st := d.Stats(); st.GraphsDestroyed != 1 || st.Captures != 2 || st.GraphLaunches != 5 {
		t.Errorf("Stats: %d destroyed, %d captures, %d graph launches; want 1, 2, 5", st.GraphsDestroyed, st.Captures, st.GraphLaunches)
	}
	if err := cache.Close(); err != nil {
		t.Fatal(err)
	}
	if n := fake.Stat("live_ris"); n != 0 {
		t.Errorf("%d graphs alive after the cache closed", n)
	}
}

// DestroyGraph synchronises the stream a graph ran on, so a graph queued
// but not waited for is never destroyed while it runs (107037).
func TestDestroySynchronisesFirst(t *testing.T) {
	d := newDevice(t, Options{})
	buf := malloc(t, d, 4096)
	s, err := d.CreateStream()
	if err != nil {
		t.Fatal(err)
	}
	defer d.DestroyStream(s)
	if err := d.CaptureBegin(s, device.CaptureGlobal); err != nil {
		t.Fatal(err)
	}
	k := &device.KernelLaunch{Name: "aclnnSilu", Op: ir.OpSilu, Inputs: []device.TensorDesc{f32(buf, 64)}, Output: f32(buf+256, 64)}
	if err := d.Launch(s, k); err != nil {
		t.Fatal(err)
	}
	g, err := d.CaptureEnd(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.ExecuteAsync(g, s); err != nil {
		t.Fatal(err)
	}
	fake.Reset()
	if err := d.DestroyGraph(g); err != nil {
		t.Fatalf("DestroyGraph of a queued graph: %v", err)
	}
	if got := fns(trace(t)); strings.Join(got, " ") != "aclrtSynchronizeStream aclmdlRIDestroy" {
		t.Errorf("DestroyGraph calls %v", got)
	}
	if err := d.ExecuteAsync(g, s); device.ErrorCode(err) != device.ACLErrInvalidHandle {
		t.Errorf("replay of a destroyed graph: %v", err)
	}
}

// The repacked layouts dequantise to what ggml's blocks do.
func TestRepack(t *testing.T) {
	const K, N = 64, 3
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		t      ir.DType
		block  int
		repack func([]byte, int64, int64) ([]byte, error)
	}{{ir.Q8_0, 34, layout.RepackQ8_0}, {ir.Q4_0, 18, layout.RepackQ4_0}} {
		blocks := make([]byte, N*K/32*tc.block)
		for i := range blocks {
			blocks[i] = byte(rng.IntN(256))
		}
		for b := 0; b < N*K/32; b++ { // sane f16 scales
			binary.LittleEndian.PutUint16(blocks[b*tc.block:], 0x3c00+uint16(rng.IntN(512)))
		}
		want := make([]float32, N*K)
		if err := gguf.Dequantize(gguf.GGMLType(tc.t), blocks, want); err != nil {
			t.Fatal(err)
		}
		packed, err := tc.repack(blocks, K, N)
		if err != nil {
			t.Fatal(err)
		}
		q := layout.QuantBytes(tc.t, N*K)
		for i := 0; i < N*K; i++ {
			var v int
			if tc.t == ir.Q8_0 {
				v = int(int8(packed[i]))
			} else {
				nib := packed[i/2] >> (4 * (i % 2)) & 0xf
				v = int(int8(nib<<4) >> 4)
			}
			scale := gguf.F16ToF32(binary.LittleEndian.Uint16(packed[q+int64(2*(i/32)):]))
			if got := float32(v) * scale; got != want[i] {
				t.Fatalf("%s value %d: repacked %d × %g = %g, ggml %g", tc.t, i, v, scale, got, want[i])
			}
		}
		if _, err := tc.repack(blocks[1:], K, N); err == nil {
			t.Errorf("%s: a short buffer is accepted", tc.t)
		}
	}
}

// A quantised matmul reads a copy of its weight converted at load
// (PlaceWeight); without one, the copy is made with a synchronous
// read-back: refused inside a capture (the capture stays valid), made by
// the first eager launch, reused afterwards.
func TestQuantWeightRepackedOutsideCapture(t *testing.T) {
	d := newDevice(t, Options{})
	const K, N, M = 64, 8, 2
	w := malloc(t, d, N*K/32*34)
	buf := malloc(t, d, 1<<14)
	blocks := make([]byte, N*K/32*34)
	for i := range blocks {
		blocks[i] = byte(i * 7)
	}
	if err := d.MemcpyH2D(w, blocks); err != nil {
		t.Fatal(err)
	}
	k := &device.KernelLaunch{Name: "aclnnWeightQuantBatchMatmulV2", Op: ir.OpMulMat, Node: 9,
		Inputs: []device.TensorDesc{{DType: ir.Q8_0, Ne: [4]int64{K, N, 1, 1}, Nb: [4]int64{34, K / 32 * 34, N * K / 32 * 34, N * K / 32 * 34}, Addr: w},
			f32(buf, K, M)},
		Output: f32(buf+4096, N, M), Workspace: buf + 8192, WorkspaceBytes: 2*M*K + 2*M*N}
	s, err := d.CreateStream()
	if err != nil {
		t.Fatal(err)
	}
	defer d.DestroyStream(s)
	if err := d.CaptureBegin(s, device.CaptureGlobal); err != nil {
		t.Fatal(err)
	}
	if err := d.Launch(s, k); device.ErrorCode(err) != device.ACLErrCaptureModeNotSupport || !strings.Contains(err.Error(), "converted") {
		t.Errorf("first use of a q8_0 weight in a capture: %v", err)
	}
	g, err := d.CaptureEnd(s)
	if err != nil {
		t.Fatalf("the refused launch invalidated the capture: %v", err)
	}
	if err := d.DestroyGraph(g); err != nil {
		t.Fatal(err)
	}
	fake.Reset()
	if err := d.Launch(s, k); err != nil {
		t.Fatal(err)
	}
	calls := trace(t)
	if got := fns(calls, "aclrtMemcpy", "aclnn"); strings.Join(got, " ") != "aclrtMemcpy aclrtMemcpy aclnnCastGetWorkspaceSize aclnnCast aclnnWeightQuantBatchMatmulV2GetWorkspaceSize aclnnWeightQuantBatchMatmulV2 aclnnCastGetWorkspaceSize aclnnCast" {
		t.Errorf("first eager launch: %v", got)
	}
	st := &traceState{tensors: map[int64]tensorRec{}}
	st.add(calls)
	for _, c := range calls {
		if c.Fn == "aclnnWeightQuantBatchMatmulV2GetWorkspaceSize" {
			wt := st.tensors[c.Int("weight")]
			if wt.dtype != 2 || !equal(wt.shape, []int64{K, N}) || !equal(wt.strides, []int64{1, K}) || wt.addr == uint64(w) {
				t.Errorf("weight operand %+v: want the int8 [K, N] transposed view of the repacked copy", wt)
			}
			if sc := st.tensors[c.Int("antiquantScale")]; sc.addr != wt.addr+N*K || !equal(sc.shape, []int64{K / 32, N}) {
				t.Errorf("scales %+v: want f16 [K/32, N] right after the quants", sc)
			}
			if c.Int("antiquantGroupSize") != 32 {
				t.Errorf("group size %d", c.Int("antiquantGroupSize"))
			}
		}
	}
	// Another kernel on the same weight reuses the copy.
	k2 := *k
	k2.Output.Addr += 1024
	fake.Reset()
	if err := d.Launch(s, &k2); err != nil {
		t.Fatal(err)
	}
	if n := count(trace(t), "aclrtMemcpy"); n != 0 {
		t.Errorf("the repacked copy was made again (%d copies)", n)
	}
}

// TestViewsPassAlignedTensorData: CANN wants aclCreateTensor's tensorData
// 32-byte aligned, and the emulator refuses any other address; a kernel
// on views that start 4 and 8 bytes past a boundary (rows of a larger
// buffer) runs, its descriptors carry the boundary and the rest as an
// element offset, and it computes on the right elements. A view that is
// not a whole number of elements past the boundary is refused.
func TestViewsPassAlignedTensorData(t *testing.T) {
	d := newDevice(t, Options{})
	buf := malloc(t, d, 4096)
	const K, M = 8, 2
	x := make([]float32, 1+K*M)
	for i := range x {
		x[i] = float32(i%5) - 1.5
	}
	if err := d.MemcpyH2D(buf, f32Bytes(x...)); err != nil {
		t.Fatal(err)
	}
	k := &device.KernelLaunch{Name: "aclnnRmsNorm", Op: ir.OpRMSNorm, Node: 3, Attrs: ir.Attrs{"eps": 1e-5},
		Inputs: []device.TensorDesc{f32(buf+4, K, M)}, Output: f32(buf+1024+8, K, M),
		Workspace: buf + 2048, WorkspaceBytes: 16}
	fake.Reset()
	if err := d.Launch(device.DefaultStream, k); err != nil {
		t.Fatalf("launch on views at +4 and +8 B: %v", err)
	}
	st := &traceState{tensors: map[int64]tensorRec{}}
	calls := trace(t)
	st.add(calls)
	offsets := map[string]int64{}
	for _, c := range calls {
		if c.Fn != "aclnnRmsNormGetWorkspaceSize" {
			continue
		}
		for _, role := range []string{"x", "yOut"} {
			r := st.tensors[c.Int(role)]
			if r.addr%32 != 0 {
				t.Errorf("%s: tensorData %#x is not 32-byte aligned", role, r.addr)
			}
			offsets[role] = r.offset
		}
	}
	if offsets["x"] != 1 || offsets["yOut"] != 2 {
		t.Errorf("element offsets %v, want x 1 and yOut 2", offsets)
	}
	raw := make([]byte, 4*K*M)
	if err := d.MemcpyD2H(raw, buf+1024+8); err != nil {
		t.Fatal(err)
	}
	for r := 0; r < M; r++ {
		row := x[1+r*K : 1+(r+1)*K]
		ss := float32(0)
		for _, v := range row {
			ss += v * v
		}
		scale := 1 / float32(math.Sqrt(float64(ss/K+1e-5)))
		for i, v := range row {
			got := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(r*K+i):]))
			if math.Abs(float64(got-v*scale)) > 1e-5 {
				t.Fatalf("row %d col %d: %g, want %g", r, i, got, v*scale)
			}
		}
	}
	k2 := *k
	k2.Inputs = []device.TensorDesc{f32(buf+2, K, M)}
	err := d.Launch(device.DefaultStream, &k2)
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(err.Error(), "whole number of elements") {
		t.Errorf("a view 2 B past a boundary: %v, want a refusal", err)
	}
}

// TestMulMatAddRefusesRepeatedBias: aclnnInplaceAdd's other must
// broadcast to selfRef (each dim equal or 1), so the mul_mat_add recipe
// refuses a bias that would cover the product only by repetition, before
// any call, with the node's operator named; a bias of the product's row
// length runs.
func TestMulMatAddRefusesRepeatedBias(t *testing.T) {
	d := newDevice(t, Options{})
	buf := malloc(t, d, 1<<16)
	launch := func(bias device.TensorDesc) error {
		k := &device.KernelLaunch{Name: "aclnnMm", Op: ir.OpMulMatAdd,
			Inputs: []device.TensorDesc{f32(buf, 8, 4), f32(buf+1024, 8, 2), bias}, Output: f32(buf+4096, 4, 2),
			Workspace: buf + 8192, WorkspaceBytes: 4096}
		return d.Launch(device.DefaultStream, k)
	}
	if err := launch(f32(buf+2048, 4, 1)); err != nil {
		t.Fatalf("a (4, 1) bias over a (4, 2) product: %v", err)
	}
	err := launch(f32(buf+2048, 2, 1))
	var e *Error
	if !errors.As(err, &e) || !strings.Contains(err.Error(), "only by repetition") {
		t.Errorf("a (2, 1) bias over a (4, 2) product: %v, want a refusal", err)
	}
}
