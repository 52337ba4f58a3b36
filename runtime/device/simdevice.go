package device

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/irtool/irtool/eval"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// SimDevice is a simulated Ascend NPU host in pure Go. It implements Device
// with real behaviour, not bookkeeping:
//
//   - Device memory is a real byte arena per NPU, addressed by Ptr values,
//     handed out by a MemPool (mLLM's pool: one pre-allocation, 32-byte
//     rounding, 64-byte aligned blocks, reuse of freed blocks).
//   - Kernels run for real through the runtime's kernel table (the same
//     kernels the CPU executor uses), on the bytes at the launch's
//     addresses, so the numbers equal the CPU executor's.
//   - Streams are asynchronous: Launch, the async copies and ExecuteAsync
//     only enqueue; the queued work runs when the host synchronises. The
//     host time spent in API calls (the dispatch cost) is therefore
//     measured apart from the time the device computes.
//   - Capture records tasks with their addresses resolved at capture time.
//     A replay reads and writes those same bytes: if the buffers have moved
//     since, it computes garbage, as real hardware would.
//   - Capture refuses what ACL refuses, with ACL's codes: malloc, free,
//     synchronous copies and device synchronisation while a stream captures
//     in GLOBAL mode (107030, and the capture is invalidated: CaptureEnd then
//     fails with 507903), synchronising the capturing stream (107027),
//     capturing on the default stream (107031), async copies through
//     pageable host memory (107030), destroying a graph that is still
//     queued (107037).
//   - It counts host API calls, kernel launches, kernels executed, graph
//     captures and replays, bytes copied, and host dispatch time.
//
// A SimDevice is safe for concurrent use. Like ACL, each stream runs its
// work in order; different streams run independently.
type SimDevice struct {
	opts SimOptions
	cur  atomic.Int32 // current device of this handle; -1 before SetDevice
	npus []*simNPU

	pinMu  sync.Mutex
	pinned map[uintptr][]byte // MallocHost buffers by base address (kept alive while pinned)

	apiCalls, launches, executed, captures, graphLaunches, destroyed atomic.Int64
	bytesH2D, bytesD2H, dispatchNS, syncNS                           atomic.Int64
}

// SimOptions configure a SimDevice.
type SimOptions struct {
	// Devices is the number of NPUs (default 1).
	Devices int
	// MemoryBytes is the device memory of each NPU, pre-allocated as one
	// pool (default 256 MiB).
	MemoryBytes int64
	// MaxStreams bounds the streams of one NPU (default 2048, the A2
	// limit; CANN docs, aclrtMalloc).
	MaxStreams int
	// Kernels selects the numeric options of the kernels; keep it equal
	// to the CPU executor's to get bit-identical results. When its Pool is
	// nil, each stream runs its kernels on a persistent pool of its own
	// (Threads goroutines, 0 = GOMAXPROCS), started by the stream's first
	// synchronisation and closed by DestroyStream, so a kernel launch
	// starts no goroutine.
	Kernels kernels.Options
	// KernelSet holds the CPU kernels that stand in for the aclnn calls
	// of each op; nil means eval.DefaultKernels(). A custom op (see
	// irtool.Context) runs on the simulated device with its context's set.
	KernelSet *eval.KernelSet
}

// Default sizes of a SimDevice.
const (
	DefaultSimMemory  = 256 << 20
	DefaultSimStreams = 2048
	simAddrShift      = 40 // device id lives above bit 40 of a Ptr
)

type simNPU struct {
	id   int
	pool *MemPool
	mem  []byte
	base Ptr

	mu             sync.Mutex // guards everything below
	streams        map[Stream]*simStream
	nextStream     uint64
	defaultStream  Stream
	graphs         map[GraphHandle]*simGraph
	nextGraph      uint64
	strictCaptures int // streams capturing in GLOBAL or THREAD_LOCAL mode
}

type simStream struct {
	h         Stream
	npu       *simNPU
	isDefault bool

	execMu sync.Mutex // serialises execution of the queue
	// pool runs the parallel parts of the stream's kernels (guarded by
	// execMu): started by the first drain with work to do, closed when
	// the stream is destroyed.
	pool *kernels.Pool

	mu        sync.Mutex // guards queue, capture, destroyed
	queue     []simTask
	capture   *simCapture
	destroyed bool
}

