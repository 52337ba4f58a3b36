// Package device is the device layer of the runtime: an interface shaped
// like Ascend's ACL runtime (Device, with streams, device memory and graph
// capture), a simulated Ascend device that implements it with the CPU
// kernels of package eval, the device memory pool and the LRU cache of
// captured graphs. The cgo binding to the real libascendcl (runtime/acl)
// implements the same interface; the program session (runtime/program)
// runs lowered programs on any of them.
package device

import (
	"errors"
	"fmt"

	"github.com/irtool/irtool/ir"
)

// This file declares the device interface: an interface shaped
// like Ascend's ACL runtime (aclrt* and aclmdlRI* calls), so that the
// simulated device (simdevice.go) and a real binding to libascendcl
// implement the same calls and the layers above (the graph cache, the
// program session) cannot tell them apart. The names follow ACL one to one;
// see the CANN runtime API reference (hiascend.com) for the calls and their documented rules.

// Ptr is a device address, as aclrtMalloc returns it. 0 is the null pointer.
// Addresses are plain numbers: adding a byte offset to a pointer gives the
// address of a byte inside the same allocation, as on real hardware.
type Ptr uint64

// Stream is a stream handle (aclrtStream). DefaultStream is the implicit
// stream of the current device, which aclrtSetDevice creates.
type Stream uint64

// DefaultStream is the current device's default stream (ACL's nullptr
// stream). ACL forbids capturing on it (error 107031).
const DefaultStream Stream = 0

// GraphHandle names a captured model run instance (aclmdlRI).
type GraphHandle uint64

// CaptureMode is aclmdlRICaptureMode: which callers the capture restricts.
type CaptureMode int

const (
	// CaptureGlobal forbids unsafe calls (sync memcpy/memset, malloc,
	// free) from every caller while any stream of the device captures. It
	// is what ggml-cann uses.
	CaptureGlobal CaptureMode = 0
	// CaptureThreadLocal restricts only the capturing thread. Go has no
	// thread identity, so the simulated device enforces it as
	// CaptureGlobal (stricter, never looser).
	CaptureThreadLocal CaptureMode = 1
	// CaptureRelaxed restricts nobody (ggml-cuda's choice).
	CaptureRelaxed CaptureMode = 2
)

// String is ACL's name of the mode.
func (m CaptureMode) String() string {
	switch m {
	case CaptureGlobal:
		return "ACL_MODEL_RI_CAPTURE_MODE_GLOBAL"
	case CaptureThreadLocal:
		return "ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL"
	case CaptureRelaxed:
		return "ACL_MODEL_RI_CAPTURE_MODE_RELAXED"
	}
	return fmt.Sprintf("CaptureMode(%d)", int(m))
}

// TensorDesc describes one kernel operand on the device the way ggml does:
// element type, dims (Ne[0] innermost), byte strides and the device address
// of element [0,0,0,0]. ACL's own descriptor (shape and strides reversed,
// strides in elements, a storage offset) is derived from it one to one
// (CANN docs, aclCreateTensor and the two-phase aclnn calls), so a device needs nothing more.
type TensorDesc struct {
	DType ir.DType
	Ne    [ir.MaxDims]int64
	Nb    [ir.MaxDims]int64
	Addr  Ptr
}

// Bytes is the extent of the tensor in bytes: from its first element to
// one past its last (ggml_nbytes).
func (t TensorDesc) Bytes() int64 {
	return ir.Layout{Ne: t.Ne, Nb: t.Nb}.Extent(t.DType)
}

// KernelLaunch is one aclnn operator call: the two-phase
// aclnnXxxGetWorkspaceSize + aclnnXxx pair, described by the IR op it
// computes, its static parameters (op params), its operand descriptors and
// its workspace.
type KernelLaunch struct {
	Name   string   // the aclnn operator, e.g. "aclnnRmsNorm"
	Op     ir.Op    // the IR op whose kernel computes it
	Attrs  ir.Attrs // op params
	Inputs []TensorDesc
	Output TensorDesc
	// Extra are aclnn operands that are not IR operands (RMSNorm's gamma
	// table and rstd output): the device checks their addresses and the
	// graph cache matches on them, but the shared kernels do not use them.
	Extra          []TensorDesc
	Workspace      Ptr // planned workspace, 0 when none
	WorkspaceBytes int64
	// Node is the IR node the kernel computes, for error messages only.
	Node int
}

