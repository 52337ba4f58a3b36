//go:build cann

package acl

import (
	"bytes"
	"errors"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/device"
)

func TestLoadErrors(t *testing.T) {
	if err := load([]string{"/nonexistent/libascendcl.so"}); err == nil || !strings.Contains(err.Error(), "/nonexistent/libascendcl.so") {
		t.Errorf("load of a missing library: %v", err)
	}
	if err := Load([]string{"/other/libascendcl.so"}); err == nil || !strings.Contains(err.Error(), "already loaded") {
		t.Errorf("Load of other libraries after the double: %v", err)
	}
	t.Setenv(EnvLibs, "")
	t.Setenv(EnvToolkit, "")
	if _, err := DefaultLibraries(); err == nil || !strings.Contains(err.Error(), "set_env.sh") {
		t.Errorf("DefaultLibraries without %s: %v", EnvToolkit, err)
	}
	t.Setenv(EnvToolkit, "/usr/local/Ascend/ascend-toolkit/latest")
	libs, err := DefaultLibraries()
	if err != nil || len(libs) != 3 || libs[0] != "/usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so" || !strings.HasSuffix(libs[2], "/libopapi.so") {
		t.Errorf("DefaultLibraries = %v, %v", libs, err)
	}
	t.Setenv(EnvLibs, "/a.so:/b.so")
	if libs, _ := DefaultLibraries(); len(libs) != 2 || libs[1] != "/b.so" {
		t.Errorf("DefaultLibraries with %s = %v", EnvLibs, libs)
	}
	// A directory stands for the three libraries in it (scripts/fakeacl.sh).
	dir := filepath.Dir(fakePath)
	t.Setenv(EnvLibs, dir)
	if libs, err := DefaultLibraries(); err != nil || !slices.Equal(libs, fakeLibs) || len(libs) != 3 {
		t.Errorf("DefaultLibraries with %s=%s: %v, %v", EnvLibs, dir, libs, err)
	}
	t.Setenv(EnvLibs, t.TempDir())
	if _, err := DefaultLibraries(); err == nil || !strings.Contains(err.Error(), "libascendcl.so") {
		t.Errorf("a directory without libascendcl.so: %v", err)
	}
	if !Emulated() {
		t.Error("Emulated() is false with the emulator loaded")
	}
}

