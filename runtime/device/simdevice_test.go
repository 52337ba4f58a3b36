package device

import (
	"bytes"
	"math/rand"
	"sync"
	"testing"

	"github.com/irtool/irtool/internal/floatbits"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

func TestMemPoolRules(t *testing.T) {
	p := NewMemPool(4096)
	type step struct {
		alloc   int64 // >0: allocate; the offset is remembered under name
		free    string
		name    string
		wantOff int64 // for allocs: expected offset (-1: don't care)
		code    ACLCode
	}
	steps := []step{
		{alloc: 1, name: "a", wantOff: 0},     // rounded to 32
		{alloc: 33, name: "b", wantOff: 64},   // 64-aligned carve, rounded to 64
		{alloc: 100, name: "c", wantOff: 128}, // rounded to 128
		{free: "b"},                           // b goes to the free list
		{alloc: 20, name: "d", wantOff: 64},   // reuses b's 64-byte block
		{alloc: 0, name: "z", code: ACLErrParamInvalid},
		{alloc: 5000, name: "big", code: ACLErrMemoryAllocation},
		{free: "c"},                           // top block: the tail shrinks back
		{alloc: 128, name: "e", wantOff: 128}, // carved again at the same place
		{free: "d"}, {free: "d", code: ACLErrMemoryFree},
	}
	offs := map[string]int64{}
	for i, s := range steps {
		if s.free != "" {
			err := p.Free(offs[s.free])
			if got := ErrorCode(err); got != s.code {
				t.Fatalf("step %d: free %s: code %v, want %v (%v)", i, s.free, got, s.code, err)
			}
			continue
		}
		off, _, err := p.Alloc(s.alloc)
		if got := ErrorCode(err); got != s.code {
			t.Fatalf("step %d: alloc %d: code %v, want %v (%v)", i, s.alloc, got, s.code, err)
		}
		if err != nil {
			continue
		}
		if off%PoolBlockAlign != 0 {
			t.Errorf("step %d: offset %d not %d-aligned", i, off, PoolBlockAlign)
		}
		if s.wantOff >= 0 && off != s.wantOff {
			t.Errorf("step %d: alloc %d at %d, want %d", i, s.alloc, off, s.wantOff)
		}
		offs[s.name] = off
	}
	st := p.Stats()
	if st.LiveBlocks != 2 || st.UsedBytes != 32+128 || st.Reuses != 1 {
		t.Errorf("stats %+v: want 2 live blocks, 160 bytes used, 1 reuse", st)
	}
	for _, n := range []string{"a", "e"} {
		if err := p.Free(offs[n]); err != nil {
			t.Fatal(err)
		}
	}
	if st := p.Stats(); st.LiveBlocks != 0 || st.UsedBytes != 0 || st.HighWater != 0 {
		t.Errorf("after freeing everything: %v", st)
	}
}

func TestMemPoolConcurrent(t *testing.T) {
	p := NewMemPool(1 << 20)
	var wg sync.WaitGroup
	var mu sync.Mutex
	owner := map[int64]int{} // live offset -> goroutine
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(g)))
			var mine []int64
			for i := 0; i < 300; i++ {
				if len(mine) > 0 && r.Intn(2) == 0 {
					k := r.Intn(len(mine))
					off := mine[k]
					mine = append(mine[:k], mine[k+1:]...)
					mu.Lock()
					delete(owner, off)
					mu.Unlock()
					if err := p.Free(off); err != nil {
						t.Error(err)
					}
					continue
				}
				off, _, err := p.Alloc(int64(1 + r.Intn(2000)))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if o, dup := owner[off]; dup {
					t.Errorf("offset %d handed to goroutines %d and %d", off, o, g)
				}
				owner[off] = g
				mu.Unlock()
				mine = append(mine, off)
			}
			for _, off := range mine {
				mu.Lock()
				delete(owner, off)
				mu.Unlock()
				if err := p.Free(off); err != nil {
					t.Error(err)
				}
			}
		}(g)
	}
	wg.Wait()
	if st := p.Stats(); st.LiveBlocks != 0 || st.UsedBytes != 0 {
		t.Errorf("pool not empty after all frees: %v", st)
	}
}