// KernelNode returns the node a kernel of the table is called with for a
// launch: the op, its params and the operand types taken from the
// descriptors (kernels read attributes from it, never data).
func KernelNode(k *KernelLaunch) *ir.Node {
	n := &ir.Node{ID: k.Node, Op: k.Op, Attrs: k.Attrs, Name: k.Name, Layer: -1, Type: descType(k.Output)}
	n.Args = make([]*ir.Node, len(k.Inputs))
	for i, in := range k.Inputs {
		n.Args[i] = &ir.Node{ID: -1, Op: ir.OpInput, Type: descType(in), Layer: -1}
	}
	return n
}

func descType(t TensorDesc) ir.Type {
	var sh ir.Shape
	for i, n := range t.Ne {
		sh[i] = ir.C(n)
	}
	return ir.Type{DType: t.DType, Shape: sh}
}

// Device is the ACL runtime surface the program executor and the graph
// cache use. Every method is one ACL call; errors are *ACLError values
// carrying ACL's code.
//
// Ordering follows ACL: work enqueued on a stream (Launch, the *Async
// copies, ExecuteAsync) runs in order on that stream, asynchronously with
// the host; SynchronizeStream waits for it and reports the first execution
// error. Between CaptureBegin and CaptureEnd a stream records what is
// enqueued instead of running it.
type Device interface {
	// SetDevice binds device id to this handle (aclrtSetDevice) and
	// creates its default stream.
	SetDevice(id int) error
	// DeviceCount is aclrtGetDeviceCount.
	DeviceCount() int
	// CreateStream and DestroyStream are aclrtCreateStream/DestroyStream.
	CreateStream() (Stream, error)
	DestroyStream(s Stream) error

	// Malloc and Free are aclrtMalloc/aclrtFree on the current device.
	Malloc(size int64) (Ptr, error)
	Free(p Ptr) error
	// MallocHost returns page-locked host memory (aclrtMallocHost), the
	// only host memory async copies may use during a capture.
	MallocHost(size int64) ([]byte, error)
	FreeHost(b []byte) error
	// MemInfo is aclrtGetMemInfo: free and total device memory.
	MemInfo() (free, total int64, err error)

	// MemcpyH2D and MemcpyD2H are synchronous aclrtMemcpy calls.
	MemcpyH2D(dst Ptr, src []byte) error
	MemcpyD2H(dst []byte, src Ptr) error
	// MemcpyH2DAsync and MemcpyD2HAsync are aclrtMemcpyAsync on stream s.
	MemcpyH2DAsync(dst Ptr, src []byte, s Stream) error
	MemcpyD2HAsync(dst []byte, src Ptr, s Stream) error

	// Launch enqueues one kernel on stream s.
	Launch(s Stream, k *KernelLaunch) error

	// CaptureBegin and CaptureEnd are aclmdlRICaptureBegin/End.
	CaptureBegin(s Stream, mode CaptureMode) error
	CaptureEnd(s Stream) (GraphHandle, error)
	// ExecuteAsync is aclmdlRIExecuteAsync: enqueue a captured graph.
	ExecuteAsync(g GraphHandle, s Stream) error
	// DestroyGraph is aclmdlRIDestroy.
	DestroyGraph(g GraphHandle) error

	// SynchronizeStream and SynchronizeDevice block until the work
	// enqueued so far has run.
	SynchronizeStream(s Stream) error
	SynchronizeDevice() error

	// Stats returns the device's counters so far.
	Stats() DeviceStats
}

