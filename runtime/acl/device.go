//go:build cann

package acl

/*
#include <stdlib.h>
#include "binding.h"
*/
import "C"

import (
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
	"github.com/irtool/irtool/runtime/device"
)

// Options configure a Device.
type Options struct {
	// Libraries are the CANN libraries to open (nil: DefaultLibraries).
	Libraries []string
	// PoolBytes is the device memory pre-allocated per device at SetDevice
	// with one aclrtMalloc (default: 90% of the free HBM then).
	PoolBytes int64
	// WorkspaceReserve is scratch reserved per stream (taken from the pool
	// when the stream is created) for aclnn operators whose own workspace
	// does not fit in what the compiler planned for their kernel. 0 makes
	// every such request an error. Streams share nothing, so concurrent
	// sessions on different streams stay independent.
	WorkspaceReserve int64
	// ConstBytes is the pinned host staging kept per device for tables the
	// binding uploads while a kernel is first prepared (RoPE angles), and
	// the device bytes, reserved from the pool at SetDevice, for them and
	// for scratch one kernel leaves to later ones (rope_cache's tables;
	// beyond it, pool blocks) (default 1 MiB, compiler.TableBytes). A table larger than a
	// quarter of it that does not fit gets its own pinned buffer (the
	// RoPE angle table of rope_cache, P positions × head dim floats).
	ConstBytes int64
	// TableBytes is the device block reserved at SetDevice for tables and
	// scratch shared between kernels (0: ConstBytes);
	// compiler.DeviceMemory's tables_bytes for the model.
	TableBytes int64
	// MaxTokens, when set, is the most tokens of one step (the runner's
	// UBatch): rope_cache's tables are kept once per node at that size
	// instead of once per shape.
	MaxTokens int64
	// MaxKernels bounds the cache of prepared kernels (descriptors) per
	// device (default 4096); the least recently used are destroyed.
	MaxKernels int
	// FlashAttention forces the fused attention op through
	// aclnnFusedInferAttentionScoreV2 (ggml-cann's flash-attention path,
	// f16 output) even where the target lowered it to two f16 matmuls
	// around an f32 softmax (its path with flash attention off, and
	// ggml-cpu's arithmetic) or the "ggml" QuantMatmul mode would keep
	// those. Without it the kernel's name, the target's rule
	// (target.FIA), chooses: FIA on Atlas A2.
	FlashAttention bool
	// QuantMatmul chooses the arithmetic of q4_0/q8_0 matmuls:
	// QuantMatmulWQBMM ("wqbmm", the default when empty) or
	// QuantMatmulGGML ("ggml", ggml-cpu's q8_0 activations: each matmul
	// within the f32 summation order of ggml's; docs/LOWERING.md).
	QuantMatmul string
	// TableRoPEAngles makes the RoPE angles of rope_cache one aclnnMul of
	// the positions by a table of freq_scale·base^(-2i/D), instead of
	// ggml's chain (the position times theta_scale once per pair: gathered
	// from a table of the chain precomputed for every position when the
	// kernel carries n_pos, as lowered programs do, else one aclnnMuls per
	// pair on the device). Its angles differ from ggml's in their last
	// bits, which the f16 KV cache and q8 activations can turn into whole
	// rounding steps (docs/LOWERING.md); it needs no n_pos and no table
	// of n_pos rows.
	TableRoPEAngles bool
	// LlamaBuild is the llama.cpp build whose K-quant summation orders
	// the "ggml" QuantMatmul mode reproduces where builds differ (a
	// repacked q4_K, q6_K's block-sum offset; kernels.LlamaBuild): the
	// default 3f545bec, or c392e50 for runs made by older builds.
	LlamaBuild kernels.LlamaBuild
}

// Device implements device.Device on CANN. It is safe for concurrent use;
// like ACL, each stream runs its work in order.
//
// ACL binds the current device to the calling OS thread, so every method
// locks its goroutine to its thread for the duration of the call and sets
// the device on that thread when it differs (cached per thread, as
// ggml-cann does). Between CaptureBegin and CaptureEnd the goroutine stays
// locked to the thread that began the capture: GLOBAL-mode captures must
// end on the thread that began them (error 107038 otherwise).
type Device struct {
	opts Options
	cur  atomic.Int32 // the handle's current device, -1 before SetDevice
	soc  atomic.Value // string: aclrtGetSocName after the first SetDevice

	mu      sync.Mutex
	npus    map[int]*npu
	streams map[device.Stream]*stream
	graphs  map[device.GraphHandle]*graph
	pinned  map[unsafe.Pointer]int64 // MallocHost buffers: base -> size

	apiCalls, launches, captures, graphLaunches, destroyed atomic.Int64
	bytesH2D, bytesD2H, dispatchNS, syncNS, aclnnCalls     atomic.Int64
	convertNS, convertedBytes                              atomic.Int64 // gguf/wqconv conversions of weights
	reserveUses                                            atomic.Int64 // aclnn calls whose workspace came from the stream reserve
	descriptorsMade                                        atomic.Int64
	callsByOp                                              []atomic.Int64 // two-phase calls by IRT_ACLNN_OPS index

	// onLaunch, when set (by tests), sees every successful launch with
	// the aclnn operators it called, in order.
	onLaunch func(k *device.KernelLaunch, calls []string)
}

