//go:build cann

package acl

/*
#include "binding.h"
*/
import "C"

import (
	"fmt"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/device"
)

// Quantised weights. The device memory the runtime fills holds ggml blocks
// (what the simulated device computes on); aclnnWeightQuantBatchMatmulV2
// wants CANN's split layout: all quants of the matrix, row after row, then
// all f16 scales (ggml-cann's set_tensor for Q4_0/Q8_0). The binding
// keeps a repacked shadow per weight, made when a kernel using the weight
// is first prepared: the blocks are read back (aclrtMemcpy), repacked on
// the host (RepackQ8_0, RepackQ4_0) and written to a block of the pool.
// Synchronous copies are illegal in a GLOBAL capture, so the first launch
// of a quantised matmul must happen outside one (prefill runs eagerly by
// default, which does it).

type shadowWeight struct {
	quants, scales device.Ptr
}

func (b *builder) shadow(a device.TensorDesc) (shadowWeight, error) {
	K, N := a.Ne[0], a.Ne[1]
	if K%32 != 0 {
		return shadowWeight{}, b.unsupported("%s weight with %d columns (not a multiple of 32)", a.DType, K)
	}
	blockBytes := a.DType.TypeSize()
	rowBytes := K / 32 * blockBytes
	if a.Nb[0] != blockBytes || a.Nb[1] != rowBytes {
		return shadowWeight{}, b.unsupported("non-contiguous %s weight (nb %v)", a.DType, a.Nb)
	}
	key := fmt.Sprintf("shadow %s %#x [%d,%d]", a.DType, uint64(a.Addr), K, N)
	n := b.n
	n.cmu.Lock()
	defer n.cmu.Unlock()
	if p, ok := n.tables[key]; ok {
		return shadowWeight{quants: p, scales: p + device.Ptr(quantBytes(a.DType, K*N))}, nil
	}
	b.d.mu.Lock()
	strict := n.strict
	b.d.mu.Unlock()
	if strict > 0 {
		return shadowWeight{}, b.fail(device.ACLErrCaptureModeNotSupport,
			"the %s weight at %#x must be repacked for aclnnWeightQuantBatchMatmulV2 before its first captured use: launch it once eagerly (e.g. run prefill eagerly) first", a.DType, uint64(a.Addr))
	}
	blocks := make([]byte, N*rowBytes)
	if rc := C.irt_d2h(hostPtr(blocks), C.uintptr_t(a.Addr), C.size_t(len(blocks))); rc != 0 {
		return shadowWeight{}, newError("aclrtMemcpy", b.p.label, int32(rc))
	}
	var packed []byte
	var err error
	switch a.DType {
	case ir.Q8_0:
		packed, err = RepackQ8_0(blocks, K, N)
	case ir.Q4_0:
		packed, err = RepackQ4_0(blocks, K, N)
	default:
		err = fmt.Errorf("no repacking for %s", a.DType)
	}
	if err != nil {
		return shadowWeight{}, b.unsupported("%v", err)
	}
	off, _, err := n.pool.Alloc(int64(len(packed)))
	if err != nil {
		return shadowWeight{}, fmt.Errorf("acl: %s: repacked weight: %w", b.p.label, err)
	}
	p := n.base + device.Ptr(off)
	if rc := C.irt_h2d(C.uintptr_t(p), hostPtr(packed), C.size_t(len(packed))); rc != 0 {
		n.pool.Free(off)
		return shadowWeight{}, newError("aclrtMemcpy", b.p.label, int32(rc))
	}
	b.d.bytesD2H.Add(int64(len(blocks)))
	b.d.bytesH2D.Add(int64(len(packed)))
	n.tables[key] = p
	return shadowWeight{quants: p, scales: p + device.Ptr(quantBytes(a.DType, K*N))}, nil
}
