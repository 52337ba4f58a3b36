package eval

import (
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// The CPU kernels of the attention ops (ir/attention.go).
func init() {
	mustKernel(ir.OpSoftMax, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		var mask *kernels.Tensor
		if len(a) > 1 {
			mask = &a[1]
		}
		return o.SoftMax(dst, a[0], mask, float32(n.Attrs.Scale()), float32(n.Attrs.MaxBias()))
	})
	mustKernel(ir.OpAttention, attentionKernel)
	mustKernel(ir.OpSWAMask, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.SWAMask(dst, a[0], a[1], n.Attrs.Window())
	})
}

// attentionKernel runs kernels.Attention with dst seen as the permuted view
// [hd_v, n_tokens, n_head, ne3] of the contiguous [hd_v, n_head, n_tokens,
// ne3] result, which absorbs the graph's permute and cont.
func attentionKernel(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
	q, v := a[0], a[2]
	dv, t, h, b := v.Ne[1], q.Ne[1], q.Ne[2], q.Ne[3]
	e := dst.Nb[0]
	view, err := dst.View([4]int64{dv, t, h, b}, [4]int64{e, e * dv * h, e * dv, e * dv * h * t}, 0)
	if err != nil {
		return err
	}
	var mask *kernels.Tensor
	if len(a) > 3 {
		mask = &a[3]
	}
	return o.Attention(view, q, a[1], v, mask, float32(n.Attrs.Scale()), float32(n.Attrs.MaxBias()))
}
