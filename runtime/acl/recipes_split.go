//go:build cann

package acl

/*
#include "binding.h"
*/
import "C"

import (
	"github.com/irtool/irtool/gguf/wqconv"
	"github.com/irtool/irtool/runtime/device"
	"github.com/irtool/irtool/target"
)

// operand is an aclTensor still to be made: a recipe describes a call's
// tensors by their views, and a split call makes one descriptor per chunk.
type operand struct {
	dt            C.int
	shape, stride []int64 // ACL order, elements
	offset        int64   // elements from addr
	addr          device.Ptr
}

func (b *builder) make(o operand) C.uintptr_t {
	return b.tensor(o.dt, o.shape, o.stride, o.offset, o.addr)
}

// columns is o narrowed to columns [n0, n0+n) of its last dim.
func (o operand) columns(n0, n int64) operand {
	l := len(o.shape) - 1
	o.shape = append(append([]int64{}, o.shape[:l]...), n)
	o.offset += n0 * o.stride[l]
	return o
}

// wqbmmSplit adds the aclnnWeightQuantBatchMatmulV2 calls of
// y[m, n] = x[m, k] @ ((w[k, n] + offset) * scale): every WQBMM call a
// recipe makes goes through it, so each keeps the operator's Atlas A2/A3
// limits (target/limits.go, docs/CANN-CONSTRAINTS.md). n is split into
// chunks of at most target.WQBMMMaxDim columns, each call reading its
// columns of w, scale and offset (nil: none) and writing its columns of y
// in place (a strided view, as llama.cpp's CANN backend does); group is the
// converted layout's antiquantGroupSize (0 when one group covers k). k
// above the limit is refused: the target already keeps such nodes on the
// host.
func (b *builder) wqbmmSplit(x, w operand, scale, offset *operand, y operand, group int64) error {
	k := w.shape[0]
	if k < 1 || k > target.WQBMMMaxDim {
		return b.unsupported("aclnnWeightQuantBatchMatmulV2 with k = %d outside [1, %d] (Atlas A2/A3)", k, target.WQBMMMaxDim)
	}
	for _, c := range target.WQBMMChunks(w.shape[1]) {
		var off C.uintptr_t
		if offset != nil {
			off = b.make(offset.columns(c.N0, c.N))
		}
		b.wqbmm(b.make(x), b.make(w.columns(c.N0, c.N)), b.make(scale.columns(c.N0, c.N)), off, b.make(y.columns(c.N0, c.N)), group)
	}
	return b.err
}

// wqParamOperand is the antiquantScale or antiquantOffset operand of a
// weight converted to layout l, (groups, N) or (N,) per channel, at p (nil
// when p is 0: the layout has no such parameter).
func wqParamOperand(l wqconv.Layout, K, N int64, p device.Ptr) *operand {
	if p == 0 {
		return nil
	}
	G := K / int64(l.Span)
	if l.GroupSize(int(K)) == 0 {
		return &operand{C.ACL_FLOAT16, []int64{N}, []int64{G}, 0, p}
	}
	return &operand{C.ACL_FLOAT16, []int64{G, N}, []int64{1, G}, 0, p}
}
