//go:build cann

package acl

/*
#include <stdlib.h>
#include "binding.h"
*/
import "C"

import (
	"container/list"
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/device"
)

// opName is the name of operator op of IRT_ACLNN_OPS
// (irtool_acl.h), the one list of the operators the binding calls.
func opName(op C.int) string {
	if n := C.irt_op_name(op); n != nil {
		return C.GoString(n)
	}
	return fmt.Sprintf("op%d", int(op))
}

// opNames are the names of every operator of IRT_ACLNN_OPS, in its order.
func opNames() []string {
	names := make([]string, C.IRT_NOPS)
	for i := range names {
		names[i] = opName(C.int(i))
	}
	return names
}

// aclDType is the aclDataType of an IR dtype (CANN docs, aclCreateTensor and the two-phase aclnn calls).
func aclDType(t ir.DType) (C.int, bool) {
	switch t {
	case ir.F32:
		return C.ACL_FLOAT, true
	case ir.F16:
		return C.ACL_FLOAT16, true
	case ir.BF16:
		return C.ACL_BF16, true
	case ir.I8:
		return C.ACL_INT8, true
	case ir.I16:
		return C.ACL_INT16, true
	case ir.I32:
		return C.ACL_INT32, true
	case ir.I64:
		return C.ACL_INT64, true
	}
	return 0, false
}

type step struct {
	op   C.int
	name string
	args *C.irt_args // C memory, freed with the prepared kernel
}

// prepared is a launch turned into aclnn calls, with the objects it owns.
type prepared struct {
	key    uint64
	launch device.KernelLaunch
	attrs  string
	label  string
	steps  []step

	tensors, scalars, lists []C.uintptr_t
	arrays                  []C.uintptr_t // aclIntArray

	wsBase    device.Ptr // the planned workspace after the staging carved from it
	wsAvail   int64
	wsPlanned int64
	elem      *list.Element
}

func (p *prepared) destroy() {
	for _, l := range p.lists {
		C.irt_aclDestroyTensorList(l)
	}
	for _, t := range p.tensors {
		C.irt_aclDestroyTensor(t)
	}
	for _, s := range p.scalars {
		C.irt_aclDestroyScalar(s)
	}
	for _, a := range p.arrays {
		C.irt_aclDestroyIntArray(a)
	}
	for _, s := range p.steps {
		C.free(unsafe.Pointer(s.args))
	}
	*p = prepared{}
}

// kernelCache holds prepared kernels by launch, least recently used last.
type kernelCache struct {
	max   int
	byKey map[uint64][]*prepared
	lru   *list.List
}

func newKernelCache(max int) *kernelCache {
	return &kernelCache{max: max, byKey: map[uint64][]*prepared{}, lru: list.New()}
}

func (c *kernelCache) len() int { return c.lru.Len() }

func (c *kernelCache) find(key uint64, k *device.KernelLaunch, attrs string) *prepared {
	for _, p := range c.byKey[key] {
		if sameLaunch(&p.launch, k) && p.attrs == attrs {
			c.lru.MoveToFront(p.elem)
			return p
		}
	}
	return nil
}

func (c *kernelCache) add(p *prepared) {
	p.elem = c.lru.PushFront(p)
	c.byKey[p.key] = append(c.byKey[p.key], p)
	for c.max > 0 && c.lru.Len() > c.max {
		c.remove(c.lru.Back().Value.(*prepared))
	}
}

func (c *kernelCache) remove(p *prepared) {
	c.lru.Remove(p.elem)
	b := c.byKey[p.key]
	for i, q := range b {
		if q == p {
			b = append(b[:i], b[i+1:]...)
			break
		}
	}
	if len(b) == 0 {
		delete(c.byKey, p.key)
	} else {
		c.byKey[p.key] = b
	}
	p.destroy()
}

func (c *kernelCache) clear() {
	for c.lru.Len() > 0 {
		c.remove(c.lru.Front().Value.(*prepared))
	}
}