type npu struct {
	id   int
	base device.Ptr // the one aclrtMalloc of the pool
	pool *device.MemPool

	strict int // streams of this device capturing in GLOBAL/THREAD_LOCAL mode (guarded by Device.mu)

	kmu     sync.Mutex
	kernels *kernelCache

	cmu       sync.Mutex
	stage     unsafe.Pointer // pinned host staging for uploaded tables
	stageSize int64
	stageUsed int64
	ownStages []unsafe.Pointer // pinned buffers of tables larger than the staging
	tblBase   device.Ptr       // the device block tables and shared scratch are carved from (Options.ConstBytes)
	tblSize   int64
	tblUsed   int64
	consts    map[string]*table     // uploaded tables by content key
	tables    map[string]device.Ptr // binding scratch and repacked weights by key
	inPlace   map[device.Ptr]bool   // weights whose converted layout replaced their blocks (PlaceWeight)
	slotBytes map[string]int64      // the bytes of rope_cache's slots (builder.ropeSlot)
}

// table is a constant the binding uploaded from the pinned staging.
type table struct {
	dev  device.Ptr
	host unsafe.Pointer // its pinned source: in the staging, or its own (npu.ownStages)
	size int64
	// resident: an upload ran outside any capture. An upload recorded in a
	// capture runs only when the graph does, so it is repeated by the next
	// preparation outside a capture.
	resident bool
}

type stream struct {
	h            device.Stream
	npu          *npu
	reserve      device.Ptr
	reserveBytes int64
	capturing    bool
	mode         device.CaptureMode
}

type graph struct {
	h    device.GraphHandle
	npu  *npu
	last device.Stream // the stream it last ran on, synchronised before destroy
	ran  bool
}

// New loads the CANN libraries (see Load) and returns a Device with no
// current device: call SetDevice first, as with ACL.
func New(opts Options) (*Device, error) {
	if opts.ConstBytes == 0 {
		opts.ConstBytes = 1 << 20
	}
	if opts.MaxKernels == 0 {
		opts.MaxKernels = 4096
	}
	if opts.PoolBytes < 0 || opts.WorkspaceReserve < 0 || opts.ConstBytes < 0 || opts.MaxKernels < 0 || opts.TableBytes < 0 || opts.MaxTokens < 0 {
		return nil, fmt.Errorf("acl: negative option in %+v", opts)
	}
	if err := checkQuantMatmul(opts.QuantMatmul); err != nil {
		return nil, err
	}
	if err := Load(opts.Libraries); err != nil {
		return nil, err
	}
	d := &Device{opts: opts, npus: map[int]*npu{}, streams: map[device.Stream]*stream{},
		graphs: map[device.GraphHandle]*graph{}, pinned: map[unsafe.Pointer]int64{}, callsByOp: make([]atomic.Int64, C.IRT_NOPS)}
	d.cur.Store(-1)
	return d, nil
}

var _ device.Device = (*Device)(nil)

// enter counts an API call, locks the goroutine to its thread and starts
// the dispatch clock; leave undoes it.
func (d *Device) enter() time.Time {
	d.apiCalls.Add(1)
	goruntime.LockOSThread()
	return time.Now()
}

func (d *Device) leave(t0 time.Time) {
	d.dispatchNS.Add(int64(time.Since(t0)))
	goruntime.UnlockOSThread()
}

// bind makes the handle's current device current on this thread.
func (d *Device) bind(call string) (*npu, error) {
	id := int(d.cur.Load())
	if id < 0 {
		return nil, bindingError(call, "", device.ACLErrContextNull, "no current device: call SetDevice (aclrtSetDevice) first")
	}
	if rc := C.irt_ensure_device(C.int32_t(id)); rc != 0 {
		return nil, newError("aclrtSetDevice", "", int32(rc))
	}
	d.mu.Lock()
	n := d.npus[id]
	d.mu.Unlock()
	return n, nil
}

