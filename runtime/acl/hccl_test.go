//go:build cann

package acl

import (
	"math"

	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/irtool/irtool/internal/floatbits"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/device"
)

// TestHcclSelftest runs the emulated libhccl's self-test (built by
// scripts/fakeacl.sh next to the libraries): collectives with ranks as
// threads and as processes, float32 sums in rank order, a capture
// replayed, a mismatch, a missing rank and a dead process.
func TestHcclSelftest(t *testing.T) {
	bin := filepath.Join(filepath.Dir(fakePath), "fakehccl-selftest")
	out, err := exec.Command(bin).CombinedOutput()
	t.Logf("fakehccl-selftest:\n%s", out)
	if err != nil {
		t.Fatalf("fakehccl-selftest: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "FAIL") {
			t.Errorf("%s", line)
		}
	}
}

// hcclRanks opens one Device per rank on devices 0..n-1 and the
// communicators of group "tp" over them (HcclCommInitAll).
func hcclRanks(t *testing.T, n int) ([]*Device, []*Comm) {
	t.Helper()
	fake.Reset()
	fake.Set("device_count", int64(n))
	t.Cleanup(func() { fake.Set("device_count", 1) })
	if err := LoadHCCL(); err != nil {
		t.Fatal(err)
	}
	devs := make([]*Device, n)
	ids := make([]int, n)
	for i := range devs {
		d, err := New(Options{Libraries: fakeLibs, PoolBytes: 8 << 20})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.SetDevice(i); err != nil {
			t.Fatal(err)
		}
		devs[i], ids[i] = d, i
		t.Cleanup(func() {
			if err := d.Close(); err != nil {
				t.Errorf("rank %d: Close: %v", i, err)
			}
		})
	}
	comms, err := HcclCommInitAll("tp", ids)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range comms {
		devs[i].AttachComm(c)
		t.Cleanup(func() {
			devs[i].DetachComms()
			if err := c.Destroy(); err != nil {
				t.Error(err)
			}
		})
	}
	return devs, comms
}

// rankValue is rank r's element i: the order of a float32 sum matters
// (1e8 + 1 - 1e8).
func rankValue(r, i int) float32 {
	v := []float32{1e8, 1, -1e8, 3}[r%4]
	return v * float32(i+1)
}

// TestHcclAllReduceCapturedOnRanks: two ranks, one goroutine and one
// Device each; an all_reduce KernelLaunch goes to HcclAllReduce on the
// stream, eagerly and inside a capture that is replayed twice on new
// inputs; every result is the rank-order float32 sum, on both ranks, bit
// for bit, and no goroutine is left behind.
func TestHcclAllReduceCapturedOnRanks(t *testing.T) {
	before := runtime.NumGoroutine()
	const n, elems = 2, 16
	devs, _ := hcclRanks(t, n)
	want := func(scale float32) []float32 {
		out := make([]float32, elems)
		for i := range out {
			var s float32
			for r := range n {
				s += rankValue(r, i) * scale
			}
			out[i] = s
		}
		return out
	}
	results := make([][][]float32, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[r], errs[r] = allReduceRank(devs[r], r, elems)
		}()
	}
	wg.Wait()
	for r := range n {
		if errs[r] != nil {
			t.Fatalf("rank %d: %v", r, errs[r])
		}
		for k, scale := range []float32{1, 2, 3} {
			got, w := results[r][k], want(scale)
			for i := range w {
				if math.Float32bits(got[i]) != math.Float32bits(w[i]) {
					t.Errorf("rank %d run %d [%d]: %v, want %v (0 + rank 0 + rank 1)", r, k, i, got[i], w[i])
					break
				}
			}
		}
	}
	if count(trace(t), "HcclAllReduce") != 2*n {
		t.Errorf("%d HcclAllReduce calls in the trace, want %d (one eager, one captured per rank)", count(trace(t), "HcclAllReduce"), 2*n)
	}
	waitGoroutines(t, before)
}