func sameLaunch(a, b *device.KernelLaunch) bool {
	if a.Name != b.Name || a.Op != b.Op || a.Output != b.Output || a.Workspace != b.Workspace ||
		a.WorkspaceBytes != b.WorkspaceBytes || len(a.Inputs) != len(b.Inputs) || a.Node != b.Node {
		return false
	}
	for i := range a.Inputs {
		if a.Inputs[i] != b.Inputs[i] {
			return false
		}
	}
	return true
}

func launchKey(k *device.KernelLaunch, attrs string) uint64 {
	h := uint64(14695981039346656037)
	mix := func(v uint64) {
		for i := 0; i < 8; i++ {
			h ^= v & 0xff
			h *= 1099511628211
			v >>= 8
		}
	}
	str := func(s string) {
		mix(uint64(len(s)))
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= 1099511628211
		}
	}
	desc := func(t device.TensorDesc) {
		mix(uint64(t.DType))
		for i := range t.Ne {
			mix(uint64(t.Ne[i]))
			mix(uint64(t.Nb[i]))
		}
		mix(uint64(t.Addr))
	}
	str(k.Name)
	str(string(k.Op))
	str(attrs)
	mix(uint64(k.Node))
	desc(k.Output)
	for _, in := range k.Inputs {
		desc(in)
	}
	mix(uint64(k.Workspace))
	mix(uint64(k.WorkspaceBytes))
	return h
}

func label(k *device.KernelLaunch) string {
	return fmt.Sprintf("%s, node %d (%s)", k.Name, k.Node, k.Op)
}

// prepare returns the cached aclnn calls of k, building them on a miss.
// The caller holds n.kmu.
func (d *Device) prepare(n *npu, st *stream, k *device.KernelLaunch) (*prepared, error) {
	attrs := k.Attrs.String()
	key := launchKey(k, attrs)
	if p := n.kernels.find(key, k, attrs); p != nil {
		return p, nil
	}
	p := &prepared{key: key, launch: *k, attrs: attrs, label: label(k), wsPlanned: k.WorkspaceBytes}
	p.launch.Inputs = append([]device.TensorDesc(nil), k.Inputs...)
	b := &builder{d: d, n: n, st: st, k: &p.launch, p: p}
	r, ok := recipes[k.Op]
	if !ok {
		return nil, b.fail(device.ACLErrFeatureNotSupport, "the binding has no aclnn recipe for op %q", k.Op)
	}
	if err := b.inputs(r.operands); err != nil {
		p.destroy()
		return nil, err
	}
	err := r.build(b)
	if err == nil {
		err = b.err // a recipe's result is its first error
	}
	if err != nil {
		p.destroy()
		return nil, err
	}
	for _, s := range p.steps {
		if C.irt_op_available(s.op) == 0 {
			p.destroy()
			return nil, b.fail(device.ACLErrFeatureNotSupport, "%s is not exported by the loaded CANN libraries", s.name)
		}
	}
	p.wsBase = k.Workspace + device.Ptr(b.used)
	p.wsAvail = k.WorkspaceBytes - b.used
	n.kernels.add(p)
	return p, nil
}

// builder collects the calls of one launch. Like a bufio.Writer it keeps
// the first error: every method that can fail (a descriptor, a scalar,
// staging, a table, a call) records its error and returns a zero value,
// and once an error is recorded every later method does nothing. A recipe
// is therefore the list of its aclnn calls followed by one `return b.err`;
// it returns early only to refuse an operand it cannot compute
// (b.unsupported, b.fail), which records that error too.
type builder struct {
	d    *Device
	n    *npu
	st   *stream
	k    *device.KernelLaunch
	p    *prepared
	used int64 // bytes of the planned workspace used for staging
	err  error // the first error, sticky
}

// setErr records err unless an error is recorded already, and returns the
// recorded one.
func (b *builder) setErr(err error) error {
	if b.err == nil {
		b.err = err
	}
	return b.err
}

func (b *builder) fail(code device.ACLCode, format string, args ...any) error {
	return b.setErr(bindingError(b.k.Name, b.p.label, code, format, args...))
}