// SetDevice implements device.Device: aclrtSetDevice, then, the first
// time for this device, the memory pool (one aclrtMalloc with
// ACL_MEM_MALLOC_HUGE_FIRST), the default stream's workspace reserve and
// the pinned staging for tables.
func (d *Device) SetDevice(id int) error {
	defer d.leave(d.enter())
	if rc := C.irt_ensure_device(C.int32_t(id)); rc != 0 {
		return newError("aclrtSetDevice", "", int32(rc))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.npus[id]; ok {
		d.cur.Store(int32(id))
		return nil
	}
	size := d.opts.PoolBytes
	if size == 0 {
		var free, total C.size_t
		if rc := C.irt_aclrtGetMemInfo(&free, &total); rc != 0 {
			return newError("aclrtGetMemInfo", "", int32(rc))
		}
		size = int64(free) / 10 * 9
	}
	if size <= 0 {
		return bindingError("aclrtMalloc", "", device.ACLErrMemoryAllocation, "device %d: no memory for the pool", id)
	}
	var base C.uintptr_t
	if rc := C.irt_aclrtMalloc(&base, C.size_t(size)); rc != 0 {
		return newError("aclrtMalloc", "", int32(rc))
	}
	if name := C.irt_aclrtGetSocName(); name != nil {
		d.soc.Store(C.GoString(name))
	}
	n := &npu{id: id, base: device.Ptr(base), pool: device.NewMemPool(size), kernels: newKernelCache(d.opts.MaxKernels),
		consts: map[string]*table{}, tables: map[string]device.Ptr{}, inPlace: map[device.Ptr]bool{}, slotBytes: map[string]int64{}}
	if d.opts.ConstBytes > 0 {
		var rc C.aclError
		n.stage = C.irt_aclrtMallocHost(C.size_t(d.opts.ConstBytes), &rc)
		if rc != 0 {
			err := newError("aclrtMallocHost", "", int32(rc))
			C.irt_aclrtFree(base)
			return err
		}
		n.stageSize = d.opts.ConstBytes
	}
	tb := d.opts.TableBytes
	if tb == 0 {
		tb = d.opts.ConstBytes
	}
	if tb > 0 {
		off, _, err := n.pool.Alloc(tb)
		if err != nil {
			if n.stage != nil {
				C.irt_aclrtFreeHost(n.stage)
			}
			C.irt_aclrtFree(base)
			return fmt.Errorf("acl: table memory of %d B (Options.TableBytes): %w", tb, err)
		}
		n.tblBase, n.tblSize = n.base+device.Ptr(off), tb
	}
	st := &stream{h: device.DefaultStream, npu: n}
	if err := d.reserveLocked(st); err != nil {
		if n.stage != nil {
			C.irt_aclrtFreeHost(n.stage)
		}
		C.irt_aclrtFree(base)
		return err
	}
	d.npus[id] = n
	d.streams[defaultKey(id)] = st
	d.cur.Store(int32(id))
	return nil
}

// cubeMathType is the aclnn matmul cubeMathType for f32 operands:
// KEEP_DTYPE (0) on Atlas A2/A3 (Ascend910B*, Ascend910_93), whose cube unit
// multiplies float32, so that f32 weights keep ggml's precision;
// ALLOW_FP32_DOWN_PRECISION (1) elsewhere, where KEEP_DTYPE with FLOAT is
// an error (aclnnMatmul reference, cubeMathType).
func (d *Device) cubeMathType() C.int64_t {
	soc, _ := d.soc.Load().(string)
	if strings.HasPrefix(soc, "Ascend910B") || strings.HasPrefix(soc, "Ascend910_93") {
		return 0
	}
	return 1
}

// carve takes size bytes of the device's table block (64-byte aligned),
// else a pool block: tables and shared scratch come from memory reserved
// at SetDevice until it runs out. The caller holds n.cmu.
func (n *npu) carve(size int64) (device.Ptr, error) {
	off := (n.tblUsed + 63) / 64 * 64
	if size > 0 && off+size <= n.tblSize {
		n.tblUsed = off + size
		return n.tblBase + device.Ptr(off), nil
	}
	o, _, err := n.pool.Alloc(size)
	if err != nil {
		return 0, err
	}
	return n.base + device.Ptr(o), nil
}

// defaultKey is the map key of device id's default stream (handle 0).
func defaultKey(id int) device.Stream { return device.Stream(^uint64(id)) }

func (d *Device) reserveLocked(st *stream) error {
	if d.opts.WorkspaceReserve == 0 {
		return nil
	}
	off, _, err := st.npu.pool.Alloc(d.opts.WorkspaceReserve)
	if err != nil {
		return fmt.Errorf("acl: workspace reserve of %d B: %w", d.opts.WorkspaceReserve, err)
	}
	st.reserve, st.reserveBytes = st.npu.base+device.Ptr(off), d.opts.WorkspaceReserve
	return nil
}

// DeviceCount implements device.Device (0 when the call fails).
func (d *Device) DeviceCount() int {
	defer d.leave(d.enter())
	var n C.uint32_t
	if rc := C.irt_aclrtGetDeviceCount(&n); rc != 0 {
		return 0
	}
	return int(n)
}

// stream resolves a handle; DefaultStream is the current device's.
func (d *Device) stream(call string, s device.Stream) (*stream, error) {
	key := s
	if s == device.DefaultStream {
		key = defaultKey(int(d.cur.Load()))
	}
	d.mu.Lock()
	st := d.streams[key]
	d.mu.Unlock()
	if st == nil {
		return nil, bindingError(call, "", device.ACLErrInvalidHandle, "stream %#x is not a stream of this device (destroyed?)", uint64(s))
	}
	return st, nil
}

// CreateStream implements device.Device.
func (d *Device) CreateStream() (device.Stream, error) {
	defer d.leave(d.enter())
	n, err := d.bind("aclrtCreateStream")
	if err != nil {
		return 0, err
	}
	var s C.uintptr_t
	if rc := C.irt_aclrtCreateStream(&s); rc != 0 {
		return 0, newError("aclrtCreateStream", "", int32(rc))
	}
	st := &stream{h: device.Stream(s), npu: n}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.reserveLocked(st); err != nil {
		C.irt_aclrtDestroyStream(s)
		return 0, err
	}
	d.streams[st.h] = st
	return st.h, nil
}

// DestroyStream implements device.Device.
func (d *Device) DestroyStream(s device.Stream) error {
	defer d.leave(d.enter())
	if s == device.DefaultStream {
		return bindingError("aclrtDestroyStream", "", device.ACLErrParamInvalid, "the default stream cannot be destroyed")
	}
	st, err := d.stream("aclrtDestroyStream", s)
	if err != nil {
		return err
	}
	if _, err := d.bind("aclrtDestroyStream"); err != nil {
		return err
	}
	if rc := C.irt_aclrtDestroyStream(C.uintptr_t(s)); rc != 0 {
		return newError("aclrtDestroyStream", "", int32(rc))
	}
	d.mu.Lock()
	delete(d.streams, s)
	for _, g := range d.graphs {
		if g.last == s {
			g.ran = false // the stream's work is over: it no longer exists
		}
	}
	if st.reserve != 0 {
		st.npu.pool.Free(int64(st.reserve - st.npu.base))
	}
	d.mu.Unlock()
	return nil
}

// refuseWhileCapturing refuses an allocation while a stream of n captures
// in a strict mode. aclrtMalloc is not among the calls CANN documents as
// capture-unsafe, but addresses handed out during a capture are the
// pattern upstream had to remove (CANN's single-stream capture rules; ggml-cann's memory pools); the binding refuses
// them like the simulated device, with the capture-mode code.
func (d *Device) refuseWhileCapturing(call string, n *npu) error {
	d.mu.Lock()
	strict := n.strict
	d.mu.Unlock()
	if strict > 0 {
		return bindingError(call, "", device.ACLErrCaptureModeNotSupport,
			"device %d: not allowed while a stream captures in GLOBAL or THREAD_LOCAL mode (allocate before capture)", n.id)
	}
	return nil
}

// Malloc implements device.Device: a block of the current device's pool.
func (d *Device) Malloc(size int64) (device.Ptr, error) {
	defer d.leave(d.enter())
	n, err := d.bind("aclrtMalloc")
	if err != nil {
		return 0, err
	}
	if err := d.refuseWhileCapturing("aclrtMalloc", n); err != nil {
		return 0, err
	}
	off, _, err := n.pool.Alloc(size)
	if err != nil {
		return 0, err
	}
	return n.base + device.Ptr(off), nil
}

// npuOf returns the device whose pool holds p, and p's offset in it.
func (d *Device) npuOf(p device.Ptr) (*npu, int64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, n := range d.npus {
		if p >= n.base && int64(p-n.base) < n.pool.Stats().Capacity {
			return n, int64(p - n.base), true
		}
	}
	return nil, 0, false
}

// Free implements device.Device.
func (d *Device) Free(p device.Ptr) error {
	defer d.leave(d.enter())
	n, off, ok := d.npuOf(p)
	if !ok {
		return bindingError("aclrtFree", "", device.ACLErrMemoryFree, "%#x is not in a device pool", uint64(p))
	}
	if err := d.refuseWhileCapturing("aclrtFree", n); err != nil {
		return err
	}
	return n.pool.Free(off)
}

// MallocHost implements device.Device with aclrtMallocHost. The slice
// aliases page-locked memory owned by CANN: release it with FreeHost.
func (d *Device) MallocHost(size int64) ([]byte, error) {
	defer d.leave(d.enter())
	if size <= 0 {
		return nil, bindingError("aclrtMallocHost", "", device.ACLErrParamInvalid, "size %d: must be positive", size)
	}
	if _, err := d.bind("aclrtMallocHost"); err != nil {
		return nil, err
	}
	var rc C.aclError
	p := C.irt_aclrtMallocHost(C.size_t(size), &rc)
	if rc != 0 {
		return nil, newError("aclrtMallocHost", "", int32(rc))
	}
	b := unsafe.Slice((*byte)(p), size)
	d.mu.Lock()
	d.pinned[p] = size
	d.mu.Unlock()
	return b, nil
}

// FreeHost implements device.Device.
func (d *Device) FreeHost(b []byte) error {
	defer d.leave(d.enter())
	if len(b) == 0 {
		return bindingError("aclrtFreeHost", "", device.ACLErrParamInvalid, "empty buffer")
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	d.mu.Lock()
	_, ok := d.pinned[p]
	delete(d.pinned, p)
	d.mu.Unlock()
	if !ok {
		return bindingError("aclrtFreeHost", "", device.ACLErrMemoryFree, "buffer at %p was not allocated by MallocHost", p)
	}
	if rc := C.irt_aclrtFreeHost(p); rc != 0 {
		return newError("aclrtFreeHost", "", int32(rc))
	}
	return nil
}

// MemInfo implements device.Device: the free and total bytes of the
// current device's pool (the HBM outside it is not the program's).
func (d *Device) MemInfo() (free, total int64, err error) {
	defer d.leave(d.enter())
	n, err := d.bind("aclrtGetMemInfo")
	if err != nil {
		return 0, 0, err
	}
	s := n.pool.Stats()
	return s.Capacity - s.UsedBytes, s.Capacity, nil
}

func hostPtr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }

// MemcpyH2D implements device.Device (aclrtMemcpy, host to device).
func (d *Device) MemcpyH2D(dst device.Ptr, src []byte) error {
	defer d.leave(d.enter())
	if _, err := d.bind("aclrtMemcpy"); err != nil {
		return err
	}
	if len(src) == 0 {
		return nil
	}
	if rc := C.irt_h2d(C.uintptr_t(dst), hostPtr(src), C.size_t(len(src))); rc != 0 {
		return newError("aclrtMemcpy", "", int32(rc))
	}
	d.bytesH2D.Add(int64(len(src)))
	return nil
}

// MemcpyD2H implements device.Device (aclrtMemcpy, device to host).
func (d *Device) MemcpyD2H(dst []byte, src device.Ptr) error {
	defer d.leave(d.enter())
	if _, err := d.bind("aclrtMemcpy"); err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	if rc := C.irt_d2h(hostPtr(dst), C.uintptr_t(src), C.size_t(len(dst))); rc != 0 {
		return newError("aclrtMemcpy", "", int32(rc))
	}
	d.bytesD2H.Add(int64(len(dst)))
	return nil
}

// MemcpyH2DAsync implements device.Device (aclrtMemcpyAsync). With
// pageable host memory CANN copies before returning (it documents the
// call as effectively synchronous then), and refuses it in a capture.
func (d *Device) MemcpyH2DAsync(dst device.Ptr, src []byte, s device.Stream) error {
	defer d.leave(d.enter())
	if _, err := d.bind("aclrtMemcpyAsync"); err != nil {
		return err
	}
	if _, err := d.stream("aclrtMemcpyAsync", s); err != nil {
		return err
	}
	if len(src) == 0 {
		return nil
	}
	if rc := C.irt_h2d_async(C.uintptr_t(dst), hostPtr(src), C.size_t(len(src)), C.uintptr_t(s)); rc != 0 {
		return newError("aclrtMemcpyAsync", "", int32(rc))
	}
	d.bytesH2D.Add(int64(len(src)))
	return nil
}

// MemcpyD2HAsync implements device.Device (aclrtMemcpyAsync); dst must
// stay alive until the stream is synchronised.
func (d *Device) MemcpyD2HAsync(dst []byte, src device.Ptr, s device.Stream) error {
	defer d.leave(d.enter())
	if _, err := d.bind("aclrtMemcpyAsync"); err != nil {
		return err
	}
	if _, err := d.stream("aclrtMemcpyAsync", s); err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	if rc := C.irt_d2h_async(hostPtr(dst), C.uintptr_t(src), C.size_t(len(dst)), C.uintptr_t(s)); rc != 0 {
		return newError("aclrtMemcpyAsync", "", int32(rc))
	}
	d.bytesD2H.Add(int64(len(dst)))
	return nil
}

// Launch implements device.Device: the aclnn call sequence of k's op, on
// descriptors built once per distinct kernel (see recipes.go).
func (d *Device) Launch(s device.Stream, k *device.KernelLaunch) error {
	if k != nil && ir.IsCollective(k.Op) {
		return d.launchCollective(s, k) // hccl.go
	}
	defer d.leave(d.enter())
	if k == nil {
		return bindingError("aclnn", "", device.ACLErrParamInvalid, "nil kernel launch")
	}
	n, err := d.bind(k.Name)
	if err != nil {
		return err
	}
	st, err := d.stream(k.Name, s)
	if err != nil {
		return err
	}
	if st.npu != n {
		return bindingError(k.Name, label(k), device.ACLErrParamInvalid, "stream of device %d used on device %d", st.npu.id, n.id)
	}
	// The kernel cache lock covers the calls too: an eviction by another
	// launch must not destroy descriptors in use.
	n.kmu.Lock()
	defer n.kmu.Unlock()
	p, err := d.prepare(n, st, k)
	if err != nil {
		return err
	}
	if err := d.run(p, st); err != nil {
		return err
	}
	d.launches.Add(1)
	if d.onLaunch != nil {
		calls := make([]string, len(p.steps))
		for i, s := range p.steps {
			calls[i] = s.name
		}
		d.onLaunch(k, calls)
	}
	return nil
}

// run makes the two-phase call of every step of a prepared kernel.
func (d *Device) run(p *prepared, st *stream) error {
	for i := range p.steps {
		sp := &p.steps[i]
		var ws C.uint64_t
		var exec C.uintptr_t
		d.aclnnCalls.Add(1)
		d.callsByOp[sp.op].Add(1)
		if rc := C.irt_workspace(sp.op, sp.args, &ws, &exec); rc != 0 {
			return newError(sp.name+"GetWorkspaceSize", p.label, int32(rc))
		}
		addr, avail := p.wsBase, p.wsAvail
		if int64(ws) > avail {
			if int64(ws) > st.reserveBytes {
				return bindingError(sp.name+"GetWorkspaceSize", p.label, device.ACLErrMemoryAllocation,
					"the operator asks for a %d B workspace; the plan leaves %d B (of %d B planned) and the stream reserve is %d B (Options.WorkspaceReserve)",
					uint64(ws), avail, p.wsPlanned, st.reserveBytes)
			}
			addr = st.reserve
			d.reserveUses.Add(1)
		}
		if ws == 0 {
			addr = 0
		}
		if rc := C.irt_run(sp.op, C.uintptr_t(addr), ws, exec, C.uintptr_t(st.h)); rc != 0 {
			return newError(sp.name, p.label, int32(rc))
		}
	}
	return nil
}

// CaptureBegin implements device.Device. On success the calling goroutine
// stays locked to its OS thread until CaptureEnd.
func (d *Device) CaptureBegin(s device.Stream, mode device.CaptureMode) error {
	defer d.leave(d.enter())
	if _, err := d.bind("aclmdlRICaptureBegin"); err != nil {
		return err
	}
	st, err := d.stream("aclmdlRICaptureBegin", s)
	if err != nil {
		return err
	}
	if rc := C.irt_aclmdlRICaptureBegin(C.uintptr_t(s), C.int(mode)); rc != 0 {
		return newError("aclmdlRICaptureBegin", "", int32(rc))
	}
	goruntime.LockOSThread() // released by CaptureEnd
	d.mu.Lock()
	st.capturing, st.mode = true, mode
	if mode != device.CaptureRelaxed {
		st.npu.strict++
	}
	d.mu.Unlock()
	return nil
}

// CaptureEnd implements device.Device.
func (d *Device) CaptureEnd(s device.Stream) (device.GraphHandle, error) {
	defer d.leave(d.enter())
	if _, err := d.bind("aclmdlRICaptureEnd"); err != nil {
		return 0, err
	}
	st, err := d.stream("aclmdlRICaptureEnd", s)
	if err != nil {
		return 0, err
	}
	var ri C.uintptr_t
	rc := C.irt_aclmdlRICaptureEnd(C.uintptr_t(s), &ri)
	var cerr error
	if rc != 0 {
		cerr = newError("aclmdlRICaptureEnd", "", int32(rc))
	}
	d.mu.Lock()
	wasCapturing := st.capturing
	if rc == 0 || (rc != C.ACL_ERROR_RT_STREAM_CAPTURE_WRONG_END && rc != C.ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD) {
		// The capture is over (ended, or ended invalidated).
		if st.capturing && st.mode != device.CaptureRelaxed {
			st.npu.strict--
		}
		st.capturing = false
	}
	d.mu.Unlock()
	if wasCapturing && rc != C.ACL_ERROR_RT_STREAM_CAPTURE_WRONG_THREAD {
		goruntime.UnlockOSThread() // the lock CaptureBegin took
	}
	if cerr != nil {
		return 0, cerr
	}
	g := &graph{h: device.GraphHandle(ri), npu: st.npu}
	d.mu.Lock()
	d.graphs[g.h] = g
	d.mu.Unlock()
	d.captures.Add(1)
	return g.h, nil
}

// ExecuteAsync implements device.Device: one aclmdlRIExecuteAsync.
func (d *Device) ExecuteAsync(h device.GraphHandle, s device.Stream) error {
	defer d.leave(d.enter())
	if _, err := d.bind("aclmdlRIExecuteAsync"); err != nil {
		return err
	}
	d.mu.Lock()
	g := d.graphs[h]
	d.mu.Unlock()
	if g == nil {
		return bindingError("aclmdlRIExecuteAsync", "", device.ACLErrInvalidHandle, "graph %#x does not exist (destroyed?)", uint64(h))
	}
	if _, err := d.stream("aclmdlRIExecuteAsync", s); err != nil {
		return err
	}
	if rc := C.irt_aclmdlRIExecuteAsync(C.uintptr_t(h), C.uintptr_t(s)); rc != 0 {
		return newError("aclmdlRIExecuteAsync", "", int32(rc))
	}
	d.mu.Lock()
	g.last, g.ran = s, true
	d.mu.Unlock()
	d.graphLaunches.Add(1)
	return nil
}

// DestroyGraph implements device.Device: the stream the graph last ran
// on is synchronised first, so the graph is never destroyed while it runs
// (107037).
func (d *Device) DestroyGraph(h device.GraphHandle) error {
	defer d.leave(d.enter())
	if _, err := d.bind("aclmdlRIDestroy"); err != nil {
		return err
	}
	d.mu.Lock()
	g := d.graphs[h]
	d.mu.Unlock()
	if g == nil {
		return bindingError("aclmdlRIDestroy", "", device.ACLErrInvalidHandle, "graph %#x does not exist (destroyed?)", uint64(h))
	}
	if g.ran {
		if err := d.syncStream(g.last); err != nil {
			return err
		}
	}
	if rc := C.irt_aclmdlRIDestroy(C.uintptr_t(h)); rc != 0 {
		return newError("aclmdlRIDestroy", "", int32(rc))
	}
	d.mu.Lock()
	delete(d.graphs, h)
	d.mu.Unlock()
	d.destroyed.Add(1)
	return nil
}

func (d *Device) syncStream(s device.Stream) error {
	t0 := time.Now()
	defer func() { d.syncNS.Add(int64(time.Since(t0))) }()
	if rc := C.irt_aclrtSynchronizeStream(C.uintptr_t(s)); rc != 0 {
		return newError("aclrtSynchronizeStream", "", int32(rc))
	}
	d.mu.Lock()
	for _, g := range d.graphs {
		if g.last == s {
			g.ran = false
		}
	}
	d.mu.Unlock()
	return nil
}

// SynchronizeStream implements device.Device.
func (d *Device) SynchronizeStream(s device.Stream) error {
	d.apiCalls.Add(1)
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	if _, err := d.bind("aclrtSynchronizeStream"); err != nil {
		return err
	}
	if _, err := d.stream("aclrtSynchronizeStream", s); err != nil {
		return err
	}
	return d.syncStream(s)
}

// SynchronizeDevice implements device.Device.
func (d *Device) SynchronizeDevice() error {
	d.apiCalls.Add(1)
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	if _, err := d.bind("aclrtSynchronizeDevice"); err != nil {
		return err
	}
	t0 := time.Now()
	defer func() { d.syncNS.Add(int64(time.Since(t0))) }()
	if rc := C.irt_aclrtSynchronizeDevice(); rc != 0 {
		return newError("aclrtSynchronizeDevice", "", int32(rc))
	}
	d.mu.Lock()
	for _, g := range d.graphs {
		g.ran = false
	}
	d.mu.Unlock()
	return nil
}

// Stats implements device.Device. KernelsExecuted is not observable on
// real hardware from the host; it counts eager launches plus the kernels
// of nothing else, so it stays 0 here.
func (d *Device) Stats() device.DeviceStats {
	s := device.DeviceStats{
		APICalls:        d.apiCalls.Load(),
		KernelLaunches:  d.launches.Load(),
		Captures:        d.captures.Load(),
		GraphLaunches:   d.graphLaunches.Load(),
		GraphsDestroyed: d.destroyed.Load(),
		BytesH2D:        d.bytesH2D.Load(),
		BytesD2H:        d.bytesD2H.Load(),
		DispatchNS:      d.dispatchNS.Load(),
		SyncNS:          d.syncNS.Load(),
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	// Pools[i] is device i's pool (zero for devices not set).
	for id, n := range d.npus {
		for len(s.Pools) <= id {
			s.Pools = append(s.Pools, device.PoolStats{})
		}
		s.Pools[id] = n.pool.Stats()
	}
	return s
}

// Counters are the binding's own counters, beyond device.DeviceStats.
type Counters struct {
	AclnnCalls  int64 // two-phase aclnn calls made (eager and captured)
	Descriptors int64 // aclCreateTensor calls made
	Kernels     int   // prepared kernels cached, all devices
	LiveGraphs  int   // captured graphs not destroyed
	// ConvertNS is the host time spent converting quantised weights to
	// the layouts aclnnWeightQuantBatchMatmulV2 and get_rows read
	// (gguf/wqconv), ConvertedBytes the device bytes of the results.
	ConvertNS      int64
	ConvertedBytes int64
	// ReserveUses counts the calls whose workspace did not fit what the
	// plan left their kernel and came from the stream's reserve.
	ReserveUses int64
	// CallsByName counts AclnnCalls by operator (aclnnMatmul, ...); the
	// operators not called are absent.
	CallsByName map[string]int64
}

// Counters returns the binding's counters.
func (d *Device) Counters() Counters {
	c := Counters{AclnnCalls: d.aclnnCalls.Load(), Descriptors: d.descriptorsMade.Load(),
		ConvertNS: d.convertNS.Load(), ConvertedBytes: d.convertedBytes.Load(), CallsByName: map[string]int64{}, ReserveUses: d.reserveUses.Load()}
	for i := range d.callsByOp {
		if v := d.callsByOp[i].Load(); v > 0 {
			c.CallsByName[opName(C.int(i))] += v
		}
	}
	d.mu.Lock()
	c.LiveGraphs = len(d.graphs)
	npus := make([]*npu, 0, len(d.npus))
	for _, n := range d.npus {
		npus = append(npus, n)
	}
	d.mu.Unlock()
	for _, n := range npus {
		n.kmu.Lock()
		c.Kernels += n.kernels.len()
		n.kmu.Unlock()
	}
	return c
}

// Close destroys every graph (after synchronising), the cached
// descriptors, the streams it created, and frees the pools and staging.
// The device handle is unusable afterwards; no other call may run
// concurrently with Close.
func (d *Device) Close() error {
	d.DetachComms() // hccl.go
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	d.mu.Lock()
	graphs, streams, npus, pinned := d.graphs, d.streams, d.npus, d.pinned
	d.graphs, d.streams, d.npus, d.pinned = map[device.GraphHandle]*graph{}, map[device.Stream]*stream{}, map[int]*npu{}, map[unsafe.Pointer]int64{}
	d.cur.Store(-1)
	d.mu.Unlock()
	for _, g := range graphs {
		if rc := C.irt_ensure_device(C.int32_t(g.npu.id)); rc != 0 {
			keep(newError("aclrtSetDevice", "", int32(rc)))
			continue
		}
		if g.ran {
			if rc := C.irt_aclrtSynchronizeStream(C.uintptr_t(g.last)); rc != 0 {
				keep(newError("aclrtSynchronizeStream", "", int32(rc)))
			}
		}
		if rc := C.irt_aclmdlRIDestroy(C.uintptr_t(g.h)); rc != 0 {
			keep(newError("aclmdlRIDestroy", "", int32(rc)))
		} else {
			d.destroyed.Add(1)
		}
	}
	for _, st := range streams {
		if st.h == device.DefaultStream {
			continue
		}
		if rc := C.irt_ensure_device(C.int32_t(st.npu.id)); rc != 0 {
			keep(newError("aclrtSetDevice", "", int32(rc)))
			continue
		}
		if rc := C.irt_aclrtDestroyStream(C.uintptr_t(st.h)); rc != 0 {
			keep(newError("aclrtDestroyStream", "", int32(rc)))
		}
	}
	for id, n := range npus {
		if rc := C.irt_ensure_device(C.int32_t(id)); rc != 0 {
			keep(newError("aclrtSetDevice", "", int32(rc)))
			continue
		}
		n.kmu.Lock()
		n.kernels.clear()
		n.kmu.Unlock()
		if rc := C.irt_aclrtSynchronizeDevice(); rc != 0 {
			keep(newError("aclrtSynchronizeDevice", "", int32(rc)))
		}
		if n.stage != nil {
			if rc := C.irt_aclrtFreeHost(n.stage); rc != 0 {
				keep(newError("aclrtFreeHost", "", int32(rc)))
			}
		}
		for _, h := range n.ownStages {
			if rc := C.irt_aclrtFreeHost(h); rc != 0 {
				keep(newError("aclrtFreeHost", "", int32(rc)))
			}
		}
		if rc := C.irt_aclrtFree(C.uintptr_t(n.base)); rc != 0 {
			keep(newError("aclrtFree", "", int32(rc)))
		}
	}
	for p := range pinned {
		if rc := C.irt_aclrtFreeHost(p); rc != 0 {
			keep(newError("aclrtFreeHost", "", int32(rc)))
		}
	}
	return first
}