type simCapture struct {
	mode    CaptureMode
	tasks   []simTask
	kernels int
	invalid error // the refused call that invalidated the capture
}

type taskKind uint8

const (
	taskKernel taskKind = iota
	taskH2D             // copy host bytes to the device
	taskD2H             // copy device bytes to the host
	taskGraph           // run a captured graph
)

type simTask struct {
	kind taskKind
	k    *simKernel
	g    *simGraph
	host []byte // source (H2D) or destination (D2H)
	dev  []byte // device bytes
}

// simKernel is a launch resolved at Launch time: the kernel function, a
// node carrying op and params, and views of the device bytes at the
// launch's addresses.
type simKernel struct {
	name  string
	node  *ir.Node
	fn    eval.Kernel
	dst   kernels.Tensor
	args  []kernels.Tensor
	fault string // an address outside device memory: the kernel faults when it runs
}

type simGraph struct {
	h       GraphHandle
	tasks   []simTask
	kernels int
	pending atomic.Int64 // queued executions not yet run
}

// NewSimDevice returns a simulated host with opts.Devices NPUs. Call
// SetDevice before anything else, as with ACL.
func NewSimDevice(opts SimOptions) (*SimDevice, error) {
	if opts.Devices == 0 {
		opts.Devices = 1
	}
	if opts.MemoryBytes == 0 {
		opts.MemoryBytes = DefaultSimMemory
	}
	if opts.MaxStreams == 0 {
		opts.MaxStreams = DefaultSimStreams
	}
	if opts.Devices < 0 || opts.Devices > 64 {
		return nil, fmt.Errorf("device: sim device: %d devices (want 1..64)", opts.Devices)
	}
	if opts.MemoryBytes < 0 || opts.MemoryBytes >= 1<<simAddrShift {
		return nil, fmt.Errorf("device: sim device: memory %d bytes (want 1 B..1 TiB)", opts.MemoryBytes)
	}
	d := &SimDevice{opts: opts, pinned: map[uintptr][]byte{}}
	d.cur.Store(-1)
	for i := 0; i < opts.Devices; i++ {
		d.npus = append(d.npus, &simNPU{
			id:      i,
			pool:    NewMemPool(opts.MemoryBytes),
			mem:     make([]byte, opts.MemoryBytes),
			base:    Ptr(uint64(i+1) << simAddrShift),
			streams: map[Stream]*simStream{},
			graphs:  map[GraphHandle]*simGraph{},
		})
	}
	return d, nil
}

// enter counts an API call and starts its clock.
func (d *SimDevice) enter() time.Time {
	d.apiCalls.Add(1)
	return time.Now()
}

func (d *SimDevice) leave(t0 time.Time) { d.dispatchNS.Add(int64(time.Since(t0))) }

func (d *SimDevice) current(call string) (*simNPU, error) {
	id := d.cur.Load()
	if id < 0 {
		return nil, aclErr(call, ACLErrContextNull, "no current device: call aclrtSetDevice first")
	}
	return d.npus[id], nil
}

// SetDevice implements Device. Unlike ACL, whose binding is per thread, the
// binding belongs to this handle.
func (d *SimDevice) SetDevice(id int) error {
	defer d.leave(d.enter())
	if id < 0 || id >= len(d.npus) {
		return aclErr("aclrtSetDevice", ACLErrInvalidDeviceID, "device %d does not exist (%d devices)", id, len(d.npus))
	}
	n := d.npus[id]
	n.mu.Lock()
	if n.defaultStream == 0 {
		n.defaultStream = n.newStreamLocked(true)
	}
	n.mu.Unlock()
	d.cur.Store(int32(id))
	return nil
}

// DeviceCount implements Device.
func (d *SimDevice) DeviceCount() int { return len(d.npus) }

func (n *simNPU) newStreamLocked(isDefault bool) Stream {
	n.nextStream++
	h := Stream(uint64(n.id+1)<<32 | n.nextStream)
	n.streams[h] = &simStream{h: h, npu: n, isDefault: isDefault}
	return h
}