func (b *builder) unsupported(format string, args ...any) error {
	return b.fail(device.ACLErrFeatureNotSupport, format, args...)
}

func (b *builder) attrI(key string, def int64) int64 {
	if v, ok := b.k.Attrs.Int(key); ok {
		return v
	}
	return def
}

// tensor makes an aclTensor: ACL-order shape and strides in elements, a
// storage offset in elements from addr, ND format and a 1-D storage shape
// covering the view (CANN docs, aclCreateTensor and the two-phase aclnn calls).
func (b *builder) tensor(dt C.int, shape, strides []int64, offset int64, addr device.Ptr) C.uintptr_t {
	if b.err != nil {
		return 0
	}
	if len(shape) != len(strides) || len(shape) == 0 || len(shape) > 8 {
		b.fail(device.ACLErrParamInvalid, "descriptor with shape %v strides %v", shape, strides)
		return 0
	}
	// CANN wants tensorData 32-byte aligned (aclCreateTensor): a view that
	// starts inside a buffer passes the aligned address below it and the
	// rest as a storage offset in elements.
	if mis := int64(addr % tensorAlign); mis != 0 {
		num, den := elemBytes(dt)
		if num == 0 || mis*den%num != 0 {
			b.fail(device.ACLErrParamInvalid, "a view at %#x is not a whole number of elements (dtype %d) past a %d-byte boundary", uint64(addr), int(dt), tensorAlign)
			return 0
		}
		addr -= device.Ptr(mis)
		offset += mis * den / num
	}
	storage := offset + 1
	for i := range shape {
		if shape[i] < 0 || strides[i] < 0 {
			b.fail(device.ACLErrParamInvalid, "negative shape or stride: %v / %v", shape, strides)
			return 0
		}
		if shape[i] == 0 {
			storage = 0
			break
		}
		storage += (shape[i] - 1) * strides[i]
	}
	st := []int64{storage}
	t := C.irt_aclCreateTensor((*C.int64_t)(unsafe.Pointer(&shape[0])), C.uint64_t(len(shape)), dt,
		(*C.int64_t)(unsafe.Pointer(&strides[0])), C.int64_t(offset), C.ACL_FORMAT_ND,
		(*C.int64_t)(unsafe.Pointer(&st[0])), 1, C.uintptr_t(addr))
	b.d.descriptorsMade.Add(1)
	if t == 0 {
		b.setErr(newError("aclCreateTensor", b.p.label, C.ACLNN_ERR_PARAM_INVALID))
		return 0
	}
	b.p.tensors = append(b.p.tensors, t)
	return t
}

// tensorAlign is the alignment aclCreateTensor's tensorData must have
// ("must be 32-byte aligned", CANN 9.0.0's page of aclCreateTensor).
const tensorAlign = 32

// elemBytes is the size of one element of aclDataType dt as num/den bytes
// (INT4: 1/2); 0 for a type the binding does not use.
func elemBytes(dt C.int) (num, den int64) {
	switch dt {
	case C.ACL_INT4:
		return 1, 2
	case C.ACL_INT8, C.ACL_UINT8, C.ACL_BOOL:
		return 1, 1
	case C.ACL_FLOAT16, C.ACL_BF16, C.ACL_INT16:
		return 2, 1
	case C.ACL_FLOAT, C.ACL_INT32:
		return 4, 1
	case C.ACL_INT64, C.ACL_DOUBLE:
		return 8, 1
	}
	return 0, 1
}

// aclOrder is a ggml descriptor in ACL order: dims and strides reversed,
// strides in elements.
func aclOrder(t device.TensorDesc) (shape, strides []int64, ok bool) {
	es := t.DType.TypeSize()
	if t.DType.Quantized() || es <= 0 {
		return nil, nil, false
	}
	shape, strides = make([]int64, 4), make([]int64, 4)
	for i := 0; i < 4; i++ {
		if t.Nb[i]%es != 0 {
			return nil, nil, false
		}
		shape[3-i], strides[3-i] = t.Ne[i], t.Nb[i]/es
	}
	return shape, strides, true
}