func TestSetDeviceAndMemory(t *testing.T) {
	d := newDevice(t, Options{PoolBytes: 8 << 20})
	calls := trace(t)
	var mallocs int
	for _, c := range calls {
		if c.Fn == "aclrtMalloc" {
			mallocs++
			if c.Int("size") != 8<<20 || c.Int("policy") != 0 {
				t.Errorf("pool aclrtMalloc: size %d policy %d, want %d and ACL_MEM_MALLOC_HUGE_FIRST (0)", c.Int("size"), c.Int("policy"), 8<<20)
			}
		}
	}
	// aclrtSetDevice is skipped when this OS thread has the device set
	// already (a thread-local cache, as ggml-cann keeps).
	if mallocs != 1 || count(calls, "aclrtSetDevice") > 1 {
		t.Errorf("SetDevice made %d aclrtMalloc and %d aclrtSetDevice calls, want 1 and at most 1: %v", mallocs, count(calls, "aclrtSetDevice"), fns(calls))
	}

	p := malloc(t, d, 1000)
	q := malloc(t, d, 1000)
	if p%64 != 0 || q%64 != 0 || q-p != 1024 {
		t.Errorf("pool blocks at %#x and %#x: want 64-byte aligned, 32-byte rounded sizes", uint64(p), uint64(q))
	}
	src := bytes.Repeat([]byte("irtool"), 100)
	if err := d.MemcpyH2D(q, src); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(src))
	if err := d.MemcpyD2H(got, q); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Error("device memory did not round-trip")
	}
	free, total, err := d.MemInfo()
	// The two blocks and the table block reserved at SetDevice
	// (Options.ConstBytes, 1 MiB by default).
	if err != nil || total != 8<<20 || free != total-2048-(1<<20) {
		t.Errorf("MemInfo = %d, %d, %v; want %d, %d", free, total, err, (8<<20)-2048-(1<<20), 8<<20)
	}
	if err := d.Free(p); err != nil {
		t.Fatal(err)
	}
	if r := malloc(t, d, 900); r != p {
		t.Errorf("a freed block is not reused: %#x, want %#x", uint64(r), uint64(p))
	}
	if _, err := d.Malloc(1 << 30); device.ErrorCode(err) != device.ACLErrMemoryAllocation {
		t.Errorf("oversized Malloc: %v", err)
	}
	// Copies outside device memory fail with CANN's message.
	err = d.MemcpyH2D(device.Ptr(64), src)
	var e *Error
	if !errors.As(err, &e) || e.ACL.Call != "aclrtMemcpy" || !strings.Contains(e.ACL.Msg, "not inside one device allocation") {
		t.Errorf("copy to a bad address: %v", err)
	}
	if err := d.SetDevice(3); err == nil || device.ErrorCode(err) != device.ACLErrInvalidDeviceID || !strings.Contains(err.Error(), "device 3 does not exist") {
		t.Errorf("SetDevice(3) on a 1-device host: %v", err)
	}

	pinned, err := d.MallocHost(4096)
	if err != nil || len(pinned) != 4096 {
		t.Fatalf("MallocHost: %d bytes, %v", len(pinned), err)
	}
	s, err := d.CreateStream()
	if err != nil {
		t.Fatal(err)
	}
	copy(pinned, src)
	if err := d.MemcpyH2DAsync(p, pinned[:len(src)], s); err != nil {
		t.Fatal(err)
	}
	clear(got)
	if err := d.MemcpyD2HAsync(got, p, s); err != nil {
		t.Fatal(err)
	}
	if err := d.SynchronizeStream(s); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Error("async copies did not round-trip")
	}
	if err := d.FreeHost(pinned); err != nil {
		t.Fatal(err)
	}
	if err := d.FreeHost(got); device.ErrorCode(err) != device.ACLErrMemoryFree {
		t.Errorf("FreeHost of Go memory: %v", err)
	}
	if err := d.DestroyStream(s); err != nil {
		t.Fatal(err)
	}
	if err := d.DestroyStream(s); device.ErrorCode(err) != device.ACLErrInvalidHandle {
		t.Errorf("second DestroyStream: %v", err)
	}
	st := d.Stats()
	if st.BytesH2D != 2*int64(len(src)) || st.BytesD2H != 2*int64(len(src)) || len(st.Pools) != 1 || st.Pools[0].Capacity != 8<<20 {
		t.Errorf("Stats = %+v", st)
	}
}

func TestWithoutSetDevice(t *testing.T) {
	fake.Reset()
	d, err := New(Options{Libraries: fakeLibs})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Malloc(64); device.ErrorCode(err) != device.ACLErrContextNull {
		t.Errorf("Malloc before SetDevice: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Error(err)
	}
}

// f32 returns a contiguous f32 descriptor at p.
func f32(p device.Ptr, ne ...int64) device.TensorDesc {
	var n [4]int64
	for i := range n {
		n[i] = 1
	}
	copy(n[:], ne)
	return device.TensorDesc{DType: ir.F32, Ne: n, Nb: ir.ContiguousStrides(ir.F32, n), Addr: p}
}

func TestCaptureRefusals(t *testing.T) {
	d := newDevice(t, Options{})
	buf := malloc(t, d, 4096)
	s, err := d.CreateStream()
	if err != nil {
		t.Fatal(err)
	}
	defer d.DestroyStream(s)

	if err := d.CaptureBegin(device.DefaultStream, device.CaptureGlobal); device.ErrorCode(err) != device.ACLErrStreamCaptureImplicit {
		t.Errorf("capture of the default stream: %v", err)
	}
	if _, err := d.CaptureEnd(s); device.ErrorCode(err) != device.ACLErrStreamCaptureUnmatched {
		t.Errorf("CaptureEnd without Begin: %v", err)
	}

	// A synchronous copy during a GLOBAL capture is refused (107030) and
	// invalidates the capture (507903 at End).
	if err := d.CaptureBegin(s, device.CaptureGlobal); err != nil {
		t.Fatal(err)
	}
	if err := d.CaptureBegin(s, device.CaptureGlobal); device.ErrorCode(err) != device.ACLErrStreamCaptured {
		t.Errorf("second CaptureBegin: %v", err)
	}
	err = d.MemcpyH2D(buf, make([]byte, 64))
	if device.ErrorCode(err) != device.ACLErrCaptureModeNotSupport || !strings.Contains(err.Error(), "aclrtMemcpy") || !strings.Contains(err.Error(), "captured") {
		t.Errorf("sync copy in a capture: %v", err)
	}
	if _, err := d.Malloc(64); device.ErrorCode(err) != device.ACLErrCaptureModeNotSupport {
		t.Errorf("Malloc in a capture: %v", err)
	}
	if err := d.SynchronizeStream(s); device.ErrorCode(err) != device.ACLErrStreamCaptured {
		t.Errorf("sync of the capturing stream: %v", err)
	}
	if _, err := d.CaptureEnd(s); device.ErrorCode(err) != device.ACLErrStreamCaptureInvalidated {
		t.Errorf("CaptureEnd after refused calls: %v", err)
	}
	if _, err := d.Malloc(64); err != nil {
		t.Errorf("Malloc after the capture ended: %v", err)
	}

	// Pageable memory in an async copy is refused in a capture; pinned is
	// recorded.
	if err := d.CaptureBegin(s, device.CaptureGlobal); err != nil {
		t.Fatal(err)
	}
	if err := d.MemcpyH2DAsync(buf, make([]byte, 64), s); device.ErrorCode(err) != device.ACLErrCaptureModeNotSupport {
		t.Errorf("pageable async copy in a capture: %v", err)
	}
	if _, err := d.CaptureEnd(s); device.ErrorCode(err) != device.ACLErrStreamCaptureInvalidated {
		t.Errorf("CaptureEnd: %v", err)
	}

	// GLOBAL captures end on the thread that began them.
	if err := d.CaptureBegin(s, device.CaptureGlobal); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		goruntime.LockOSThread()
		defer goruntime.UnlockOSThread()
		_, err := d.CaptureEnd(s)
		done <- err
	}()
	if err := <-done; device.ErrorCode(err) != 107038 {
		t.Errorf("CaptureEnd on another thread: %v", err)
	}
	g, err := d.CaptureEnd(s)
	if err != nil {
		t.Fatalf("CaptureEnd on the capturing thread: %v", err)
	}
	if err := d.DestroyGraph(g); err != nil {
		t.Error(err)
	}
}