// CreateStream implements Device.
func (d *SimDevice) CreateStream() (Stream, error) {
	defer d.leave(d.enter())
	n, err := d.current("aclrtCreateStream")
	if err != nil {
		return 0, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.streams) >= d.opts.MaxStreams {
		return 0, aclErr("aclrtCreateStream", ACLErrNoStreamResource, "device %d already has %d streams", n.id, len(n.streams))
	}
	return n.newStreamLocked(false), nil
}

// stream resolves a handle; DefaultStream means the current device's.
func (d *SimDevice) stream(call string, s Stream) (*simStream, error) {
	if s == DefaultStream {
		n, err := d.current(call)
		if err != nil {
			return nil, err
		}
		n.mu.Lock()
		st := n.streams[n.defaultStream]
		n.mu.Unlock()
		return st, nil
	}
	id := int(uint64(s)>>32) - 1
	if id < 0 || id >= len(d.npus) {
		return nil, aclErr(call, ACLErrInvalidHandle, "stream %#x is not a stream of this host", uint64(s))
	}
	n := d.npus[id]
	n.mu.Lock()
	st := n.streams[s]
	n.mu.Unlock()
	if st == nil {
		return nil, aclErr(call, ACLErrInvalidHandle, "stream %#x does not exist (destroyed?)", uint64(s))
	}
	return st, nil
}

// DestroyStream implements Device. Work still queued on the stream runs
// first, as aclrtDestroyStream waits for it.
func (d *SimDevice) DestroyStream(s Stream) error {
	t0 := d.enter()
	st, err := d.stream("aclrtDestroyStream", s)
	if err != nil {
		d.leave(t0)
		return err
	}
	if st.isDefault {
		d.leave(t0)
		return aclErr("aclrtDestroyStream", ACLErrParamInvalid, "the default stream cannot be destroyed")
	}
	st.mu.Lock()
	capturing := st.capture != nil
	st.mu.Unlock()
	if capturing {
		d.leave(t0)
		return aclErr("aclrtDestroyStream", ACLErrStreamCaptured, "stream %#x is capturing", uint64(s))
	}
	d.leave(t0)
	t1 := time.Now()
	err = d.drain(st)
	d.syncNS.Add(int64(time.Since(t1)))
	st.npu.mu.Lock()
	delete(st.npu.streams, s)
	st.npu.mu.Unlock()
	st.mu.Lock()
	st.destroyed = true
	st.mu.Unlock()
	st.execMu.Lock()
	st.pool.Close()
	st.execMu.Unlock()
	return err
}

// refuseUnsafe fails a capture-unsafe call while a stream of n captures in
// GLOBAL (or THREAD_LOCAL) mode, invalidating those captures as ACL does.
func (n *simNPU) refuseUnsafe(call string) error {
	n.mu.Lock()
	if n.strictCaptures == 0 {
		n.mu.Unlock()
		return nil
	}
	var capturing []*simStream
	for _, st := range n.streams {
		capturing = append(capturing, st)
	}
	n.mu.Unlock()
	err := aclErr(call, ACLErrCaptureModeNotSupport, "not allowed while a stream of device %d captures in GLOBAL mode", n.id)
	for _, st := range capturing {
		st.mu.Lock()
		if st.capture != nil && st.capture.mode != CaptureRelaxed && st.capture.invalid == nil {
			st.capture.invalid = err
		}
		st.mu.Unlock()
	}
	return err
}

// Malloc implements Device: a block of the current device's pool.
func (d *SimDevice) Malloc(size int64) (Ptr, error) {
	defer d.leave(d.enter())
	n, err := d.current("aclrtMalloc")
	if err != nil {
		return 0, err
	}
	if err := n.refuseUnsafe("aclrtMalloc"); err != nil {
		return 0, err
	}
	off, _, err := n.pool.Alloc(size)
	if err != nil {
		return 0, err
	}
	return n.base + Ptr(off), nil
}

