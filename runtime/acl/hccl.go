//go:build cann

package acl

/*
#include <stdlib.h>
#include "binding.h"
#include "hccl_binding.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"unsafe"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/target"
)

// This file is the binding of CANN's collective communication library
// (HCCL, libhccl.so; the HCCL API reference: HcclCommInitAll,
// HcclGetRootInfo, HcclCommInitRootInfo, HcclAllReduce, HcclAllGather,
// HcclReduceScatter, HcclSend, HcclRecv, HcclCommDestroy). The functions
// of IRT_HCCL_FUNCS (irtool_hccl.h) are resolved from libhccl.so
// in the directory of the loaded libascendcl.so; scripts/fakeacl.sh builds
// irtool's emulation of it next to the emulated runtime. A collective is a
// task of the stream it is enqueued on: inside a capture it is recorded
// and runs each time the graph does.

// HCCLLibrary is the file LoadHCCL opens, next to libascendcl.so.
const HCCLLibrary = "libhccl.so"

// RootInfoBytes (rootinfo.go) is irtool_hccl.h's HCCL_ROOT_INFO_BYTES:
// either array length is negative otherwise.
var (
	_ [RootInfoBytes - C.HCCL_ROOT_INFO_BYTES]struct{}
	_ [C.HCCL_ROOT_INFO_BYTES - RootInfoBytes]struct{}
)

var hcclLib struct {
	mu   sync.Mutex
	path string
	err  error
}

// LoadHCCL loads the CANN libraries (Load(nil) when none are loaded yet)
// and opens libhccl.so from the directory of libascendcl.so, once per
// process (Load already opens it when it is there).
func LoadHCCL() error {
	if Loaded() == nil {
		if err := Load(nil); err != nil {
			return err
		}
	}
	libs := Loaded()
	if len(libs) == 0 {
		return errors.New("acl: HCCL: the CANN libraries are not loaded")
	}
	return openHCCL(filepath.Join(filepath.Dir(libs[0]), HCCLLibrary))
}

// openHCCLNear opens libhccl.so next to libascendcl.so, libs[0], when it
// is there: Load calls it, so that the library is mapped while its
// directory exists.
func openHCCLNear(libs []string) {
	if len(libs) == 0 {
		return
	}
	p := filepath.Join(filepath.Dir(libs[0]), HCCLLibrary)
	if _, err := os.Stat(p); err == nil {
		openHCCL(p)
	}
}

// openHCCL opens path once per process.
func openHCCL(path string) error {
	hcclLib.mu.Lock()
	defer hcclLib.mu.Unlock()
	if hcclLib.path != "" {
		return hcclLib.err
	}
	hcclLib.path = path
	var buf [512]C.char
	cp := C.CString(hcclLib.path)
	defer C.free(unsafe.Pointer(cp))
	if C.irt_hccl_dlopen(cp, &buf[0], C.int(len(buf))) != 0 {
		hcclLib.err = fmt.Errorf("acl: loading %s: %s", hcclLib.path, C.GoString(&buf[0]))
	} else if m := C.irt_hccl_missing(); m != nil {
		hcclLib.err = fmt.Errorf("acl: %s is not exported by %s", C.GoString(m), hcclLib.path)
	}
	return hcclLib.err
}

// HCCLError is a failed HCCL call: its HcclResult and the runtime's error
// text read right after it on the same thread.
type HCCLError struct {
	Call string
	Code int
	Msg  string
	// Kernel names the launch (collective op and node), or "".
	Kernel string
}

var hcclResultNames = []string{"HCCL_SUCCESS", "HCCL_E_PARA", "HCCL_E_PTR", "HCCL_E_MEMORY", "HCCL_E_INTERNAL",
	"HCCL_E_NOT_SUPPORT", "HCCL_E_NOT_FOUND", "HCCL_E_UNAVAIL", "HCCL_E_SYSCALL", "HCCL_E_TIMEOUT",
	"HCCL_E_OPEN_FILE_FAILURE", "HCCL_E_TCP_CONNECT", "HCCL_E_ROCE_CONNECT", "HCCL_E_TCP_TRANSFER",
	"HCCL_E_ROCE_TRANSFER", "HCCL_E_RUNTIME", "HCCL_E_DRV", "HCCL_E_PROFILING", "HCCL_E_CCE", "HCCL_E_NETWORK",
	"HCCL_E_AGAIN", "HCCL_E_REMOTE", "HCCL_E_SUSPENDING"}

func (e *HCCLError) Error() string {
	name := fmt.Sprintf("code %d", e.Code)
	if e.Code >= 0 && e.Code < len(hcclResultNames) {
		name = hcclResultNames[e.Code]
	} else if e.Code == C.IRT_NOT_LOADED {
		name = "not loaded"
	}
	where := ""
	if e.Kernel != "" {
		where = " [" + e.Kernel + "]"
	}
	msg := e.Msg
	if msg == "" {
		msg = "(no message)"
	}
	return fmt.Sprintf("acl: %s%s: %s: %s", e.Call, where, name, msg)
}

// hcclError converts a non-zero HcclResult on the calling thread.
func hcclError(call, kernel string, rc C.int) error {
	msg := ""
	if rc == C.IRT_NOT_LOADED {
		msg = call + " is not exported by " + HCCLLibrary
	} else if m := C.irt_errmsg(); m != nil {
		msg = C.GoString(m)
	}
	return &HCCLError{Call: call, Code: int(rc), Msg: msg, Kernel: kernel}
}

// HcclGetRootInfo returns a new root info (HcclGetRootInfo): rank 0 makes
// it and hands it to the other ranks (a file, a socket), which pass it to
// HcclCommInitRootInfo.
func HcclGetRootInfo() ([]byte, error) {
	if err := LoadHCCL(); err != nil {
		return nil, err
	}
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	buf := C.malloc(C.size_t(RootInfoBytes))
	defer C.free(buf)
	if rc := C.irt_HcclGetRootInfo(buf); rc != 0 {
		return nil, hcclError("HcclGetRootInfo", "", rc)
	}
	return C.GoBytes(buf, C.int(RootInfoBytes)), nil
}

// ReleaseRootInfo gives up root, a root info this process made with
// HcclGetRootInfo and cannot hand to the other ranks (or is interrupted
// while they join): with irtool's emulator the ranks joining it fail at
// once with why and its shared memory segment is removed; CANN's root
// info ends with its process, so there it does nothing.
func ReleaseRootInfo(root []byte, why string) {
	if len(root) != RootInfoBytes || LoadHCCL() != nil {
		return
	}
	buf := C.CBytes(root)
	defer C.free(buf)
	cw := C.CString(why)
	defer C.free(unsafe.Pointer(cw))
	C.irt_hccl_release_root(buf, cw)
}

// Comm is one rank's HCCL communicator.
type Comm struct {
	group      string
	rank, size int
	device     int

	mu sync.Mutex
	h  C.uintptr_t // 0 once destroyed
}

// Group is the name of the collective group (the IR's group attribute)
// the communicator serves.
func (c *Comm) Group() string { return c.group }

// Rank is this rank's id in the communicator.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of ranks.
func (c *Comm) Size() int { return c.size }

// Device is the device id the rank runs on.
func (c *Comm) Device() int { return c.device }

// HcclCommInitAll makes the communicators of group over devices, one rank
// per device of this process (HcclCommInitAll): rank i runs on
// devices[i].
func HcclCommInitAll(group string, devices []int) ([]*Comm, error) {
	if err := LoadHCCL(); err != nil {
		return nil, err
	}
	if len(devices) < 1 || len(devices) > 64 {
		return nil, fmt.Errorf("acl: HcclCommInitAll: %d devices (1..64)", len(devices))
	}
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	devs := (*C.int32_t)(C.malloc(C.size_t(4 * len(devices))))
	defer C.free(unsafe.Pointer(devs))
	hs := (*C.uintptr_t)(C.malloc(C.size_t(8 * len(devices))))
	defer C.free(unsafe.Pointer(hs))
	ds := unsafe.Slice(devs, len(devices))
	for i, d := range devices {
		ds[i] = C.int32_t(d)
	}
	if rc := C.irt_HcclCommInitAll(C.uint32_t(len(devices)), devs, hs); rc != 0 {
		return nil, hcclError("HcclCommInitAll", "", rc)
	}
	out := make([]*Comm, len(devices))
	for i, h := range unsafe.Slice(hs, len(devices)) {
		out[i] = &Comm{group: group, rank: i, size: len(devices), device: devices[i], h: h}
	}
	return out, nil
}

// HcclCommInitRootInfo joins rank of the n-rank communicator of group
// described by root (HcclGetRootInfo's), on d's current device. It waits
// for every rank to join (HCCL_CONNECT_TIMEOUT).
func (d *Device) HcclCommInitRootInfo(group string, n, rank int, root []byte) (*Comm, error) {
	if err := LoadHCCL(); err != nil {
		return nil, err
	}
	if len(root) != RootInfoBytes {
		return nil, fmt.Errorf("acl: HcclCommInitRootInfo: root info of %d bytes, want %d", len(root), RootInfoBytes)
	}
	defer d.leave(d.enter())
	if _, err := d.bind("HcclCommInitRootInfo"); err != nil {
		return nil, err
	}
	buf := C.CBytes(root)
	defer C.free(buf)
	var h C.uintptr_t
	if rc := C.irt_HcclCommInitRootInfo(C.uint32_t(n), buf, C.uint32_t(rank), &h); rc != 0 {
		return nil, hcclError("HcclCommInitRootInfo", "", rc)
	}
	return &Comm{group: group, rank: rank, size: n, device: int(d.cur.Load()), h: h}, nil
}

// Destroy releases the communicator (HcclCommDestroy); a rank still
// waiting for this one at a collective then fails. Destroying twice is a
// no-op.
func (c *Comm) Destroy() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h == 0 {
		return nil
	}
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	if rc := C.irt_HcclCommDestroy(c.h); rc != 0 {
		return hcclError("HcclCommDestroy", "", rc)
	}
	c.h = 0
	return nil
}

func (c *Comm) handle(call string) (C.uintptr_t, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h == 0 {
		return 0, fmt.Errorf("acl: %s: communicator of group %s rank %d is destroyed", call, c.group, c.rank)
	}
	return c.h, nil
}

// hcclDType is HCCL's HcclDataType of dt.
func hcclDType(dt ir.DType) (C.int, error) {
	switch dt {
	case ir.F32:
		return C.HCCL_DATA_TYPE_FP32, nil
	case ir.F16:
		return C.HCCL_DATA_TYPE_FP16, nil
	case ir.BF16:
		return C.HCCL_DATA_TYPE_BFP16, nil
	case ir.I32:
		return C.HCCL_DATA_TYPE_INT32, nil
	case ir.I16:
		return C.HCCL_DATA_TYPE_INT16, nil
	case ir.I8:
		return C.HCCL_DATA_TYPE_INT8, nil
	case ir.I64:
		return C.HCCL_DATA_TYPE_INT64, nil
	}
	return 0, fmt.Errorf("dtype %s has no HcclDataType", dt)
}

// hcclReduceOp is HCCL's HcclReduceOp of the IR's reduce attribute.
func hcclReduceOp(op string) (C.int, error) {
	switch op {
	case "", "sum":
		return C.HCCL_REDUCE_SUM, nil
	case "prod":
		return C.HCCL_REDUCE_PROD, nil
	case "max":
		return C.HCCL_REDUCE_MAX, nil
	case "min":
		return C.HCCL_REDUCE_MIN, nil
	}
	return 0, fmt.Errorf("reduction %q has no HcclReduceOp", op)
}

// Collective is one HCCL call: Op is ir.OpAllReduce (Count elements of
// Send summed into Recv), ir.OpAllGather (Count elements of each rank's
// Send, concatenated in rank order into Recv), ir.OpReduceScatter (Count
// elements of the sum into Recv: rank r's block r of Send), ir.OpSend
// (Count elements of Send to rank Peer) or ir.OpRecv (Count elements from
// rank Peer into Recv).
type Collective struct {
	Op         ir.Op
	DType      ir.DType
	Reduce     string // "sum" (default), "prod", "max", "min"
	Count      int64
	Send, Recv device.Ptr
	Peer       int
	// Kernel names the launch in errors.
	Kernel string
}

// EnqueueCollective enqueues x on stream s of d's current device through
// communicator c (the calling rank's). Inside a capture it is recorded
// and runs each time the graph does.
func (d *Device) EnqueueCollective(c *Comm, x Collective, s device.Stream) error {
	if err := LoadHCCL(); err != nil {
		return err
	}
	defer d.leave(d.enter())
	call, ok := target.HCCLCalls[x.Op]
	if !ok {
		return fmt.Errorf("acl: %s is not an HCCL collective", x.Op)
	}
	n, err := d.bind(call)
	if err != nil {
		return err
	}
	st, err := d.stream(call, s)
	if err != nil {
		return err
	}
	if st.npu != n {
		return bindingError(call, x.Kernel, device.ACLErrParamInvalid, "stream of device %d used on device %d", st.npu.id, n.id)
	}
	if c.device != n.id {
		return fmt.Errorf("acl: %s: rank %d of group %s runs on device %d, the current device is %d", call, c.rank, c.group, c.device, n.id)
	}
	h, err := c.handle(call)
	if err != nil {
		return err
	}
	dt, err := hcclDType(x.DType)
	if err != nil {
		return fmt.Errorf("acl: %s: %w", call, err)
	}
	if x.Count <= 0 {
		return fmt.Errorf("acl: %s: count %d", call, x.Count)
	}
	cnt, sp, rp, sh := C.uint64_t(x.Count), C.uintptr_t(x.Send), C.uintptr_t(x.Recv), C.uintptr_t(st.h)
	var rc C.int
	switch x.Op {
	case ir.OpAllReduce, ir.OpReduceScatter:
		op, err := hcclReduceOp(x.Reduce)
		if err != nil {
			return fmt.Errorf("acl: %s: %w", call, err)
		}
		if x.Op == ir.OpAllReduce {
			rc = C.irt_HcclAllReduce(sp, rp, cnt, dt, op, h, sh)
		} else {
			rc = C.irt_HcclReduceScatter(sp, rp, cnt, dt, op, h, sh)
		}
	case ir.OpAllGather:
		rc = C.irt_HcclAllGather(sp, rp, cnt, dt, h, sh)
	case ir.OpSend:
		rc = C.irt_HcclSend(sp, cnt, dt, C.uint32_t(x.Peer), h, sh)
	case ir.OpRecv:
		rc = C.irt_HcclRecv(rp, cnt, dt, C.uint32_t(x.Peer), h, sh)
	}
	if rc != 0 {
		return hcclError(call, x.Kernel, rc)
	}
	d.launches.Add(1)
	return nil
}

// commsOf holds the communicators attached to each Device (AttachComm),
// by group.
var commsOf sync.Map // *Device -> *sync.Map (group -> *Comm)

// AttachComm makes c the communicator Launch uses for the collective
// nodes of c's group: a KernelLaunch of ir.OpAllReduce, ir.OpAllGather,
// ir.OpReduceScatter, ir.OpSend or ir.OpRecv becomes the HCCL call on the
// launch's stream (so a captured segment records it).
func (d *Device) AttachComm(c *Comm) {
	m, _ := commsOf.LoadOrStore(d, &sync.Map{})
	m.(*sync.Map).Store(c.group, c)
}

// DetachComms forgets the communicators attached to d (they are not
// destroyed).
func (d *Device) DetachComms() { commsOf.Delete(d) }

func (d *Device) comm(group string) *Comm {
	m, ok := commsOf.Load(d)
	if !ok {
		return nil
	}
	c, _ := m.(*sync.Map).Load(group)
	cc, _ := c.(*Comm)
	return cc
}

// launchCollective is Launch for a collective node: the HCCL call of its
// group's communicator on its operands, which must be contiguous; an
// all_gather or reduce_scatter splits its outermost non-trivial dim into
// equal parts (HCCL's flat rank-order layout).
func (d *Device) launchCollective(s device.Stream, k *device.KernelLaunch) error {
	kern := fmt.Sprintf("%s node %d", k.Op, k.Node)
	group := k.Attrs.Group()
	c := d.comm(group)
	if c == nil {
		return fmt.Errorf("acl: %s: no HCCL communicator of group %q is attached to this device (AttachComm)", kern, group)
	}
	if r := k.Attrs.Ranks(); r != int64(c.size) {
		return fmt.Errorf("acl: %s: over %d ranks on a communicator of %d", kern, r, c.size)
	}
	contiguous := func(t device.TensorDesc) bool {
		return ir.ContiguousStrides(t.DType, t.Ne) == t.Nb
	}
	if !contiguous(k.Output) || (k.Op != ir.OpRecv && (len(k.Inputs) < 1 || !contiguous(k.Inputs[0]))) {
		return fmt.Errorf("acl: %s: the HCCL lowering needs contiguous operands", kern)
	}
	elems := func(t device.TensorDesc) int64 {
		n := int64(1)
		for _, v := range t.Ne {
			n *= v
		}
		return n
	}
	x := Collective{Op: k.Op, DType: k.Output.DType, Reduce: k.Attrs.Reduce(), Recv: k.Output.Addr, Peer: int(k.Attrs.Peer()), Kernel: kern}
	if k.Op != ir.OpRecv {
		x.Send = k.Inputs[0].Addr
	}
	switch k.Op {
	case ir.OpAllReduce, ir.OpRecv:
		x.Count = elems(k.Output)
	case ir.OpSend:
		x.Count = elems(k.Inputs[0])
		x.Recv = 0
	case ir.OpReduceScatter:
		dim := k.Attrs.GatherDim()
		for i := dim + 1; i < ir.MaxDims; i++ {
			if k.Output.Ne[i] != 1 {
				return fmt.Errorf("acl: %s: reduce_scatter along dim %d under a dim of size %d is not lowered to HCCL (HCCL scatters whole buffers)", kern, dim, k.Output.Ne[i])
			}
		}
		x.Count = elems(k.Output)
	case ir.OpAllGather:
		if k.Attrs.Counts() != nil {
			return fmt.Errorf("acl: %s: uneven all_gather (counts) is not lowered to HCCL", kern)
		}
		x.Count = elems(k.Inputs[0])
		dim := k.Attrs.GatherDim()
		outer := int64(1)
		for i := dim + 1; i < ir.MaxDims; i++ {
			outer *= k.Inputs[0].Ne[i]
		}
		if outer > 1 {
			return d.gatherInner(c, x, k, dim, outer, s)
		}
	}
	if err := d.EnqueueCollective(c, x, s); err != nil {
		return err
	}
	if k.Op == ir.OpSend && k.Output.Addr != k.Inputs[0].Addr {
		// send's value is its input (eval's kernel copies it)
		return d.copyOnStream(k.Output.Addr, k.Inputs[0].Addr, k.Inputs[0].Bytes(), s)
	}
	return nil
}

// copyOnStream enqueues a device-to-device aclrtMemcpyAsync on s.
func (d *Device) copyOnStream(dst, src device.Ptr, n int64, s device.Stream) error {
	defer d.leave(d.enter())
	if _, err := d.bind("aclrtMemcpyAsync"); err != nil {
		return err
	}
	st, err := d.stream("aclrtMemcpyAsync", s)
	if err != nil {
		return err
	}
	if rc := C.irt_d2d_async(C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), C.uintptr_t(st.h)); rc != 0 {
		return newError("aclrtMemcpyAsync", "", int32(rc))
	}
	return nil
}

// gatherInner is an all_gather along inner dim dim of k's input (outer
// blocks above it): HCCL gathers the ranks' whole inputs into k's
// workspace, rank after rank, then one device copy per (outer block,
// rank) puts each rank's block at its place along dim in the result.
func (d *Device) gatherInner(c *Comm, x Collective, k *device.KernelLaunch, dim int64, outer int64, s device.Stream) error {
	in := k.Inputs[0]
	part := in.Bytes()
	if k.Workspace == 0 || k.WorkspaceBytes < part*int64(c.size) {
		return fmt.Errorf("acl: %s: all_gather along inner dim %d needs a workspace of %d B, the plan gives %d B", x.Kernel, dim, part*int64(c.size), k.WorkspaceBytes)
	}
	x.Recv = k.Workspace
	if err := d.EnqueueCollective(c, x, s); err != nil {
		return err
	}
	block := part / outer // the bytes of dims 0..dim of one rank's input
	for o := range outer {
		for r := range int64(c.size) {
			src := k.Workspace + device.Ptr(r*part+o*block)
			dst := k.Output.Addr + device.Ptr(o*block*int64(c.size)+r*block)
			if err := d.copyOnStream(dst, src, block, s); err != nil {
				return err
			}
		}
	}
	return nil
}