// desc makes the 4-D aclTensor of a ggml descriptor; trim drops leading
// (outer) dims so that the result has rank dims.
func (b *builder) desc(role string, t device.TensorDesc, dims int) C.uintptr_t {
	if b.err != nil {
		return 0
	}
	shape, strides, ok := aclOrder(t)
	dt, known := aclDType(t.DType)
	if !ok || !known {
		b.unsupported("%s: a %s tensor with strides %v has no aclTensor form", role, t.DType, t.Nb)
		return 0
	}
	for len(shape) > dims {
		if shape[0] != 1 {
			b.fail(device.ACLErrParamInvalid, "%s: dims %v do not fit %d ACL dims", role, t.Ne, dims)
			return 0
		}
		shape, strides = shape[1:], strides[1:]
	}
	return b.tensor(dt, shape, strides, 0, t.Addr)
}

// temp carves n bytes of staging from the planned workspace, aligned to
// align bytes.
func (b *builder) temp(role string, n, align int64) device.Ptr {
	if b.err != nil {
		return 0
	}
	off := (b.used + align - 1) / align * align
	if off+n > b.k.WorkspaceBytes {
		b.fail(device.ACLErrMemoryAllocation, "%s staging needs %d B at offset %d of the workspace; the plan has %d B", role, n, off, b.k.WorkspaceBytes)
		return 0
	}
	b.used = off + n
	return b.k.Workspace + device.Ptr(off)
}

// scalarU8 makes a UINT8 aclScalar owned by the prepared kernel.
func (b *builder) scalarU8(v uint8) C.uintptr_t {
	if b.err != nil {
		return 0
	}
	s := C.irt_aclCreateScalarU8(C.uint8_t(v))
	if s == 0 {
		b.setErr(newError("aclCreateScalar", b.p.label, C.ACLNN_ERR_PARAM_INVALID))
		return 0
	}
	b.p.scalars = append(b.p.scalars, s)
	return s
}

func (b *builder) scalarF32(v float32) C.uintptr_t {
	if b.err != nil {
		return 0
	}
	s := C.irt_aclCreateScalarF32(C.float(v))
	if s == 0 {
		b.setErr(newError("aclCreateScalar", b.p.label, C.ACLNN_ERR_PARAM_INVALID))
		return 0
	}
	b.p.scalars = append(b.p.scalars, s)
	return s
}

// call adds one aclnn call with its arguments (nothing after an error).
func (b *builder) call(op C.int, args C.irt_args) {
	if b.err != nil {
		return
	}
	a := (*C.irt_args)(C.calloc(1, C.size_t(unsafe.Sizeof(args))))
	*a = args
	b.p.steps = append(b.p.steps, step{op: op, name: opName(op), args: a})
}

func tensors(ts ...C.uintptr_t) C.irt_args {
	var a C.irt_args
	for i, t := range ts {
		a.t[i] = t
	}
	return a
}

func contiguous(shape []int64) []int64 {
	st := make([]int64, len(shape))
	s := int64(1)
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = s
		s *= shape[i]
	}
	return st
}

func prod(v []int64) int64 {
	p := int64(1)
	for _, x := range v {
		p *= x
	}
	return p
}

// table returns the device address of a constant table, uploading it
// with an async copy from the pinned staging on the launch stream: legal in
// a capture (pinned memory) and ordered before the kernels that read it.
func (b *builder) table(key string, data []byte) device.Ptr {
	if b.err != nil {
		return 0
	}
	p, err := b.upload(key, data)
	b.setErr(err)
	return p
}