// npuOf returns the NPU owning address p and p's offset in its memory.
func (d *SimDevice) npuOf(p Ptr) (*simNPU, int64, bool) {
	id := int(uint64(p)>>simAddrShift) - 1
	if id < 0 || id >= len(d.npus) {
		return nil, 0, false
	}
	n := d.npus[id]
	off := int64(p - n.base)
	if off < 0 || off >= int64(len(n.mem)) {
		return nil, 0, false
	}
	return n, off, true
}

// Free implements Device.
func (d *SimDevice) Free(p Ptr) error {
	defer d.leave(d.enter())
	n, off, ok := d.npuOf(p)
	if !ok {
		return aclErr("aclrtFree", ACLErrMemoryFree, "%#x is not a device address", uint64(p))
	}
	if err := n.refuseUnsafe("aclrtFree"); err != nil {
		return err
	}
	return n.pool.Free(off)
}

// MallocHost implements Device.
func (d *SimDevice) MallocHost(size int64) ([]byte, error) {
	defer d.leave(d.enter())
	if size <= 0 {
		return nil, aclErr("aclrtMallocHost", ACLErrParamInvalid, "size %d: must be positive", size)
	}
	if n, err := d.current("aclrtMallocHost"); err != nil {
		return nil, err
	} else if err := n.refuseUnsafe("aclrtMallocHost"); err != nil {
		return nil, err
	}
	b := make([]byte, size)
	d.pinMu.Lock()
	d.pinned[uintptrOf(b)] = b
	d.pinMu.Unlock()
	return b, nil
}

// FreeHost implements Device.
func (d *SimDevice) FreeHost(b []byte) error {
	defer d.leave(d.enter())
	if len(b) == 0 {
		return aclErr("aclrtFreeHost", ACLErrParamInvalid, "empty buffer")
	}
	key := uintptrOf(b)
	d.pinMu.Lock()
	defer d.pinMu.Unlock()
	if _, ok := d.pinned[key]; !ok {
		return aclErr("aclrtFreeHost", ACLErrMemoryFree, "buffer at %#x was not allocated by aclrtMallocHost", key)
	}
	delete(d.pinned, key)
	return nil
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// isPinned reports whether b lies inside one MallocHost buffer.
func (d *SimDevice) isPinned(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	lo := uintptrOf(b)
	hi := lo + uintptr(len(b))
	d.pinMu.Lock()
	defer d.pinMu.Unlock()
	for base, buf := range d.pinned {
		if lo >= base && hi <= base+uintptr(len(buf)) {
			return true
		}
	}
	return false
}

// MemInfo implements Device for the current device.
func (d *SimDevice) MemInfo() (free, total int64, err error) {
	defer d.leave(d.enter())
	n, err := d.current("aclrtGetMemInfo")
	if err != nil {
		return 0, 0, err
	}
	s := n.pool.Stats()
	return s.Capacity - s.UsedBytes, s.Capacity, nil
}

// devBytes returns the device bytes [p, p+size) or an error naming call.
func (d *SimDevice) devBytes(call string, p Ptr, size int64) (*simNPU, []byte, error) {
	n, off, ok := d.npuOf(p)
	if !ok || size < 0 || off+size > int64(len(n.mem)) {
		return nil, nil, aclErr(call, ACLErrParamInvalid, "device range [%#x, +%d) is outside device memory", uint64(p), size)
	}
	return n, n.mem[off : off+size : off+size], nil
}

// MemcpyH2D implements Device (aclrtMemcpy, ACL_MEMCPY_HOST_TO_DEVICE). It
// does not wait for queued work, as on hardware.
func (d *SimDevice) MemcpyH2D(dst Ptr, src []byte) error {
	defer d.leave(d.enter())
	n, b, err := d.devBytes("aclrtMemcpy", dst, int64(len(src)))
	if err != nil {
		return err
	}
	if err := n.refuseUnsafe("aclrtMemcpy"); err != nil {
		return err
	}
	copy(b, src)
	d.bytesH2D.Add(int64(len(src)))
	return nil
}

// MemcpyD2H implements Device (aclrtMemcpy, ACL_MEMCPY_DEVICE_TO_HOST). It
// does not wait for queued work: synchronise first to read results.
func (d *SimDevice) MemcpyD2H(dst []byte, src Ptr) error {
	defer d.leave(d.enter())
	n, b, err := d.devBytes("aclrtMemcpy", src, int64(len(dst)))
	if err != nil {
		return err
	}
	if err := n.refuseUnsafe("aclrtMemcpy"); err != nil {
		return err
	}
	copy(dst, b)
	d.bytesD2H.Add(int64(len(dst)))
	return nil
}

// enqueue appends t to the stream's queue, or to its capture. A capture
// records copies only through pinned host memory.
func (d *SimDevice) enqueue(call string, st *simStream, t simTask) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.destroyed {
		return aclErr(call, ACLErrInvalidHandle, "stream %#x was destroyed", uint64(st.h))
	}
	if c := st.capture; c != nil {
		if (t.kind == taskH2D || t.kind == taskD2H) && !d.isPinned(t.host) {
			err := aclErr(call, ACLErrCaptureModeNotSupport, "an async copy through pageable host memory cannot be captured (use aclrtMallocHost memory)")
			if c.invalid == nil {
				c.invalid = err
			}
			return err
		}
		if t.kind == taskGraph {
			return aclErr(call, ACLErrStreamCaptured, "cannot enqueue a graph on a capturing stream")
		}
		c.tasks = append(c.tasks, t)
		if t.kind == taskKernel {
			c.kernels++
		}
		return nil
	}
	st.queue = append(st.queue, t)
	return nil
}