// testSeq is a small kernel sequence on the device:
// out = silu(rms_norm(x) * w + b), x and b [8,4], w [8].
type testSeq struct {
	x, w, b, t1, t2, t3, out Ptr
	launches                 []KernelLaunch
}

const seqRow, seqRows = 8, 4

func f32Desc(p Ptr, ne ...int64) TensorDesc {
	d := TensorDesc{DType: ir.F32, Addr: p, Ne: [4]int64{1, 1, 1, 1}}
	copy(d.Ne[:], ne)
	d.Nb = ir.ContiguousStrides(ir.F32, d.Ne)
	return d
}

func newTestSeq(t testing.TB, d Device) *testSeq {
	t.Helper()
	s := &testSeq{}
	mat := int64(4 * seqRow * seqRows)
	for _, p := range []*Ptr{&s.x, &s.w, &s.b, &s.t1, &s.t2, &s.t3, &s.out} {
		size := mat
		if p == &s.w {
			size = 4 * seqRow
		}
		var err error
		if *p, err = d.Malloc(size); err != nil {
			t.Fatal(err)
		}
	}
	s.relaunch()
	return s
}

// relaunch rebuilds the launches from the current addresses.
func (s *testSeq) relaunch() {
	m := func(p Ptr) TensorDesc { return f32Desc(p, seqRow, seqRows) }
	s.launches = []KernelLaunch{
		{Name: "aclnnRmsNorm", Op: ir.OpRMSNorm, Attrs: ir.Attrs{"eps": 1e-5}, Inputs: []TensorDesc{m(s.x)}, Output: m(s.t1), Node: 1},
		{Name: "aclnnMul", Op: ir.OpMul, Inputs: []TensorDesc{m(s.t1), f32Desc(s.w, seqRow)}, Output: m(s.t2), Node: 2},
		{Name: "aclnnAdd", Op: ir.OpAdd, Inputs: []TensorDesc{m(s.t2), m(s.b)}, Output: m(s.t3), Node: 3},
		{Name: "aclnnSilu", Op: ir.OpSilu, Inputs: []TensorDesc{m(s.t3)}, Output: m(s.out), Node: 4},
	}
}

func (s *testSeq) launch(d Device, st Stream) error {
	for i := range s.launches {
		if err := d.Launch(st, &s.launches[i]); err != nil {
			return err
		}
	}
	return nil
}