func (b *builder) upload(key string, data []byte) (device.Ptr, error) {
	n := b.n
	n.cmu.Lock()
	defer n.cmu.Unlock()
	b.d.mu.Lock()
	capturing := b.st.capturing
	b.d.mu.Unlock()
	t, ok := n.consts[key]
	if ok && t.resident {
		return t.dev, nil
	}
	if !ok {
		size := int64(len(data))
		var host unsafe.Pointer
		switch {
		case n.stage != nil && n.stageUsed+size <= n.stageSize:
			host = unsafe.Add(n.stage, n.stageUsed)
			n.stageUsed += (size + 63) / 64 * 64
		case size > n.stageSize/4:
			// A table too large for the shared staging (the RoPE angles
			// of every position, P×D floats) gets its own pinned buffer,
			// kept like the staging until Close.
			var rc C.aclError
			host = C.irt_aclrtMallocHost(C.size_t(size), &rc)
			if rc != 0 {
				return 0, newError("aclrtMallocHost", b.p.label, int32(rc))
			}
			n.ownStages = append(n.ownStages, host)
		default:
			return 0, b.fail(device.ACLErrMemoryAllocation, "table %s (%d B) does not fit the %d B of pinned staging left (Options.ConstBytes)", key, size, n.stageSize-n.stageUsed)
		}
		dev, err := n.carve(size)
		if err != nil {
			return 0, fmt.Errorf("acl: %s: table %s: %w", b.p.label, key, err)
		}
		t = &table{dev: dev, host: host, size: size}
		copy(unsafe.Slice((*byte)(host), size), data)
		n.consts[key] = t
	}
	src := t.host
	if rc := C.irt_h2d_async(C.uintptr_t(t.dev), src, C.size_t(t.size), C.uintptr_t(b.st.h)); rc != 0 {
		return 0, newError("aclrtMemcpyAsync", b.p.label, int32(rc))
	}
	t.resident = !capturing
	return t.dev, nil
}

// buffer returns device scratch shared by every kernel asking for the same
// key, carved once from the device's table block (npu.carve, reserved at
// SetDevice; beyond it, a pool block): the tables one kernel makes for
// later ones (rope_cache's), and scratch the target's workspace rules do
// not plan yet. Kernels that share it run in stream order and each writes
// it before reading it. Scratch the plan holds is temp's, carved from the
// kernel's planned workspace (attention's scores,
// target.AttentionScoresBytes).
func (b *builder) buffer(key string, size int64) device.Ptr {
	if b.err != nil {
		return 0
	}
	n := b.n
	n.cmu.Lock()
	defer n.cmu.Unlock()
	if p, ok := n.tables[key]; ok {
		return p
	}
	p, err := n.carve(size)
	if err != nil {
		b.setErr(fmt.Errorf("acl: %s: scratch %s: %w", b.p.label, key, err))
		return 0
	}
	n.tables[key] = p
	return p
}

// ropeSlot returns the device tables of the rope_cache kernel writing
// cache, [T, D] (tablesAt), and names them by the cache's address for its
// consumers (ropeKey). Each rope_cache node keeps one slot, reused by
// every shape bucket: sized for Options.MaxTokens positions when set
// (compiler.DeviceMemory counts it in tables_bytes), so a longer prompt
// or another bucket allocates nothing; a larger T than the slot holds
// gets a new one.
func (b *builder) ropeSlot(cache device.TensorDesc) device.Ptr {
	if b.err != nil {
		return 0
	}
	T, D := cache.Ne[1], cache.Ne[0]
	size := 4 * (T + 3*T*D)
	n := b.n
	n.cmu.Lock()
	defer n.cmu.Unlock()
	key := fmt.Sprintf("rope_cache node %d slot [%d]", b.k.Node, D)
	p, ok := n.tables[key]
	if !ok || n.slotBytes[key] < size {
		c := size
		if m := b.d.opts.MaxTokens; m > T {
			c = 4 * (m + 3*m*D)
		}
		var err error
		if p, err = n.carve(c); err != nil {
			b.setErr(fmt.Errorf("acl: %s: rope tables: %w", b.p.label, err))
			return 0
		}
		n.tables[key], n.slotBytes[key] = p, c
	}
	// The writer names its tables at preparation, before the consumers
	// of this bucket are prepared (stream order).
	n.tables[ropeKey(cache)] = p
	return p
}

// scratchParts lays out f32 parts of one scratch block, each rounded up
// to 16 values (64 bytes).
type scratchParts struct{ sizes []int64 }

