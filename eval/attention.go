package eval

import (
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// The CPU kernels of the attention ops (ir/attention.go), each with its
// prepared job.
func init() {
	mustKernel(ir.OpSoftMax, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.SoftMax(dst, a[0], optional(a, 1), float32(n.Attrs.Scale()), float32(n.Attrs.MaxBias()))
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options, threads int) (kernels.Job, error) {
		return kernels.SoftMaxJob(dst, a[0], optional(a, 1), float32(n.Attrs.Scale()), float32(n.Attrs.MaxBias()), threads)
	})
	mustKernel(ir.OpAttention, attentionKernel, attentionJob)
	mustKernel(ir.OpSWAMask, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.SWAMask(dst, a[0], a[1], n.Attrs.Window())
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options, threads int) (kernels.Job, error) {
		return kernels.SWAMaskJob(dst, a[0], a[1], n.Attrs.Window(), threads)
	})
}

// optional returns operand i, or nil when the node has fewer operands.
func optional(a []kernels.Tensor, i int) *kernels.Tensor {
	if len(a) > i {
		return &a[i]
	}
	return nil
}

// attentionKernel runs kernels.Attention with dst seen as the permuted view
// [hd_v, n_tokens, n_head, ne3] of the contiguous [hd_v, n_head, n_tokens,
// ne3] result, which absorbs the graph's permute and cont.
func attentionKernel(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
	view, err := attentionView(dst, a)
	if err != nil {
		return err
	}
	return o.Attention(view, a[0], a[1], a[2], optional(a, 3), float32(n.Attrs.Scale()), float32(n.Attrs.MaxBias()))
}

// attentionJob is attentionKernel's prepared job.
func attentionJob(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options, threads int) (kernels.Job, error) {
	view, err := attentionView(dst, a)
	if err != nil {
		return nil, err
	}
	return o.AttentionJob(view, a[0], a[1], a[2], optional(a, 3), float32(n.Attrs.Scale()), float32(n.Attrs.MaxBias()), threads)
}

// attentionView is the permuted view of dst the attention kernels write.
func attentionView(dst kernels.Tensor, a []kernels.Tensor) (kernels.Tensor, error) {
	q, v := a[0], a[2]
	dv, t, h, b := v.Ne[1], q.Ne[1], q.Ne[2], q.Ne[3]
	e := dst.Nb[0]
	return dst.View([4]int64{dv, t, h, b}, [4]int64{e, e * dv * h, e * dv, e * dv * h * t}, 0)
}