// MemcpyH2DAsync implements Device. With pageable host memory the bytes are
// staged at call time (ACL: "effectively synchronous"); with pinned memory
// they are read when the copy runs.
func (d *SimDevice) MemcpyH2DAsync(dst Ptr, src []byte, s Stream) error {
	defer d.leave(d.enter())
	st, err := d.stream("aclrtMemcpyAsync", s)
	if err != nil {
		return err
	}
	n, b, err := d.devBytes("aclrtMemcpyAsync", dst, int64(len(src)))
	if err != nil {
		return err
	}
	if n != st.npu {
		return aclErr("aclrtMemcpyAsync", ACLErrParamInvalid, "destination %#x is on device %d, stream on device %d", uint64(dst), n.id, st.npu.id)
	}
	t := simTask{kind: taskH2D, host: src, dev: b}
	st.mu.Lock()
	capturing := st.capture != nil
	st.mu.Unlock()
	if !capturing && !d.isPinned(src) {
		t.host = append([]byte(nil), src...)
	}
	return d.enqueue("aclrtMemcpyAsync", st, t)
}

// MemcpyD2HAsync implements Device; dst is written when the copy runs.
func (d *SimDevice) MemcpyD2HAsync(dst []byte, src Ptr, s Stream) error {
	defer d.leave(d.enter())
	st, err := d.stream("aclrtMemcpyAsync", s)
	if err != nil {
		return err
	}
	n, b, err := d.devBytes("aclrtMemcpyAsync", src, int64(len(dst)))
	if err != nil {
		return err
	}
	if n != st.npu {
		return aclErr("aclrtMemcpyAsync", ACLErrParamInvalid, "source %#x is on device %d, stream on device %d", uint64(src), n.id, st.npu.id)
	}
	return d.enqueue("aclrtMemcpyAsync", st, simTask{kind: taskD2H, host: dst, dev: b})
}