// part adds a part of n f32 values and returns its index.
func (s *scratchParts) part(n int64) int {
	s.sizes = append(s.sizes, (n+15)/16*16)
	return len(s.sizes) - 1
}

// scratchF32 takes one block of scratch (buffer) for the parts of s and
// returns the address of each part by index.
func (b *builder) scratchF32(key string, s *scratchParts) func(int) device.Ptr {
	offs := make([]int64, len(s.sizes)+1)
	for i, n := range s.sizes {
		offs[i+1] = offs[i] + n
	}
	buf := b.buffer(fmt.Sprintf("%s f32[%d]", key, offs[len(s.sizes)]), 4*offs[len(s.sizes)])
	return func(i int) device.Ptr { return buf + device.Ptr(4*offs[i]) }
}

func onesF32(n int64) []byte {
	b := make([]byte, 4*n)
	for i := int64(0); i < n; i++ {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(1))
	}
	return b
}

func (b *builder) inputs(n int) error {
	if len(b.k.Inputs) < n {
		return b.fail(device.ACLErrParamInvalid, "%s takes %d operands, got %d", b.k.Op, n, len(b.k.Inputs))
	}
	return nil
}

// broadcastable: ACL broadcasting needs each dim of b equal to a's or 1.
func broadcastable(a, b device.TensorDesc) bool {
	for i := range a.Ne {
		if b.Ne[i] != a.Ne[i] && b.Ne[i] != 1 {
			return false
		}
	}
	return true
}

// dense reports whether t's elements are packed in ggml order; the
// strides of dims of size 1 do not matter.
func dense(t device.TensorDesc) bool {
	want := ir.ContiguousStrides(t.DType, t.Ne)
	for i := range t.Ne {
		if t.Ne[i] != 1 && t.Nb[i] != want[i] {
			return false
		}
	}
	return true
}

func rows2D(t device.TensorDesc) bool { return t.Ne[2] == 1 && t.Ne[3] == 1 }

// vector1D is a weight [n, 1, 1, 1] as a 1-D aclTensor.
func (b *builder) vector1D(role string, t device.TensorDesc) C.uintptr_t {
	if t.Ne[1] != 1 || t.Ne[2] != 1 || t.Ne[3] != 1 {
		b.unsupported("%s %v: a vector is expected", role, t.Ne)
		return 0
	}
	return b.desc(role, t, 1)
}

// tensorList makes an aclTensorList of ts, which it then owns: destroying
// the list destroys them.
func (b *builder) tensorList(ts ...C.uintptr_t) C.uintptr_t {
	if b.err != nil {
		return 0
	}
	l := C.irt_aclCreateTensorList(&ts[0], C.uint64_t(len(ts)))
	if l == 0 {
		b.setErr(newError("aclCreateTensorList", b.p.label, C.ACLNN_ERR_PARAM_INVALID))
		return 0
	}
	b.p.lists = append(b.p.lists, l)
	for _, t := range ts {
		for i, x := range b.p.tensors {
			if x == t {
				b.p.tensors = append(b.p.tensors[:i], b.p.tensors[i+1:]...)
				break
			}
		}
	}
	return l
}

// intArray makes an aclIntArray owned by the prepared kernel.
func (b *builder) intArray(v ...int64) C.uintptr_t {
	if b.err != nil {
		return 0
	}
	a := C.irt_aclCreateIntArray((*C.int64_t)(unsafe.Pointer(&v[0])), C.uint64_t(len(v)))
	if a == 0 {
		b.setErr(newError("aclCreateIntArray", b.p.label, C.ACLNN_ERR_PARAM_INVALID))
		return 0
	}
	b.p.arrays = append(b.p.arrays, a)
	return a
}

// cast adds aclnnCast(src → dst), dst's dtype being to.
func (b *builder) cast(src, dst C.uintptr_t, to C.int) {
	a := tensors(src, dst)
	a.i[0] = C.int64_t(to)
	b.call(C.IRT_CAST, a)
}

func f32Bytes(vs ...float32) []byte {
	out := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}