// allReduceRank runs rank r's side: eager all-reduce, then a capture of
// it replayed with inputs scaled by 2 and 3.
func allReduceRank(d *Device, r, elems int) ([][]float32, error) {
	runtime.LockOSThread() // the capture ends on the thread that began it
	defer runtime.UnlockOSThread()
	in, err := d.Malloc(int64(4 * elems))
	if err != nil {
		return nil, err
	}
	out, err := d.Malloc(int64(4 * elems))
	if err != nil {
		return nil, err
	}
	s, err := d.CreateStream()
	if err != nil {
		return nil, err
	}
	defer d.DestroyStream(s)
	desc := device.TensorDesc{DType: ir.F32, Ne: [ir.MaxDims]int64{int64(elems), 1, 1, 1}}
	desc.Nb = ir.ContiguousStrides(ir.F32, desc.Ne)
	k := &device.KernelLaunch{Name: "HcclAllReduce", Op: ir.OpAllReduce, Attrs: ir.Attrs{ir.AttrRanks: int64(2)}, Node: 7}
	k.Inputs = []device.TensorDesc{desc}
	k.Inputs[0].Addr = in
	k.Output, k.Output.Addr = desc, out
	load := func(scale float32) error {
		v := make([]float32, elems)
		for i := range v {
			v[i] = rankValue(r, i) * scale
		}
		return d.MemcpyH2D(in, floatbits.Bytes(v...))
	}
	read := func() ([]float32, error) {
		b := make([]byte, 4*elems)
		if err := d.SynchronizeStream(s); err != nil {
			return nil, err
		}
		err := d.MemcpyD2H(b, out)
		return floatbits.Floats(b), err
	}
	var res [][]float32
	if err := load(1); err != nil {
		return nil, err
	}
	if err := d.Launch(s, k); err != nil {
		return nil, err
	}
	v, err := read()
	if err != nil {
		return nil, err
	}
	res = append(res, v)
	if err := d.CaptureBegin(s, device.CaptureThreadLocal); err != nil {
		return nil, err
	}
	if err := d.Launch(s, k); err != nil {
		return nil, err
	}
	g, err := d.CaptureEnd(s)
	if err != nil {
		return nil, err
	}
	defer d.DestroyGraph(g)
	for _, scale := range []float32{2, 3} {
		if err := load(scale); err != nil {
			return nil, err
		}
		if err := d.ExecuteAsync(g, s); err != nil {
			return nil, err
		}
		v, err := read()
		if err != nil {
			return nil, err
		}
		res = append(res, v)
	}
	return res, nil
}

// TestHcclMismatchFailsEveryRank: rank 1 reduces half the elements; both
// ranks fail, naming the call and rank 1, within the timeout.
func TestHcclMismatchFailsEveryRank(t *testing.T) {
	t.Setenv("IRTFAKE_HCCL_TIMEOUT_MS", "5000")
	before := runtime.NumGoroutine()
	devs, comms := hcclRanks(t, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := devs[r]
			buf, err := d.Malloc(64)
			if err != nil {
				errs[r] = err
				return
			}
			count := int64(8)
			if r == 1 {
				count = 4
			}
			errs[r] = d.EnqueueCollective(comms[r], Collective{Op: ir.OpAllReduce, DType: ir.F32, Count: count, Send: buf, Recv: buf}, device.DefaultStream)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err == nil {
			t.Fatalf("rank %d: no error", r)
		}
		msg := err.Error()
		for _, w := range []string{"HcclAllReduce", "rank 1", "mismatch", "HCCL_E_PARA"} {
			if !strings.Contains(msg, w) {
				t.Errorf("rank %d: %q does not say %q", r, msg, w)
			}
		}
	}
	waitGoroutines(t, before)
}

// TestHcclLaunchNeedsAComm: a collective launch without an attached
// communicator of its group is an error naming the op and group.
func TestHcclLaunchNeedsAComm(t *testing.T) {
	d := newDevice(t, Options{})
	k := &device.KernelLaunch{Op: ir.OpAllReduce, Attrs: ir.Attrs{ir.AttrRanks: int64(2), ir.AttrGroup: "pp"}, Node: 3}
	err := d.Launch(device.DefaultStream, k)
	if err == nil || !strings.Contains(err.Error(), `group "pp"`) || !strings.Contains(err.Error(), "all_reduce node 3") {
		t.Fatalf("got %v", err)
	}
}

func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines left behind", n-before)
	}
}