// capture records the sequence's kernels on st as a graph (global capture
// mode).
func (s *testSeq) capture(t testing.TB, d Device, st Stream) GraphHandle {
	t.Helper()
	if err := d.CaptureBegin(st, CaptureGlobal); err != nil {
		t.Fatal(err)
	}
	if err := s.launch(d, st); err != nil {
		t.Fatal(err)
	}
	g, err := d.CaptureEnd(st)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// reference computes the sequence on the host with the kernels package.
func seqReference(t testing.TB, x, w, b []float32) []byte {
	t.Helper()
	must := func(tt kernels.Tensor, err error) kernels.Tensor {
		if err != nil {
			t.Fatal(err)
		}
		return tt
	}
	X := must(kernels.FromF32(x, seqRow, seqRows))
	W := must(kernels.FromF32(w, seqRow))
	B := must(kernels.FromF32(b, seqRow, seqRows))
	T1 := must(kernels.NewTensor(X.Type, seqRow, seqRows))
	T2 := must(kernels.NewTensor(X.Type, seqRow, seqRows))
	T3 := must(kernels.NewTensor(X.Type, seqRow, seqRows))
	O := must(kernels.NewTensor(X.Type, seqRow, seqRows))
	for _, err := range []error{kernels.RMSNorm(T1, X, 1e-5), kernels.Mul(T2, T1, W), kernels.Add(T3, T2, B), kernels.Silu(O, T3)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return O.Data
}

func newTestDevice(t testing.TB) *SimDevice {
	t.Helper()
	d, err := NewSimDevice(SimOptions{MemoryBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.SetDevice(0); err != nil {
		t.Fatal(err)
	}
	return d
}

func upload(t testing.TB, d Device, p Ptr, v []float32) {
	t.Helper()
	if err := d.MemcpyH2D(p, floatbits.Bytes(v...)); err != nil {
		t.Fatal(err)
	}
}

func download(t testing.TB, d Device, p Ptr, n int) []byte {
	t.Helper()
	out := make([]byte, n)
	if err := d.MemcpyD2H(out, p); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSimEagerAndReplayMatchHost(t *testing.T) {
	d := newTestDevice(t)
	st, err := d.CreateStream()
	if err != nil {
		t.Fatal(err)
	}
	s := newTestSeq(t, d)
	r := rand.New(rand.NewSource(1))
	x, w, b := floatbits.Rand(r, seqRow*seqRows, 1), floatbits.Rand(r, seqRow, 1), floatbits.Rand(r, seqRow*seqRows, 1)
	upload(t, d, s.x, x)
	upload(t, d, s.w, w)
	upload(t, d, s.b, b)
	want := seqReference(t, x, w, b)
	nbytes := 4 * seqRow * seqRows

	// Eager: launches only enqueue; the result appears at synchronisation.
	if err := s.launch(d, st); err != nil {
		t.Fatal(err)
	}
	if got := download(t, d, s.out, nbytes); bytes.Equal(got, want) {
		t.Fatal("the result exists before the stream was synchronised: launches are not asynchronous")
	}
	if err := d.SynchronizeStream(st); err != nil {
		t.Fatal(err)
	}
	if got := download(t, d, s.out, nbytes); !bytes.Equal(got, want) {
		t.Fatal("eager result differs from the host kernels")
	}

	// Capture: nothing runs; the graph replays the same computation.
	if err := d.MemcpyH2D(s.out, make([]byte, nbytes)); err != nil {
		t.Fatal(err)
	}
	before := d.Stats()
	g := s.capture(t, d, st)
	if err := d.SynchronizeStream(st); err != nil {
		t.Fatal(err)
	}
	if got := download(t, d, s.out, nbytes); !bytes.Equal(got, make([]byte, nbytes)) {
		t.Fatal("captured kernels ran during capture")
	}
	// New input values at the same addresses: the replay sees them.
	x2 := floatbits.Rand(r, seqRow*seqRows, 1)
	upload(t, d, s.x, x2)
	want2 := seqReference(t, x2, w, b)
	for i := 0; i < 3; i++ {
		if err := d.ExecuteAsync(g, st); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.SynchronizeStream(st); err != nil {
		t.Fatal(err)
	}
	if got := download(t, d, s.out, nbytes); !bytes.Equal(got, want2) {
		t.Fatal("replayed result differs from the host kernels")
	}
	delta := d.Stats().Sub(before)
	if delta.KernelLaunches != 4 || delta.KernelsExecuted != 12 || delta.GraphLaunches != 3 || delta.Captures != 1 {
		t.Errorf("counters after 1 capture + 3 replays of 4 kernels: %+v", delta)
	}
	if delta.BytesH2D != int64(nbytes) || delta.BytesD2H != int64(nbytes)*2 {
		t.Errorf("bytes moved: h2d %d d2h %d", delta.BytesH2D, delta.BytesD2H)
	}
	if err := d.DestroyGraph(g); err != nil {
		t.Fatal(err)
	}
	if d.LiveGraphs() != 0 {
		t.Error("graph not destroyed")
	}
}

// A graph holds the addresses it was captured with: once the buffers move,
// replaying it computes on the old bytes, as on hardware.
func TestReplayAfterBuffersMoved(t *testing.T) {
	d := newTestDevice(t)
	st, _ := d.CreateStream()
	s := newTestSeq(t, d)
	r := rand.New(rand.NewSource(2))
	x, w, b := floatbits.Rand(r, seqRow*seqRows, 1), floatbits.Rand(r, seqRow, 1), floatbits.Rand(r, seqRow*seqRows, 1)
	upload(t, d, s.x, x)
	upload(t, d, s.w, w)
	upload(t, d, s.b, b)
	g := s.capture(t, d, st)
	var err error
	// Move x and out: allocate new blocks (the old ones stay allocated, so
	// the new ones cannot land on them), and feed new data there.
	oldOut := s.out
	if s.x, err = d.Malloc(4 * seqRow * seqRows); err != nil {
		t.Fatal(err)
	}
	if s.out, err = d.Malloc(4 * seqRow * seqRows); err != nil {
		t.Fatal(err)
	}
	x2 := floatbits.Rand(r, seqRow*seqRows, 1)
	upload(t, d, s.x, x2)
	if err := d.ExecuteAsync(g, st); err != nil {
		t.Fatal(err)
	}
	if err := d.SynchronizeStream(st); err != nil {
		t.Fatal(err)
	}
	nbytes := 4 * seqRow * seqRows
	want := seqReference(t, x2, w, b)
	if got := download(t, d, s.out, nbytes); bytes.Equal(got, want) {
		t.Fatal("the stale graph computed the right answer at the new address")
	}
	if got := download(t, d, oldOut, nbytes); !bytes.Equal(got, seqReference(t, x, w, b)) {
		t.Fatal("the stale graph did not recompute from the old input at the old output address")
	}
	// Launching again with the new addresses gives the right result.
	s.relaunch()
	if err := s.launch(d, st); err != nil {
		t.Fatal(err)
	}
	if err := d.SynchronizeStream(st); err != nil {
		t.Fatal(err)
	}
	if got := download(t, d, s.out, nbytes); !bytes.Equal(got, want) {
		t.Fatal("eager run at the new addresses is wrong")
	}
}

func TestCaptureRefusals(t *testing.T) {
	host := make([]byte, 64)
	tests := []struct {
		name    string
		mode    CaptureMode
		call    func(d *SimDevice, st Stream, p Ptr) error
		code    ACLCode
		endCode ACLCode // CaptureEnd's code afterwards
	}{
		{"malloc", CaptureGlobal, func(d *SimDevice, _ Stream, _ Ptr) error { _, err := d.Malloc(64); return err }, ACLErrCaptureModeNotSupport, ACLErrStreamCaptureInvalidated},
		{"free", CaptureGlobal, func(d *SimDevice, _ Stream, p Ptr) error { return d.Free(p) }, ACLErrCaptureModeNotSupport, ACLErrStreamCaptureInvalidated},
		{"sync h2d", CaptureGlobal, func(d *SimDevice, _ Stream, p Ptr) error { return d.MemcpyH2D(p, host) }, ACLErrCaptureModeNotSupport, ACLErrStreamCaptureInvalidated},
		{"sync d2h", CaptureThreadLocal, func(d *SimDevice, _ Stream, p Ptr) error { return d.MemcpyD2H(host, p) }, ACLErrCaptureModeNotSupport, ACLErrStreamCaptureInvalidated},
		{"sync stream", CaptureRelaxed, func(d *SimDevice, st Stream, _ Ptr) error { return d.SynchronizeStream(st) }, ACLErrStreamCaptured, ACLErrStreamCaptureInvalidated},
		{"sync device", CaptureGlobal, func(d *SimDevice, _ Stream, _ Ptr) error { return d.SynchronizeDevice() }, ACLErrCaptureModeNotSupport, ACLErrStreamCaptureInvalidated},
		{"pageable async h2d", CaptureRelaxed, func(d *SimDevice, st Stream, p Ptr) error { return d.MemcpyH2DAsync(p, host, st) }, ACLErrCaptureModeNotSupport, ACLErrStreamCaptureInvalidated},
		{"begin twice", CaptureGlobal, func(d *SimDevice, st Stream, _ Ptr) error { return d.CaptureBegin(st, CaptureGlobal) }, ACLErrStreamCaptured, ACLSuccess},
		{"relaxed malloc", CaptureRelaxed, func(d *SimDevice, _ Stream, _ Ptr) error { _, err := d.Malloc(64); return err }, ACLSuccess, ACLSuccess},
		{"pinned async h2d", CaptureGlobal, func(d *SimDevice, st Stream, p Ptr) error {
			pin, err := d.MallocHostUnchecked(64)
			if err != nil {
				return err
			}
			return d.MemcpyH2DAsync(p, pin, st)
		}, ACLSuccess, ACLSuccess},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := newTestDevice(t)
			st, _ := d.CreateStream()
			p, err := d.Malloc(64)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.CaptureBegin(st, tc.mode); err != nil {
				t.Fatal(err)
			}
			err = tc.call(d, st, p)
			if got := ErrorCode(err); got != tc.code {
				t.Fatalf("code %v, want %v (%v)", got, tc.code, err)
			}
			g, err := d.CaptureEnd(st)
			if got := ErrorCode(err); got != tc.endCode {
				t.Fatalf("CaptureEnd: code %v, want %v (%v)", got, tc.endCode, err)
			}
			if err == nil {
				if err := d.DestroyGraph(g); err != nil {
					t.Fatal(err)
				}
			}
			// After the capture everything is allowed again.
			if _, err := d.Malloc(64); err != nil {
				t.Fatalf("malloc after capture: %v", err)
			}
		})
	}
}

// MallocHostUnchecked is MallocHost for tests that call it while capturing
// (pinned buffers are normally allocated before any capture).
func (d *SimDevice) MallocHostUnchecked(size int64) ([]byte, error) {
	b := make([]byte, size)
	d.pinMu.Lock()
	defer d.pinMu.Unlock()
	d.pinned[uintptrOf(b)] = b
	return b, nil
}

func TestCaptureStateErrors(t *testing.T) {
	d := newTestDevice(t)
	st, _ := d.CreateStream()
	if err := d.CaptureBegin(DefaultStream, CaptureGlobal); ErrorCode(err) != ACLErrStreamCaptureImplicit {
		t.Errorf("capture on the default stream: %v", err)
	}
	if _, err := d.CaptureEnd(st); ErrorCode(err) != ACLErrStreamCaptureUnmatched {
		t.Errorf("end without begin: %v", err)
	}
	if err := d.SetDevice(3); ErrorCode(err) != ACLErrInvalidDeviceID {
		t.Errorf("set device 3: %v", err)
	}
	fresh, _ := NewSimDevice(SimOptions{MemoryBytes: 4096})
	if _, err := fresh.Malloc(10); ErrorCode(err) != ACLErrContextNull {
		t.Errorf("malloc before set device: %v", err)
	}
	if err := d.ExecuteAsync(GraphHandle(12345), st); ErrorCode(err) != ACLErrInvalidHandle {
		t.Errorf("execute a bogus graph: %v", err)
	}

	// A queued graph cannot be destroyed until its stream has run it.
	s := newTestSeq(t, d)
	g := s.capture(t, d, st)
	if err := d.ExecuteAsync(g, st); err != nil {
		t.Fatal(err)
	}
	if err := d.DestroyGraph(g); ErrorCode(err) != ACLErrModelRunning {
		t.Errorf("destroy a queued graph: %v", err)
	}
	if err := d.SynchronizeStream(st); err != nil {
		t.Fatal(err)
	}
	if err := d.DestroyGraph(g); err != nil {
		t.Errorf("destroy after sync: %v", err)
	}
	if err := d.ExecuteAsync(g, st); ErrorCode(err) != ACLErrInvalidHandle {
		t.Errorf("execute a destroyed graph: %v", err)
	}
}

func TestKernelFaultSurfacesAtSync(t *testing.T) {
	d := newTestDevice(t)
	st, _ := d.CreateStream()
	s := newTestSeq(t, d)
	bad := s.launches[0]
	bad.Output.Addr = Ptr(1<<simAddrShift) + Ptr(1<<20) - 16 // runs past the end of device memory
	if err := d.Launch(st, &bad); err != nil {
		t.Fatalf("a bad address must not fail at launch: %v", err)
	}
	err := d.SynchronizeStream(st)
	if ErrorCode(err) != ACLErrAICoreException {
		t.Fatalf("sync after a faulting kernel: %v", err)
	}
	if err := d.SynchronizeStream(st); err != nil {
		t.Errorf("the faulted work must be dropped: %v", err)
	}
	unknown := s.launches[0]
	unknown.Op = "no_such_op"
	if err := d.Launch(st, &unknown); ErrorCode(err) != ACLErrFeatureNotSupport {
		t.Errorf("launch of an unknown op: %v", err)
	}
}
