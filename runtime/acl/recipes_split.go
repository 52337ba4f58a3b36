//go:build cann

package acl

/*
#include "binding.h"
*/
import "C"

import (
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
// y[m, n] = x[m, k] @ antiquant(w[k, n], scale): every WQBMM call a recipe
// makes goes through it, so each keeps the operator's Atlas A2/A3 limits
// (target/limits.go, docs/CANN-CONSTRAINTS.md). n is split into chunks of
// at most target.WQBMMMaxDim columns, each call reading its columns of w
// and scale and writing its columns of y in place (a strided view, as
// llama.cpp's CANN backend does); the group size becomes 0 (per channel)
// when one block covers k. k above the limit is refused: the target
// already keeps such nodes on the host.
func (b *builder) wqbmmSplit(x, w, scale, y operand, block int64) error {
	k := w.shape[0]
	if k < 1 || k > target.WQBMMMaxDim {
		return b.unsupported("aclnnWeightQuantBatchMatmulV2 with k = %d outside [1, %d] (Atlas A2/A3)", k, target.WQBMMMaxDim)
	}
	g := target.WQBMMGroup(k, block)
	for _, c := range target.WQBMMChunks(w.shape[1]) {
		b.wqbmm(b.make(x), b.make(w.columns(c.N0, c.N)), b.make(scale.columns(c.N0, c.N)), b.make(y.columns(c.N0, c.N)), g)
	}
	return b.err
}