func TestErrorsCarryCallKernelAndMessage(t *testing.T) {
	d := newDevice(t, Options{})
	a := malloc(t, d, 4096)
	k := &device.KernelLaunch{Name: "aclnnMul", Op: ir.OpMul, Node: 7,
		Inputs: []device.TensorDesc{f32(a, 16, 4), f32(a+256, 16, 4)}, Output: f32(a+512, 16, 4)}
	fake.Fail("aclnnMulGetWorkspaceSize", 1, 161002, "injected: shapes rejected by tiling")
	err := d.Launch(device.DefaultStream, k)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Launch: %v, want *Error", err)
	}
	if e.ACL.Call != "aclnnMulGetWorkspaceSize" || e.ACL.Code != 161002 || e.ACL.Msg != "injected: shapes rejected by tiling" ||
		!strings.Contains(e.Kernel, "aclnnMul") || !strings.Contains(e.Kernel, "node 7") {
		t.Errorf("error = %+v / %+v", e, e.ACL)
	}
	if device.ErrorCode(err) != 161002 {
		t.Errorf("device.ErrorCode = %d", device.ErrorCode(err))
	}
	for _, want := range []string{"aclnnMulGetWorkspaceSize", "node 7", "161002", "ACLNN_ERR_PARAM_INVALID", "injected"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error text %q lacks %q", err, want)
		}
	}
	// The next launch of the same kernel works: nothing is left broken.
	if err := d.Launch(device.DefaultStream, k); err != nil {
		t.Errorf("relaunch after an injected failure: %v", err)
	}
	// Phase 2 failures too.
	fake.Fail("aclnnMul", 1, 361001, "injected: kernel launch failed")
	if err := d.Launch(device.DefaultStream, k); !errors.As(err, &e) || e.ACL.Call != "aclnnMul" || e.ACL.Msg != "injected: kernel launch failed" {
		t.Errorf("phase-2 failure: %v", err)
	}
	// A descriptor CANN rejects.
	bad := *k
	bad.Output = f32(device.Ptr(1<<40), 16, 4)
	if err := d.Launch(device.DefaultStream, &bad); !errors.As(err, &e) || e.ACL.Call != "aclCreateTensor" || !strings.Contains(e.ACL.Msg, "not inside one device allocation") {
		t.Errorf("bad descriptor: %v", err)
	}
	// An op the binding has no recipe for.
	if err := d.Launch(device.DefaultStream, &device.KernelLaunch{Name: "aclnnFoo", Op: "foo", Output: f32(a, 4)}); device.ErrorCode(err) != device.ACLErrFeatureNotSupport {
		t.Errorf("unknown op: %v", err)
	}
}