// The aclnn calls by name, for the operators whose arguments are more
// than tensors (the others are b.op(C.IRT_..., tensors...)). Each makes
// its scalar after the tensors it is given, as the calls' argument order
// has it.

// op adds an operator call whose arguments are tensors only.
func (b *builder) op(op C.int, ts ...C.uintptr_t) { b.call(op, tensors(ts...)) }

// muls adds aclnnMuls(self, v, out).
func (b *builder) muls(self, out C.uintptr_t, v float32) {
	a := tensors(self, out)
	a.s = b.scalarF32(v)
	b.call(C.IRT_MULS, a)
}

// add adds aclnnAdd(self, other, alpha, out): out = self + alpha·other.
func (b *builder) add(self, other, out C.uintptr_t, alpha float32) {
	a := tensors(self, other, out)
	a.s = b.scalarF32(alpha)
	b.call(C.IRT_ADD, a)
}

// inplaceAdd adds aclnnInplaceAdd(selfRef, other, alpha).
func (b *builder) inplaceAdd(self, other C.uintptr_t, alpha float32) {
	a := tensors(self, other)
	a.s = b.scalarF32(alpha)
	b.call(C.IRT_INPLACEADD, a)
}

// expand adds aclnnExpand(self, size, out): self broadcast to size.
func (b *builder) expand(self, out C.uintptr_t, size ...int64) {
	a := tensors(self, out)
	a.s = b.intArray(size...)
	b.call(C.IRT_EXPAND, a)
}

// bitwiseAndScalar adds aclnnBitwiseAndScalar(self, v, out) with a UINT8
// v.
func (b *builder) bitwiseAndScalar(self, out C.uintptr_t, v uint8) {
	a := tensors(self, out)
	a.s = b.scalarU8(v)
	b.call(C.IRT_BITWISEANDSCALAR, a)
}

// geScalar adds aclnnGeScalar(self, v, out): out = self ≥ v.
func (b *builder) geScalar(self, out C.uintptr_t, v float32) {
	a := tensors(self, out)
	a.s = b.scalarF32(v)
	b.call(C.IRT_GESCALAR, a)
}

// maskedFill adds aclnnInplaceMaskedFillScalar(selfRef, mask, v).
func (b *builder) maskedFill(self, mask C.uintptr_t, v float32) {
	a := tensors(self, mask)
	a.s = b.scalarF32(v)
	b.call(C.IRT_MASKEDFILL, a)
}

// matmul adds aclnnMatmul, aclnnMm or aclnnBatchMatMul (op) with the
// device's cubeMathType.
func (b *builder) matmul(op C.int, self, mat2, out C.uintptr_t) {
	a := tensors(self, mat2, out)
	a.i[0] = b.d.cubeMathType()
	b.call(op, a)
}

// wqbmm adds aclnnWeightQuantBatchMatmulV2(x, weight, antiquantScale,
// antiquantOffset (0: none), y) with antiquantGroupSize group (recipes
// call it through wqbmmSplit).
func (b *builder) wqbmm(x, w, scale, offset, y C.uintptr_t, group int64) {
	a := tensors(x, w, scale, offset, y)
	a.i[0] = C.int64_t(group)
	b.call(C.IRT_WQBMM, a)
}

// withDim adds an operator call whose one integer argument is a dim
// (aclnnSoftmax, aclnnGatherV2, aclnnInplaceIndexCopy, aclnnSwiGlu).
func (b *builder) withDim(op C.int, dim int64, ts ...C.uintptr_t) {
	a := tensors(ts...)
	a.i[0] = C.int64_t(dim)
	b.call(op, a)
}

// gather adds aclnnGatherV2(self, dim 0, index, out): out row i = self row
// index[i].
func (b *builder) gather(self, index, out C.uintptr_t) {
	b.withDim(C.IRT_GATHERV2, 0, self, index, out)
}

// indexCopy adds aclnnInplaceIndexCopy(selfRef, dim 0, index, source):
// selfRef row index[i] = source row i.
func (b *builder) indexCopy(self, index, source C.uintptr_t) {
	b.withDim(C.IRT_INDEXCOPY, 0, self, index, source)
}