// Launch implements Device. It does the host half of an aclnn call: checks
// the descriptors, finds the kernel and resolves every address to device
// bytes; the kernel runs when the stream executes.
func (d *SimDevice) Launch(s Stream, k *KernelLaunch) error {
	defer d.leave(d.enter())
	call := "aclnn"
	if k != nil && k.Name != "" {
		call = k.Name
	}
	st, err := d.stream(call, s)
	if err != nil {
		return err
	}
	if k == nil {
		return aclErr(call, ACLErrParamInvalid, "nil kernel launch")
	}
	ks := d.opts.KernelSet
	if ks == nil {
		ks = eval.DefaultKernels()
	}
	fn, ok := ks.Lookup(k.Op)
	if !ok {
		return aclErr(call, ACLErrFeatureNotSupport, "no kernel for op %q (node %d)", k.Op, k.Node)
	}
	sk := &simKernel{name: call, fn: fn, node: KernelNode(k)}
	resolve := func(role string, i int, t TensorDesc) kernels.Tensor {
		view, err := st.npu.view(t)
		if err != nil && sk.fault == "" {
			sk.fault = fmt.Sprintf("%s %d: %v", role, i, err)
		}
		return view
	}
	sk.args = make([]kernels.Tensor, len(k.Inputs))
	for i, in := range k.Inputs {
		if err := checkDesc(in); err != nil {
			return aclErr(call, ACLErrParamInvalid, "node %d input %d: %v", k.Node, i, err)
		}
		sk.args[i] = resolve("input", i, in)
	}
	for i, x := range k.Extra {
		if err := checkDesc(x); err != nil {
			return aclErr(call, ACLErrParamInvalid, "node %d extra operand %d: %v", k.Node, i, err)
		}
		resolve("extra operand", i, x)
	}
	if err := checkDesc(k.Output); err != nil {
		return aclErr(call, ACLErrParamInvalid, "node %d output: %v", k.Node, err)
	}
	sk.dst = resolve("output", 0, k.Output)
	if k.WorkspaceBytes > 0 {
		if _, _, err := d.devBytes(call, k.Workspace, k.WorkspaceBytes); err != nil && sk.fault == "" {
			sk.fault = fmt.Sprintf("workspace: %v", err)
		}
	}
	d.launches.Add(1)
	return d.enqueue(call, st, simTask{kind: taskKernel, k: sk})
}

func checkDesc(t TensorDesc) error {
	if !t.DType.Known() {
		return fmt.Errorf("unknown dtype %d", t.DType)
	}
	for i, n := range t.Ne {
		if n < 0 || t.Nb[i] < 0 {
			return fmt.Errorf("negative dim or stride: ne %v nb %v", t.Ne, t.Nb)
		}
	}
	if t.Addr == 0 {
		return fmt.Errorf("null device address")
	}
	return nil
}

// view returns the kernel view of a descriptor on this NPU. An address
// range outside the NPU's memory is not an error at launch (the host
// cannot know): the kernel faults when it runs.
func (n *simNPU) view(t TensorDesc) (kernels.Tensor, error) {
	kt := kernels.Tensor{Type: gguf.GGMLType(t.DType), Ne: t.Ne, Nb: t.Nb}
	size := t.Bytes()
	off := int64(t.Addr - n.base)
	if t.Addr < n.base || off+size > int64(len(n.mem)) || off+size < off {
		return kt, fmt.Errorf("address range [%#x, +%d) is outside the memory of device %d", uint64(t.Addr), size, n.id)
	}
	kt.Data = n.mem[off : off+size : off+size]
	return kt, nil
}

// CaptureBegin implements Device.
func (d *SimDevice) CaptureBegin(s Stream, mode CaptureMode) error {
	defer d.leave(d.enter())
	st, err := d.stream("aclmdlRICaptureBegin", s)
	if err != nil {
		return err
	}
	if st.isDefault {
		return aclErr("aclmdlRICaptureBegin", ACLErrStreamCaptureImplicit, "the default stream cannot be captured; create a stream")
	}
	if mode < CaptureGlobal || mode > CaptureRelaxed {
		return aclErr("aclmdlRICaptureBegin", ACLErrParamInvalid, "unknown capture mode %d", mode)
	}
	st.mu.Lock()
	if st.capture != nil {
		st.mu.Unlock()
		return aclErr("aclmdlRICaptureBegin", ACLErrStreamCaptured, "stream %#x is already capturing", uint64(s))
	}
	st.capture = &simCapture{mode: mode}
	st.mu.Unlock()
	if mode != CaptureRelaxed {
		st.npu.mu.Lock()
		st.npu.strictCaptures++
		st.npu.mu.Unlock()
	}
	return nil
}

