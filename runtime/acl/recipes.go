//go:build cann

package acl

/*
#include <stdlib.h>
#include <string.h>
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

// This file turns a device.KernelLaunch (an IR op on ggml-order
// descriptors) into the aclnn calls that compute it, the way ggml-cann's
// compute_forward does for the same op (ggml-cann's supports_op and compute_forward):
//
//	rms_norm   aclnnRmsNorm(x, gamma = ones, eps, y, rstd in the workspace)
//	add, mul   aclnnAdd (alpha 1) / aclnnMul, broadcasting dims of size 1
//	scale      aclnnMuls
//	silu       aclnnSilu
//	cont, cpy  aclnnInplaceCopy, or aclnnCast when the dtypes differ
//	cast       aclnnCast
//	soft_max   [aclnnMuls scale] [aclnnAdd mask] aclnnSoftmax(dim -1), the
//	           scaled copy in the workspace
//	mul_mat    aclnnMm / aclnnBatchMatMul / aclnnMatmul on b and the
//	           transposed view of a (GQA broadcast by an inserted dim);
//	           q8_0/q4_0: aclnnCast(b → f16) aclnnWeightQuantBatchMatmulV2
//	           aclnnCast(→ f32), the f16 staging in the workspace
//	get_rows   aclnnGatherV2(dim 0) [+ aclnnCast from f16 | aclnnMul to
//	           dequantise q8_0 rows], staging in the workspace
//	set_rows   [aclnnCast rows → f16] aclnnInplaceIndexCopy(dim 0)
//	rope       the angles as rope_cache makes them (aclnnGatherV2 …),
//	           aclnnCos aclnnSin, aclnnRotaryPositionEmbedding
//
// Descriptors (aclTensor, aclScalar) are made once per distinct launch and
// cached; only the two-phase calls are repeated by an eager relaunch.

// opTable names the operators the binding dispatches.
var opTable = []struct {
	id   C.int
	name string
}{
	{C.IRT_RMSNORM, "aclnnRmsNorm"}, {C.IRT_ADDRMSNORM, "aclnnAddRmsNorm"}, {C.IRT_MUL, "aclnnMul"}, {C.IRT_INPLACEMUL, "aclnnInplaceMul"},
	{C.IRT_MULS, "aclnnMuls"}, {C.IRT_ADD, "aclnnAdd"}, {C.IRT_MATMUL, "aclnnMatmul"}, {C.IRT_MM, "aclnnMm"},
	{C.IRT_BMM, "aclnnBatchMatMul"}, {C.IRT_WQBMM, "aclnnWeightQuantBatchMatmulV2"},
	{C.IRT_ROPE, "aclnnRotaryPositionEmbedding"}, {C.IRT_SOFTMAX, "aclnnSoftmax"}, {C.IRT_SILU, "aclnnSilu"},
	{C.IRT_COS, "aclnnCos"}, {C.IRT_SIN, "aclnnSin"}, {C.IRT_SWIGLU, "aclnnSwiGlu"}, {C.IRT_CAST, "aclnnCast"},
	{C.IRT_INPLACECOPY, "aclnnInplaceCopy"}, {C.IRT_INDEXCOPY, "aclnnInplaceIndexCopy"},
	{C.IRT_GATHERV2, "aclnnGatherV2"}, {C.IRT_FIA, "aclnnFusedInferAttentionScoreV2"},
	{C.IRT_INPLACEADD, "aclnnInplaceAdd"}, {C.IRT_DIV, "aclnnDiv"}, {C.IRT_CAT, "aclnnCat"},
}

func opName(op C.int) string {
	for _, o := range opTable {
		if o.id == op {
			return o.name
		}
	}
	return fmt.Sprintf("op%d", int(op))
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
	recipe, ok := recipes[k.Op]
	if !ok {
		return nil, b.fail(device.ACLErrFeatureNotSupport, "the binding has no aclnn recipe for op %q", k.Op)
	}
	if err := recipe(b); err != nil {
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

// builder collects the calls of one launch.
type builder struct {
	d    *Device
	n    *npu
	st   *stream
	k    *device.KernelLaunch
	p    *prepared
	used int64 // bytes of the planned workspace used for staging
}

func (b *builder) fail(code device.ACLCode, format string, args ...any) error {
	return bindingError(b.k.Name, b.p.label, code, format, args...)
}

func (b *builder) unsupported(format string, args ...any) error {
	return b.fail(device.ACLErrFeatureNotSupport, format, args...)
}

func (b *builder) attrF(key string, def float64) float64 {
	if v, ok := b.k.Attrs.Float(key); ok {
		return v
	}
	if v, ok := b.k.Attrs.Int(key); ok {
		return float64(v)
	}
	return def
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
func (b *builder) tensor(dt C.int, shape, strides []int64, offset int64, addr device.Ptr) (C.uintptr_t, error) {
	if len(shape) != len(strides) || len(shape) == 0 || len(shape) > 8 {
		return 0, b.fail(device.ACLErrParamInvalid, "descriptor with shape %v strides %v", shape, strides)
	}
	storage := offset + 1
	for i := range shape {
		if shape[i] < 0 || strides[i] < 0 {
			return 0, b.fail(device.ACLErrParamInvalid, "negative shape or stride: %v / %v", shape, strides)
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
		return 0, newError("aclCreateTensor", b.p.label, C.ACLNN_ERR_PARAM_INVALID)
	}
	b.p.tensors = append(b.p.tensors, t)
	return t, nil
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
func (b *builder) desc(role string, t device.TensorDesc, dims int) (C.uintptr_t, error) {
	shape, strides, ok := aclOrder(t)
	dt, known := aclDType(t.DType)
	if !ok || !known {
		return 0, b.unsupported("%s: a %s tensor with strides %v has no aclTensor form", role, t.DType, t.Nb)
	}
	for len(shape) > dims {
		if shape[0] != 1 {
			return 0, b.fail(device.ACLErrParamInvalid, "%s: dims %v do not fit %d ACL dims", role, t.Ne, dims)
		}
		shape, strides = shape[1:], strides[1:]
	}
	return b.tensor(dt, shape, strides, 0, t.Addr)
}

// temp carves n bytes of staging from the planned workspace, aligned to
// align bytes.
func (b *builder) temp(role string, n, align int64) (device.Ptr, error) {
	off := (b.used + align - 1) / align * align
	if off+n > b.k.WorkspaceBytes {
		return 0, b.fail(device.ACLErrMemoryAllocation, "%s staging needs %d B at offset %d of the workspace; the plan has %d B", role, n, off, b.k.WorkspaceBytes)
	}
	b.used = off + n
	return b.k.Workspace + device.Ptr(off), nil
}

func (b *builder) scalarF32(v float32) (C.uintptr_t, error) {
	s := C.irt_aclCreateScalarF32(C.float(v))
	if s == 0 {
		return 0, newError("aclCreateScalar", b.p.label, C.ACLNN_ERR_PARAM_INVALID)
	}
	b.p.scalars = append(b.p.scalars, s)
	return s, nil
}

func (b *builder) call(op C.int, args C.irt_args) {
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
func (b *builder) table(key string, data []byte) (device.Ptr, error) {
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
		off, _, err := n.pool.Alloc(size)
		if err != nil {
			return 0, fmt.Errorf("acl: %s: table %s: %w", b.p.label, key, err)
		}
		t = &table{dev: n.base + device.Ptr(off), host: host, size: size}
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
// key, allocated from the pool once. Kernels that share it run in stream
// order and each writes it before reading it.
func (b *builder) buffer(key string, size int64) (device.Ptr, error) {
	n := b.n
	n.cmu.Lock()
	defer n.cmu.Unlock()
	if p, ok := n.tables[key]; ok {
		return p, nil
	}
	off, _, err := n.pool.Alloc(size)
	if err != nil {
		return 0, fmt.Errorf("acl: %s: scratch %s: %w", b.p.label, key, err)
	}
	p := n.base + device.Ptr(off)
	n.tables[key] = p
	return p, nil
}

func onesF32(n int64) []byte {
	b := make([]byte, 4*n)
	for i := int64(0); i < n; i++ {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(1))
	}
	return b
}

var recipes = map[ir.Op]func(*builder) error{
	ir.OpRMSNorm: rmsNorm,
	ir.OpAdd:     func(b *builder) error { return binaryOp(b, C.IRT_ADD) },
	ir.OpMul:     func(b *builder) error { return binaryOp(b, C.IRT_MUL) },
	ir.OpScale:   scaleOp,
	ir.OpSilu:    func(b *builder) error { return unaryOp(b, C.IRT_SILU) },
	ir.OpCont:    copyOp,
	ir.OpCpy:     copyOp,
	ir.OpCast:    copyOp,
	ir.OpSoftMax: softMax,
	ir.OpMulMat:  mulMat,
	ir.OpGetRows: getRows,
	ir.OpSetRows: setRows,
	ir.OpRope:    rope,
}

func (b *builder) inputs(n int) error {
	if len(b.k.Inputs) < n {
		return b.fail(device.ACLErrParamInvalid, "%s takes %d operands, got %d", b.k.Op, n, len(b.k.Inputs))
	}
	return nil
}

func rmsNorm(b *builder) error {
	if err := b.inputs(1); err != nil {
		return err
	}
	x, y := b.k.Inputs[0], b.k.Output
	xt, err := b.desc("x", x, 4)
	if err != nil {
		return err
	}
	yt, err := b.desc("y", y, 4)
	if err != nil {
		return err
	}
	if x.DType != ir.F32 {
		return b.unsupported("rms_norm of %s: the gamma table of ones is f32", x.DType)
	}
	ne0, rows := x.Ne[0], x.Ne[1]*x.Ne[2]*x.Ne[3]
	ones, err := b.table(fmt.Sprintf("ones_f32[%d]", ne0), onesF32(ne0))
	if err != nil {
		return err
	}
	gt, err := b.tensor(C.ACL_FLOAT, []int64{ne0}, []int64{1}, 0, ones)
	if err != nil {
		return err
	}
	// rstd lands at the start of the workspace, as the lowering plans it.
	rstd, err := b.temp("rstd", 4*rows, 4)
	if err != nil {
		return err
	}
	rshape := []int64{x.Ne[3], x.Ne[2], x.Ne[1], 1}
	rt, err := b.tensor(C.ACL_FLOAT, rshape, contiguous(rshape), 0, rstd)
	if err != nil {
		return err
	}
	a := tensors(xt, gt, yt, rt)
	a.f[0] = C.double(b.attrF("eps", 1e-6))
	b.call(C.IRT_RMSNORM, a)
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

func binaryOp(b *builder, op C.int) error {
	if err := b.inputs(2); err != nil {
		return err
	}
	x, y, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	if !broadcastable(out, x) || !broadcastable(out, y) {
		return b.unsupported("%v and %v broadcast to %v only by repetition, which ACL broadcasting does not express", x.Ne, y.Ne, out.Ne)
	}
	xt, err := b.desc("self", x, 4)
	if err != nil {
		return err
	}
	yt, err := b.desc("other", y, 4)
	if err != nil {
		return err
	}
	ot, err := b.desc("out", out, 4)
	if err != nil {
		return err
	}
	a := tensors(xt, yt, ot)
	if op == C.IRT_ADD {
		if a.s, err = b.scalarF32(1); err != nil {
			return err
		}
	}
	b.call(op, a)
	return nil
}

func unaryOp(b *builder, op C.int) error {
	if err := b.inputs(1); err != nil {
		return err
	}
	xt, err := b.desc("self", b.k.Inputs[0], 4)
	if err != nil {
		return err
	}
	ot, err := b.desc("out", b.k.Output, 4)
	if err != nil {
		return err
	}
	b.call(op, tensors(xt, ot))
	return nil
}

func scaleOp(b *builder) error {
	if err := b.inputs(1); err != nil {
		return err
	}
	if bias := b.attrF("bias", 0); bias != 0 {
		return b.unsupported("scale with bias %g: aclnnMuls has none (the CANN backend requires bias 0)", bias)
	}
	xt, err := b.desc("self", b.k.Inputs[0], 4)
	if err != nil {
		return err
	}
	ot, err := b.desc("out", b.k.Output, 4)
	if err != nil {
		return err
	}
	a := tensors(xt, ot)
	if a.s, err = b.scalarF32(float32(b.attrF("scale", 1))); err != nil {
		return err
	}
	b.call(C.IRT_MULS, a)
	return nil
}

// copyOp: cont(x), cast(x) and cpy(src, dst) write operand 0 into the
// output (for cpy, the view of dst the result aliases).
func copyOp(b *builder) error {
	if err := b.inputs(1); err != nil {
		return err
	}
	src, dst := b.k.Inputs[0], b.k.Output
	if src.Ne != dst.Ne {
		// ggml_cont_2d and friends: the values are copied in the source's
		// element order into a contiguous destination of another shape,
		// which is the same memory as a contiguous tensor of the source's
		// shape.
		if prod(src.Ne[:]) != prod(dst.Ne[:]) || !dense(dst) {
			return b.unsupported("copy of %v into %v (strides %v): a reshaping copy needs a contiguous destination", src.Ne, dst.Ne, dst.Nb)
		}
		dst.Ne, dst.Nb = src.Ne, ir.ContiguousStrides(dst.DType, src.Ne)
	}
	st, err := b.desc("src", src, 4)
	if err != nil {
		return err
	}
	dt, err := b.desc("dst", dst, 4)
	if err != nil {
		return err
	}
	if src.DType == dst.DType {
		b.call(C.IRT_INPLACECOPY, tensors(dt, st))
		return nil
	}
	a := tensors(st, dt)
	ad, _ := aclDType(dst.DType)
	a.i[0] = C.int64_t(ad)
	b.call(C.IRT_CAST, a)
	return nil
}

func softMax(b *builder) error {
	if err := b.inputs(1); err != nil {
		return err
	}
	x, out := b.k.Inputs[0], b.k.Output
	if mb := b.attrF("max_bias", 0); mb != 0 {
		return b.unsupported("soft_max with ALiBi (max_bias %g) is not bound", mb)
	}
	scale := b.attrF("scale", 1)
	hasMask := len(b.k.Inputs) > 1
	cur, err := b.desc("self", x, 4)
	if err != nil {
		return err
	}
	if scale != 1 || hasMask {
		shape, _, _ := aclOrder(out)
		tmp, err := b.temp("scaled input", 4*prod(shape), 4)
		if err != nil {
			return err
		}
		tt, err := b.tensor(C.ACL_FLOAT, shape, contiguous(shape), 0, tmp)
		if err != nil {
			return err
		}
		if scale != 1 {
			a := tensors(cur, tt)
			if a.s, err = b.scalarF32(float32(scale)); err != nil {
				return err
			}
			b.call(C.IRT_MULS, a)
			if cur, err = b.tensor(C.ACL_FLOAT, shape, contiguous(shape), 0, tmp); err != nil {
				return err
			}
		}
		if hasMask {
			m := b.k.Inputs[1]
			// The mask may be padded beyond the rows of x (GGML_KQ_MASK_PAD).
			if m.Ne[0] != x.Ne[0] || m.Ne[1] < x.Ne[1] {
				return b.fail(device.ACLErrParamInvalid, "mask %v does not cover x %v", m.Ne, x.Ne)
			}
			m.Ne[1] = x.Ne[1]
			if !broadcastable(x, m) {
				return b.unsupported("mask %v broadcasts over %v only by repetition", m.Ne, x.Ne)
			}
			mt, err := b.desc("mask", m, 4)
			if err != nil {
				return err
			}
			dst, err := b.tensor(C.ACL_FLOAT, shape, contiguous(shape), 0, tmp)
			if err != nil {
				return err
			}
			a := tensors(cur, mt, dst)
			if a.s, err = b.scalarF32(1); err != nil {
				return err
			}
			b.call(C.IRT_ADD, a)
			if cur, err = b.tensor(C.ACL_FLOAT, shape, contiguous(shape), 0, tmp); err != nil {
				return err
			}
		}
	}
	ot, err := b.desc("out", out, 4)
	if err != nil {
		return err
	}
	a := tensors(cur, ot)
	a.i[0] = 3
	b.call(C.IRT_SOFTMAX, a)
	return nil
}

// mulMat: ggml's mul_mat(a, b) is out[n, m] = Σ_k a[k, n]·b[k, m] per
// batch, with a's batches broadcast over b's by repetition (GQA: b batch i
// reads a batch i / r). In ACL order that is out = b @ aᵀ, aᵀ being a
// strided view of a.
func mulMat(b *builder) error {
	if err := b.inputs(2); err != nil {
		return err
	}
	a, x, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	if !rows2D(a) && a.DType.Quantized() {
		return b.unsupported("%s mul_mat with a batched weight %v", a.DType, a.Ne)
	}
	if a.DType == ir.Q8_0 || a.DType == ir.Q4_0 {
		if b.d.quantMode() == QuantMatmulGGML {
			return quantMulMatGGML(b, a, x, out)
		}
		return quantMulMat(b, a, x, out)
	}
	as, ast, ok1 := aclOrder(a)
	xs, xst, ok2 := aclOrder(x)
	os, ost, ok3 := aclOrder(out)
	ad, okA := aclDType(a.DType)
	xd, okX := aclDType(x.DType)
	od, okO := aclDType(out.DType)
	if !ok1 || !ok2 || !ok3 || !okA || !okX || !okO {
		return b.unsupported("mul_mat of %s by %s", a.DType, x.DType)
	}
	// ggml multiplies an f16 matrix by f32 activations in f16: the
	// activations are converted to f16 (ggml-cpu's vec_dot_type of F16) and
	// the products accumulated in f32. The recipe does the same with
	// aclnnCast into device scratch and an f16 × f16 product with an f32
	// result, which aclnnMatmul allows; multiplying the f32 activations
	// directly would be more precise than the reference and so differ from
	// it.
	xAddr := x.Addr
	if a.DType == ir.F16 && x.DType == ir.F32 {
		n := prod(xs)
		scratch, err := b.buffer(fmt.Sprintf("f16 activations[%d]", n), 2*n)
		if err != nil {
			return err
		}
		in, err := b.tensor(C.ACL_FLOAT, xs, xst, 0, x.Addr)
		if err != nil {
			return err
		}
		st := contiguous(xs)
		out16, err := b.tensor(C.ACL_FLOAT16, xs, st, 0, scratch)
		if err != nil {
			return err
		}
		c := tensors(in, out16)
		c.i[0] = C.ACL_FLOAT16
		b.call(C.IRT_CAST, c)
		xst, xd, xAddr = st, C.ACL_FLOAT16, scratch
	}
	// Transposed weight: [.., N, K] -> [.., K, N].
	ats := []int64{as[0], as[1], as[3], as[2]}
	atst := []int64{ast[0], ast[1], ast[3], ast[2]}
	B3, B2, B3a, B2a := xs[0], xs[1], as[0], as[1]
	if B3a == 0 || B2a == 0 || B3%B3a != 0 || B2%B2a != 0 {
		return b.fail(device.ACLErrParamInvalid, "batches of a %v do not divide those of b %v", a.Ne, x.Ne)
	}
	cube := b.d.cubeMathType()
	op := C.int(C.IRT_MATMUL)
	var selfS, selfT, matS, matT, outS, outT []int64
	switch {
	case b.k.Name == "aclnnMm" && B3 == 1 && B2 == 1 && B3a == 1 && B2a == 1:
		op = C.IRT_MM
		selfS, selfT = xs[2:], xst[2:]
		matS, matT = ats[2:], atst[2:]
		outS, outT = os[2:], ost[2:]
	case b.k.Name == "aclnnBatchMatMul" && B3 == 1 && B3a == 1 && B2a == B2:
		op = C.IRT_BMM
		selfS, selfT = xs[1:], xst[1:]
		matS, matT = ats[1:], atst[1:]
		outS, outT = os[1:], ost[1:]
	case B3a == B3 && B2a == B2, B3a == 1 && B2a == 1, B3a == 1 && B2a == B2, B3a == B3 && B2a == 1:
		selfS, selfT, matS, matT, outS, outT = xs, xst, ats, atst, os, ost
	default:
		// Repetition along dim 2: split b's and out's batch into (B2a, r)
		// and give a a broadcast dim of 1 (ggml-cann inserts dims so).
		r := B2 / B2a
		if B3a != B3 && B3a != 1 {
			return b.unsupported("mul_mat repeating both batch dims (a %v, b %v)", a.Ne, x.Ne)
		}
		selfS = []int64{B3, B2a, r, xs[2], xs[3]}
		selfT = []int64{xst[0], r * xst[1], xst[1], xst[2], xst[3]}
		matS = []int64{B3a, B2a, 1, ats[2], ats[3]}
		matT = []int64{atst[0], atst[1], atst[1], atst[2], atst[3]}
		outS = []int64{os[0], B2a, r, os[2], os[3]}
		outT = []int64{ost[0], r * ost[1], ost[1], ost[2], ost[3]}
	}
	st, err := b.tensor(xd, selfS, selfT, 0, xAddr)
	if err != nil {
		return err
	}
	mt, err := b.tensor(ad, matS, matT, 0, a.Addr)
	if err != nil {
		return err
	}
	ot, err := b.tensor(od, outS, outT, 0, out.Addr)
	if err != nil {
		return err
	}
	args := tensors(st, mt, ot)
	args.i[0] = cube
	b.call(op, args)
	return nil
}

// quantMulMat is ggml-cann's weight-quant path: b cast to f16, a matmul
// against the repacked int8/int4 weight with its f16 scales as the
// antiquant scale (group 32), and the f16 result cast to f32.
func quantMulMat(b *builder, a, x, out device.TensorDesc) error {
	K, N, M := a.Ne[0], a.Ne[1], x.Ne[1]
	if a.Ne[2] != 1 || a.Ne[3] != 1 || x.Ne[2] != 1 || x.Ne[3] != 1 || x.Ne[0] != K || x.DType != ir.F32 || out.DType != ir.F32 {
		return b.unsupported("%s mul_mat of a %v by %s %v: 2-D f32 activations only", a.DType, a.Ne, x.DType, x.Ne)
	}
	w, err := b.shadow(a)
	if err != nil {
		return err
	}
	xs, xst, ok := aclOrder(x)
	if !ok {
		return b.unsupported("activations %v", x.Nb)
	}
	xt, err := b.tensor(C.ACL_FLOAT, xs[2:], xst[2:], 0, x.Addr)
	if err != nil {
		return err
	}
	x16, err := b.temp("f16 input", 2*M*K, 32)
	if err != nil {
		return err
	}
	y16, err := b.temp("f16 output", 2*M*N, 32)
	if err != nil {
		return err
	}
	x16t, err := b.tensor(C.ACL_FLOAT16, []int64{M, K}, []int64{K, 1}, 0, x16)
	if err != nil {
		return err
	}
	cast := tensors(xt, x16t)
	cast.i[0] = C.ACL_FLOAT16
	b.call(C.IRT_CAST, cast)

	wd := C.int(C.ACL_INT8)
	if a.DType == ir.Q4_0 {
		wd = C.ACL_INT4
	}
	x16in, err := b.tensor(C.ACL_FLOAT16, []int64{M, K}, []int64{K, 1}, 0, x16)
	if err != nil {
		return err
	}
	wt, err := b.tensor(wd, []int64{K, N}, []int64{1, K}, 0, w.quants)
	if err != nil {
		return err
	}
	st, err := b.tensor(C.ACL_FLOAT16, []int64{K / 32, N}, []int64{1, K / 32}, 0, w.scales)
	if err != nil {
		return err
	}
	y16t, err := b.tensor(C.ACL_FLOAT16, []int64{M, N}, []int64{N, 1}, 0, y16)
	if err != nil {
		return err
	}
	mm := tensors(x16in, wt, st, y16t)
	mm.i[0] = 32
	b.call(C.IRT_WQBMM, mm)

	y16in, err := b.tensor(C.ACL_FLOAT16, []int64{M, N}, []int64{N, 1}, 0, y16)
	if err != nil {
		return err
	}
	os, ost, _ := aclOrder(out)
	ot, err := b.tensor(C.ACL_FLOAT, os[2:], ost[2:], 0, out.Addr)
	if err != nil {
		return err
	}
	back := tensors(y16in, ot)
	back.i[0] = C.ACL_FLOAT
	b.call(C.IRT_CAST, back)
	return nil
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

func getRows(b *builder) error {
	if err := b.inputs(2); err != nil {
		return err
	}
	table, ids, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	if !rows2D(table) || !rows2D(ids) || ids.Ne[1] != 1 || !rows2D(out) || out.DType != ir.F32 {
		return b.unsupported("get_rows of %v by %v: one table and one id vector only", table.Ne, ids.Ne)
	}
	n, ne0 := ids.Ne[0], table.Ne[0]
	idt, err := b.desc("index", ids, 1)
	if err != nil {
		return err
	}
	ot, err := b.desc("out", out, 2)
	if err != nil {
		return err
	}
	switch table.DType {
	case ir.F32:
		tt, err := b.desc("self", table, 2)
		if err != nil {
			return err
		}
		a := tensors(tt, idt, ot)
		b.call(C.IRT_GATHERV2, a)
		return nil
	case ir.F16:
		tt, err := b.desc("self", table, 2)
		if err != nil {
			return err
		}
		tmp, err := b.temp("f16 rows", 2*n*ne0, 32)
		if err != nil {
			return err
		}
		gt, err := b.tensor(C.ACL_FLOAT16, []int64{n, ne0}, []int64{ne0, 1}, 0, tmp)
		if err != nil {
			return err
		}
		b.call(C.IRT_GATHERV2, tensors(tt, idt, gt))
		gin, err := b.tensor(C.ACL_FLOAT16, []int64{n, ne0}, []int64{ne0, 1}, 0, tmp)
		if err != nil {
			return err
		}
		c := tensors(gin, ot)
		c.i[0] = C.ACL_FLOAT
		b.call(C.IRT_CAST, c)
		return nil
	case ir.Q8_0:
		// Gather the rows' bytes, then dequantise them: int8 quants at byte
		// 2 of every 34-byte block times the f16 scale at byte 0.
		rowBytes, blocks := table.Nb[1], ne0/32
		if table.Nb[0] != 34 || rowBytes != blocks*34 {
			return b.unsupported("q8_0 table with strides %v", table.Nb)
		}
		tt, err := b.tensor(C.ACL_INT8, []int64{table.Ne[1], rowBytes}, []int64{rowBytes, 1}, 0, table.Addr)
		if err != nil {
			return err
		}
		tmp, err := b.temp("q8_0 rows", n*rowBytes, 32)
		if err != nil {
			return err
		}
		gt, err := b.tensor(C.ACL_INT8, []int64{n, rowBytes}, []int64{rowBytes, 1}, 0, tmp)
		if err != nil {
			return err
		}
		b.call(C.IRT_GATHERV2, tensors(tt, idt, gt))
		q, err := b.tensor(C.ACL_INT8, []int64{n, blocks, 32}, []int64{rowBytes, 34, 1}, 2, tmp)
		if err != nil {
			return err
		}
		s, err := b.tensor(C.ACL_FLOAT16, []int64{n, blocks, 1}, []int64{rowBytes / 2, 17, 1}, 0, tmp)
		if err != nil {
			return err
		}
		_, ost, _ := aclOrder(out)
		o3, err := b.tensor(C.ACL_FLOAT, []int64{n, blocks, 32}, []int64{ost[2], 32 * ost[3], ost[3]}, 0, out.Addr)
		if err != nil {
			return err
		}
		if b.d.quantMode() == QuantMatmulGGML {
			// ggml dequantises in f32 (d·q exact); int8 × f16 would
			// compute, and round, in f16. Widen the scales first.
			s32p, err := b.buffer(fmt.Sprintf("q8_0 row scales f32[%d]", n*blocks), 4*n*blocks)
			if err != nil {
				return err
			}
			s32, err := b.tensor(C.ACL_FLOAT, []int64{n, blocks, 1}, []int64{blocks, 1, 1}, 0, s32p)
			if err != nil {
				return err
			}
			b.cast(s, s32, C.ACL_FLOAT)
			s = s32
		}
		b.call(C.IRT_MUL, tensors(q, s, o3))
		return nil
	}
	return b.unsupported("get_rows from a %s table", table.DType)
}

func setRows(b *builder) error {
	if err := b.inputs(3); err != nil {
		return err
	}
	dst, src, idx := b.k.Inputs[0], b.k.Inputs[1], b.k.Inputs[2]
	if !rows2D(dst) || !rows2D(src) || !rows2D(idx) || idx.Ne[1] != 1 || idx.Ne[0] != src.Ne[1] || src.Ne[0] != dst.Ne[0] {
		return b.unsupported("set_rows of %v into %v by %v: one matrix and one index vector only", src.Ne, dst.Ne, idx.Ne)
	}
	n, ne0 := src.Ne[1], src.Ne[0]
	dt, err := b.desc("selfRef", dst, 2)
	if err != nil {
		return err
	}
	it, err := b.desc("index", idx, 1)
	if err != nil {
		return err
	}
	st, err := b.desc("source", src, 2)
	if err != nil {
		return err
	}
	if src.DType != dst.DType {
		dd, ok := aclDType(dst.DType)
		if !ok {
			return b.unsupported("set_rows into %s", dst.DType)
		}
		es := dst.DType.TypeSize()
		tmp, err := b.temp("cast rows", es*n*ne0, 32)
		if err != nil {
			return err
		}
		ct, err := b.tensor(dd, []int64{n, ne0}, []int64{ne0, 1}, 0, tmp)
		if err != nil {
			return err
		}
		c := tensors(st, ct)
		c.i[0] = C.int64_t(dd)
		b.call(C.IRT_CAST, c)
		if st, err = b.tensor(dd, []int64{n, ne0}, []int64{ne0, 1}, 0, tmp); err != nil {
			return err
		}
	}
	a := tensors(dt, it, st)
	a.i[0] = 0
	b.call(C.IRT_INDEXCOPY, a)
	return nil
}

// rope: aclnnRotaryPositionEmbedding takes full-width cos and sin tables;
// like ggml-cann the binding computes them on the device from the
// positions (so a captured graph recomputes them from each step's
// positions) with rope_cache's angles (builder.angles) [/ freq_factor of
// j's pair] [· freq_scale].
func rope(b *builder) error {
	if err := b.inputs(2); err != nil {
		return err
	}
	x, pos, out := b.k.Inputs[0], b.k.Inputs[1], b.k.Output
	D, T := x.Ne[0], x.Ne[2]
	var ff *device.TensorDesc
	if len(b.k.Inputs) > 2 {
		ff = &b.k.Inputs[2]
	}
	mode, err := b.ropeCheck(D)
	if err != nil {
		return err
	}
	switch {
	case x.Ne[3] != 1 || pos.DType != ir.I32 || pos.Ne[0] != T || !rows2D(pos) || pos.Ne[1] != 1:
		return b.unsupported("rope of %v at positions %s %v", x.Ne, pos.DType, pos.Ne)
	case x.DType != ir.F32 || out.DType != ir.F32:
		return b.unsupported("rope of %s: the cos/sin tables are f32", x.DType)
	}
	rt, err := b.scratchTables(T, D)
	if err != nil {
		return err
	}
	if err := b.angles(pos, ff, rt, mode); err != nil {
		return err
	}
	// x [D, H, T, 1] in ggml order is BSND = [1, T, H, D] in ACL order.
	xt, err := b.desc("x", x, 4)
	if err != nil {
		return err
	}
	ot, err := b.desc("out", out, 4)
	if err != nil {
		return err
	}
	return b.rope(x, xt, rt, aclRopeMode(mode), ot)
}

// mulMatAdd: the mul_mat recipe into the output, then the bias added in
// place (aclnnInplaceAdd, alpha 1), broadcast over the product.
func mulMatAdd(b *builder) error {
	if err := b.inputs(3); err != nil {
		return err
	}
	bias, out := b.k.Inputs[2], b.k.Output
	if !broadcastable(out, bias) {
		return b.unsupported("bias %v broadcasts over %v only by repetition", bias.Ne, out.Ne)
	}
	if err := mulMat(b); err != nil {
		return err
	}
	ot, err := b.desc("selfRef", out, 4)
	if err != nil {
		return err
	}
	bt, err := b.desc("other", bias, 4)
	if err != nil {
		return err
	}
	a := tensors(ot, bt)
	if a.s, err = b.scalarF32(1); err != nil {
		return err
	}
	b.call(C.IRT_INPLACEADD, a)
	return nil
}

// concat: aclnnCat of the operands along the dim (ACL order reverses the
// dims: ggml dim d is ACL dim 3-d of the 4-D descriptors).
func concat(b *builder) error {
	if err := b.inputs(1); err != nil {
		return err
	}
	if len(b.k.Inputs) > 16 {
		return b.unsupported("concat of %d tensors: a tensor list holds at most 16 here", len(b.k.Inputs))
	}
	d := b.attrI("dim", -1)
	if d < 0 || d > 3 {
		return b.fail(device.ACLErrParamInvalid, "concat dim %d", d)
	}
	ts := make([]C.uintptr_t, len(b.k.Inputs))
	for i, in := range b.k.Inputs {
		t, err := b.desc(fmt.Sprintf("tensors[%d]", i), in, 4)
		if err != nil {
			return err
		}
		ts[i] = t
	}
	l := C.irt_aclCreateTensorList(&ts[0], C.uint64_t(len(ts)))
	if l == 0 {
		return newError("aclCreateTensorList", b.p.label, C.ACLNN_ERR_PARAM_INVALID)
	}
	b.adopt(l, ts...)
	ot, err := b.desc("out", b.k.Output, 4)
	if err != nil {
		return err
	}
	a := tensors(ot)
	a.l[0] = l
	a.i[0] = C.int64_t(3 - d)
	b.call(C.IRT_CAT, a)
	return nil
}