// DeviceStats are a device's counters.
type DeviceStats struct {
	APICalls        int64 `json:"api_calls"`        // host API calls of any kind
	KernelLaunches  int64 `json:"kernel_launches"`  // Launch calls (eager and captured)
	KernelsExecuted int64 `json:"kernels_executed"` // kernels the device ran, replays included
	Captures        int64 `json:"captures"`         // successful CaptureEnd calls
	GraphLaunches   int64 `json:"graph_launches"`   // ExecuteAsync calls
	GraphsDestroyed int64 `json:"graphs_destroyed"` // DestroyGraph calls that succeeded
	BytesH2D        int64 `json:"bytes_h2d"`
	BytesD2H        int64 `json:"bytes_d2h"`
	// DispatchNS is the host time spent inside non-blocking API calls
	// (everything but the synchronisations): the host cost of feeding the
	// device, which graph replay removes.
	DispatchNS int64 `json:"dispatch_ns"`
	// SyncNS is the host time spent waiting in synchronisations.
	SyncNS int64 `json:"sync_ns"`
	// Pool is the memory pool of each device.
	Pools []PoolStats `json:"pools,omitempty"`
}

// Sub returns the counters accumulated since an earlier snapshot (pool
// statistics are taken from s, not subtracted).
func (s DeviceStats) Sub(before DeviceStats) DeviceStats {
	return DeviceStats{
		APICalls:        s.APICalls - before.APICalls,
		KernelLaunches:  s.KernelLaunches - before.KernelLaunches,
		KernelsExecuted: s.KernelsExecuted - before.KernelsExecuted,
		Captures:        s.Captures - before.Captures,
		GraphLaunches:   s.GraphLaunches - before.GraphLaunches,
		GraphsDestroyed: s.GraphsDestroyed - before.GraphsDestroyed,
		BytesH2D:        s.BytesH2D - before.BytesH2D,
		BytesD2H:        s.BytesD2H - before.BytesD2H,
		DispatchNS:      s.DispatchNS - before.DispatchNS,
		SyncNS:          s.SyncNS - before.SyncNS,
		Pools:           s.Pools,
	}
}

// ACLCode is an ACL runtime error code (aclError).
type ACLCode int32

// The ACL codes the runtime produces (rt_error_codes.h and the capture
// codes of the CANN runtime reference).
const (
	ACLSuccess                     ACLCode = 0
	ACLErrParamInvalid             ACLCode = 107000 // ACL_ERROR_RT_PARAM_INVALID
	ACLErrInvalidDeviceID          ACLCode = 107001 // ACL_ERROR_RT_INVALID_DEVICEID
	ACLErrContextNull              ACLCode = 107002 // ACL_ERROR_RT_CONTEXT_NULL: no aclrtSetDevice yet
	ACLErrInvalidHandle            ACLCode = 107017 // ACL_ERROR_RT_INVALID_HANDLE
	ACLErrStreamCaptured           ACLCode = 107027 // ACL_ERROR_RT_STREAM_CAPTURED
	ACLErrStreamNotCaptured        ACLCode = 107029 // ACL_ERROR_RT_STREAM_NOT_CAPTURED
	ACLErrCaptureModeNotSupport    ACLCode = 107030 // ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT
	ACLErrStreamCaptureImplicit    ACLCode = 107031 // ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT: default stream
	ACLErrStreamCaptureUnmatched   ACLCode = 107036 // ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED: End without Begin
	ACLErrModelRunning             ACLCode = 107037 // model still running, cannot destroy
	ACLErrFeatureNotSupport        ACLCode = 207000 // ACL_ERROR_RT_FEATURE_NOT_SUPPORT
	ACLErrMemoryAllocation         ACLCode = 207001 // ACL_ERROR_RT_MEMORY_ALLOCATION
	ACLErrMemoryFree               ACLCode = 207002 // ACL_ERROR_RT_MEMORY_FREE
	ACLErrNoStreamResource         ACLCode = 207008 // ACL_ERROR_RT_NO_STREAM_RESOURCE
	ACLErrAICoreException          ACLCode = 507015 // ACL_ERROR_RT_AICORE_EXCEPTION: a kernel faulted
	ACLErrStreamCaptureInvalidated ACLCode = 507903 // ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED
)