// CaptureEnd implements Device: the recorded tasks become a graph.
func (d *SimDevice) CaptureEnd(s Stream) (GraphHandle, error) {
	defer d.leave(d.enter())
	st, err := d.stream("aclmdlRICaptureEnd", s)
	if err != nil {
		return 0, err
	}
	st.mu.Lock()
	c := st.capture
	st.capture = nil
	st.mu.Unlock()
	if c == nil {
		return 0, aclErr("aclmdlRICaptureEnd", ACLErrStreamCaptureUnmatched, "stream %#x is not capturing (no aclmdlRICaptureBegin on it)", uint64(s))
	}
	n := st.npu
	n.mu.Lock()
	defer n.mu.Unlock()
	if c.mode != CaptureRelaxed {
		n.strictCaptures--
	}
	if c.invalid != nil {
		return 0, aclErr("aclmdlRICaptureEnd", ACLErrStreamCaptureInvalidated, "capture invalidated by an earlier call: %v", c.invalid)
	}
	n.nextGraph++
	g := &simGraph{h: GraphHandle(uint64(n.id+1)<<32 | n.nextGraph), tasks: c.tasks, kernels: c.kernels}
	n.graphs[g.h] = g
	d.captures.Add(1)
	return g.h, nil
}

func (d *SimDevice) graph(call string, h GraphHandle) (*simNPU, *simGraph, error) {
	id := int(uint64(h)>>32) - 1
	if id < 0 || id >= len(d.npus) {
		return nil, nil, aclErr(call, ACLErrInvalidHandle, "graph %#x is not a graph of this host", uint64(h))
	}
	n := d.npus[id]
	n.mu.Lock()
	g := n.graphs[h]
	n.mu.Unlock()
	if g == nil {
		return nil, nil, aclErr(call, ACLErrInvalidHandle, "graph %#x does not exist (destroyed?)", uint64(h))
	}
	return n, g, nil
}

// ExecuteAsync implements Device: one call enqueues the whole graph.
func (d *SimDevice) ExecuteAsync(h GraphHandle, s Stream) error {
	defer d.leave(d.enter())
	n, g, err := d.graph("aclmdlRIExecuteAsync", h)
	if err != nil {
		return err
	}
	st, err := d.stream("aclmdlRIExecuteAsync", s)
	if err != nil {
		return err
	}
	if st.npu != n {
		return aclErr("aclmdlRIExecuteAsync", ACLErrParamInvalid, "graph of device %d on a stream of device %d", n.id, st.npu.id)
	}
	g.pending.Add(1)
	if err := d.enqueue("aclmdlRIExecuteAsync", st, simTask{kind: taskGraph, g: g}); err != nil {
		g.pending.Add(-1)
		return err
	}
	d.graphLaunches.Add(1)
	return nil
}

// DestroyGraph implements Device. A graph with queued executions cannot be
// destroyed (107037): synchronise its stream first.
func (d *SimDevice) DestroyGraph(h GraphHandle) error {
	defer d.leave(d.enter())
	n, g, err := d.graph("aclmdlRIDestroy", h)
	if err != nil {
		return err
	}
	if p := g.pending.Load(); p > 0 {
		return aclErr("aclmdlRIDestroy", ACLErrModelRunning, "graph %#x has %d queued executions; synchronise its stream first", uint64(h), p)
	}
	n.mu.Lock()
	delete(n.graphs, h)
	n.mu.Unlock()
	d.destroyed.Add(1)
	return nil
}

// SynchronizeStream implements Device: it runs the queued work and returns
// the first execution error.
func (d *SimDevice) SynchronizeStream(s Stream) error {
	d.apiCalls.Add(1)
	t0 := time.Now()
	defer func() { d.syncNS.Add(int64(time.Since(t0))) }()
	st, err := d.stream("aclrtSynchronizeStream", s)
	if err != nil {
		return err
	}
	st.mu.Lock()
	if c := st.capture; c != nil {
		err := aclErr("aclrtSynchronizeStream", ACLErrStreamCaptured, "not allowed to synchronize captured stream %#x", uint64(s))
		if c.invalid == nil {
			c.invalid = err
		}
		st.mu.Unlock()
		return err
	}
	st.mu.Unlock()
	return d.drain(st)
}

