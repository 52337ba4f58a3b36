//go:build cann

package acl

/*
#include "binding.h"
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/runtime/device"
)

// DequantizeRows expands an N×K q8_0 or q4_0 matrix of ggml blocks to
// float32, value = f16 scale × quant as ggml's dequantize_row_q8_0 and
// dequantize_row_q4_0 (quant − 8 for q4_0): exact in float32.
func DequantizeRows(t ir.DType, blocks []byte, K, N int64) ([]float32, error) {
	bs := t.TypeSize()
	if (t != ir.Q8_0 && t != ir.Q4_0) || K%32 != 0 || int64(len(blocks)) != N*K/32*bs {
		return nil, fmt.Errorf("dequantize %s: %d bytes for a %d×%d matrix", t, len(blocks), N, K)
	}
	out := make([]float32, N*K)
	for i := int64(0); i < N*K/32; i++ {
		blk := blocks[bs*i : bs*i+bs]
		d := gguf.F16ToF32(binary.LittleEndian.Uint16(blk))
		o := out[32*i : 32*i+32]
		if t == ir.Q8_0 {
			for j := range 32 {
				o[j] = d * float32(int8(blk[2+j]))
			}
			continue
		}
		for j := range 16 {
			o[j] = d * float32(int(blk[2+j]&0x0f)-8)
			o[j+16] = d * float32(int(blk[2+j]>>4)-8)
		}
	}
	return out, nil
}

// dequantised returns the f32 copy of quantised weight a (N rows of K),
// made on the host from the blocks read back and uploaded once per weight,
// as the repacked shadow of aclnnWeightQuantBatchMatmulV2 is.
func (b *builder) dequantised(a device.TensorDesc) device.Ptr {
	if b.err != nil {
		return 0
	}
	p, err := b.dequantise(a)
	b.setErr(err)
	return p
}

func (b *builder) dequantise(a device.TensorDesc) (device.Ptr, error) {
	K, N := a.Ne[0], a.Ne[1]
	if K%32 != 0 {
		return 0, b.unsupported("%s weight with %d columns (not a multiple of 32)", a.DType, K)
	}
	blockBytes := a.DType.TypeSize()
	rowBytes := K / 32 * blockBytes
	if a.Nb[0] != blockBytes || a.Nb[1] != rowBytes {
		return 0, b.unsupported("non-contiguous %s weight (nb %v)", a.DType, a.Nb)
	}
	key := fmt.Sprintf("f32 %s %#x [%d,%d]", a.DType, uint64(a.Addr), K, N)
	n := b.n
	n.cmu.Lock()
	defer n.cmu.Unlock()
	if p, ok := n.tables[key]; ok {
		return p, nil
	}
	b.d.mu.Lock()
	strict := n.strict
	b.d.mu.Unlock()
	if strict > 0 {
		return 0, b.fail(device.ACLErrCaptureModeNotSupport,
			"the %s weight at %#x must be dequantised before its first captured use: launch it once eagerly (e.g. run prefill eagerly) first", a.DType, uint64(a.Addr))
	}
	blocks := make([]byte, N*rowBytes)
	if rc := C.irt_d2h(hostPtr(blocks), C.uintptr_t(a.Addr), C.size_t(len(blocks))); rc != 0 {
		return 0, newError("aclrtMemcpy", b.p.label, int32(rc))
	}
	vals, err := DequantizeRows(a.DType, blocks, K, N)
	if err != nil {
		return 0, b.unsupported("%v", err)
	}
	raw := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	off, _, err := n.pool.Alloc(int64(len(raw)))
	if err != nil {
		return 0, fmt.Errorf("acl: %s: dequantised weight: %w", b.p.label, err)
	}
	p := n.base + device.Ptr(off)
	if rc := C.irt_h2d(C.uintptr_t(p), hostPtr(raw), C.size_t(len(raw))); rc != 0 {
		n.pool.Free(off)
		return 0, newError("aclrtMemcpy", b.p.label, int32(rc))
	}
	b.d.bytesD2H.Add(int64(len(blocks)))
	b.d.bytesH2D.Add(int64(len(raw)))
	n.tables[key] = p
	return p, nil
}

type shadowWeight struct {
	quants, scales device.Ptr
}

func (b *builder) shadow(a device.TensorDesc) shadowWeight {
	if b.err != nil {
		return shadowWeight{}
	}
	w, err := b.repack(a)
	b.setErr(err)
	return w
}

func (b *builder) repack(a device.TensorDesc) (shadowWeight, error) {
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