var aclCodeNames = map[ACLCode]string{
	ACLSuccess:                     "ACL_SUCCESS",
	ACLErrParamInvalid:             "ACL_ERROR_RT_PARAM_INVALID",
	ACLErrInvalidDeviceID:          "ACL_ERROR_RT_INVALID_DEVICEID",
	ACLErrContextNull:              "ACL_ERROR_RT_CONTEXT_NULL",
	ACLErrInvalidHandle:            "ACL_ERROR_RT_INVALID_HANDLE",
	ACLErrStreamCaptured:           "ACL_ERROR_RT_STREAM_CAPTURED",
	ACLErrStreamNotCaptured:        "ACL_ERROR_RT_STREAM_NOT_CAPTURED",
	ACLErrCaptureModeNotSupport:    "ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT",
	ACLErrStreamCaptureImplicit:    "ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT",
	ACLErrStreamCaptureUnmatched:   "ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED",
	ACLErrModelRunning:             "ACL_ERROR_RT_MODEL_RUNNING",
	ACLErrFeatureNotSupport:        "ACL_ERROR_RT_FEATURE_NOT_SUPPORT",
	ACLErrMemoryAllocation:         "ACL_ERROR_RT_MEMORY_ALLOCATION",
	ACLErrMemoryFree:               "ACL_ERROR_RT_MEMORY_FREE",
	ACLErrNoStreamResource:         "ACL_ERROR_RT_NO_STREAM_RESOURCE",
	ACLErrAICoreException:          "ACL_ERROR_RT_AICORE_EXCEPTION",
	ACLErrStreamCaptureInvalidated: "ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED",
}

// String is ACL's constant name, or the number.
func (c ACLCode) String() string {
	if s, ok := aclCodeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("aclError(%d)", int32(c))
}

// ACLError is a failed ACL call: the call, ACL's code and the message
// aclGetRecentErrMsg would return.
type ACLError struct {
	Call string
	Code ACLCode
	Msg  string
}

// Error gives the call, the ACL code with its name, and the message.
func (e *ACLError) Error() string {
	return fmt.Sprintf("%s: error %d (%s): %s", e.Call, int32(e.Code), e.Code, e.Msg)
}

func aclErr(call string, code ACLCode, format string, args ...any) *ACLError {
	return &ACLError{Call: call, Code: code, Msg: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the ACL code carried by err (anywhere in its chain), or
// ACLSuccess when err is nil, or -1 when err carries none.
func ErrorCode(err error) ACLCode {
	if err == nil {
		return ACLSuccess
	}
	var e *ACLError
	if errors.As(err, &e) {
		return e.Code
	}
	return -1
}

// WeightUse says which kernels read a weight placed on the device: the
// weight-quant matmuls (mul_mat, mul_mat_add, mul_mat_id) or get_rows.
type WeightUse struct {
	Matmul, Rows bool
}

// WeightPlacer is implemented by a device whose kernels read quantised
// weights in a layout of their own (runtime/acl: what
// aclnnWeightQuantBatchMatmulV2 takes, converted by gguf/wqconv). A
// session calls PlaceWeight once per weight, when it has written the
// weight's ggml bytes (data) at t.Addr, so that the device converts them
// then and never at a launch.
type WeightPlacer interface {
	PlaceWeight(t TensorDesc, data []byte, use WeightUse) error
}

// WeightTaker is implemented by a WeightPlacer that can hold a quantised
// weight in its own layouts alone, its ggml blocks never written to the
// device. TakeWeight converts data (the blocks of t, whose Addr it
// ignores) for use and returns the device address that names the weight
// in kernel descriptors from then on, or 0 when the device needs the
// blocks (the session then writes them and calls PlaceWeight).
// DropWeight frees what TakeWeight placed for t (t.Addr the address it
// returned).
type WeightTaker interface {
	TakeWeight(t TensorDesc, data []byte, use WeightUse) (Ptr, error)
	DropWeight(t TensorDesc) error
}