// SynchronizeDevice implements Device for the current device.
func (d *SimDevice) SynchronizeDevice() error {
	d.apiCalls.Add(1)
	t0 := time.Now()
	defer func() { d.syncNS.Add(int64(time.Since(t0))) }()
	n, err := d.current("aclrtSynchronizeDevice")
	if err != nil {
		return err
	}
	if err := n.refuseUnsafe("aclrtSynchronizeDevice"); err != nil {
		return err
	}
	n.mu.Lock()
	var all []*simStream
	for _, st := range n.streams {
		all = append(all, st)
	}
	n.mu.Unlock()
	var first error
	for _, st := range all {
		if err := d.drain(st); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// drain runs a stream's queue in order. The first failing task ends the
// run; the tasks behind it are dropped, as a faulted stream drops its
// work.
func (d *SimDevice) drain(st *simStream) error {
	st.execMu.Lock()
	defer st.execMu.Unlock()
	st.mu.Lock()
	q := st.queue
	st.queue = nil
	destroyed := st.destroyed
	st.mu.Unlock()
	o := d.opts.Kernels
	if o.Pool == nil && len(q) > 0 {
		if st.pool == nil && !destroyed {
			st.pool = kernels.NewPool(o.Threads)
		}
		o.Pool = st.pool
	}
	var err error
	for i, t := range q {
		if err == nil {
			err = d.run(t, o)
		}
		if t.kind == taskGraph {
			t.g.pending.Add(-1)
		}
		q[i] = simTask{}
	}
	if err != nil {
		return aclErr("aclrtSynchronizeStream", ErrorCode(err), "stream %#x: %v", uint64(st.h), err)
	}
	return nil
}

// run runs one task with the kernel options o (the device's, with the
// stream's pool).
func (d *SimDevice) run(t simTask, o kernels.Options) error {
	switch t.kind {
	case taskKernel:
		return d.runKernel(t.k, o)
	case taskH2D:
		copy(t.dev, t.host)
		d.bytesH2D.Add(int64(len(t.host)))
	case taskD2H:
		copy(t.host, t.dev)
		d.bytesD2H.Add(int64(len(t.host)))
	case taskGraph:
		for _, gt := range t.g.tasks {
			if err := d.run(gt, o); err != nil {
				return fmt.Errorf("graph %#x: %w", uint64(t.g.h), err)
			}
		}
	}
	return nil
}

func (d *SimDevice) runKernel(k *simKernel, o kernels.Options) (err error) {
	d.executed.Add(1)
	if k.fault != "" {
		return aclErr(k.name, ACLErrAICoreException, "node %d (%s): %s", k.node.ID, k.node.Op, k.fault)
	}
	defer func() {
		if r := recover(); r != nil {
			err = aclErr(k.name, ACLErrAICoreException, "node %d (%s): kernel panic: %v", k.node.ID, k.node.Op, r)
		}
	}()
	if err := k.fn(k.node, k.dst, k.args, o); err != nil {
		return aclErr(k.name, ACLErrAICoreException, "node %d (%s): %v", k.node.ID, k.node.Op, err)
	}
	return nil
}

// Stats implements Device.
func (d *SimDevice) Stats() DeviceStats {
	s := DeviceStats{
		APICalls:        d.apiCalls.Load(),
		KernelLaunches:  d.launches.Load(),
		KernelsExecuted: d.executed.Load(),
		Captures:        d.captures.Load(),
		GraphLaunches:   d.graphLaunches.Load(),
		GraphsDestroyed: d.destroyed.Load(),
		BytesH2D:        d.bytesH2D.Load(),
		BytesD2H:        d.bytesD2H.Load(),
		DispatchNS:      d.dispatchNS.Load(),
		SyncNS:          d.syncNS.Load(),
	}
	for _, n := range d.npus {
		s.Pools = append(s.Pools, n.pool.Stats())
	}
	return s
}

// LiveGraphs returns the number of captured graphs not yet destroyed.
func (d *SimDevice) LiveGraphs() int {
	total := 0
	for _, n := range d.npus {
		n.mu.Lock()
		total += len(n.graphs)
		n.mu.Unlock()
	}
	return total
}
