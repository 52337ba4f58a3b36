package eval

import (
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// The CPU kernels of the mixture-of-experts ops (ir/moe.go), each with its
// prepared job.
func init() {
	mustKernel(ir.OpSumRows, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.SumRows(dst, a[0])
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options, threads int) (kernels.Job, error) {
		return kernels.SumRowsJob(dst, a[0], threads)
	})
	mustKernel(ir.OpTopK, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.TopK(dst, a[0], int(n.Attrs.K()))
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options, threads int) (kernels.Job, error) {
		return kernels.TopKJob(dst, a[0], int(n.Attrs.K()), threads)
	})
	mustKernel(ir.OpMulMatID, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.MulMatID(dst, a[0], a[1], a[2])
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options, threads int) (kernels.Job, error) {
		return o.MulMatIDJob(dst, a[0], a[1], a[2], threads)
	})
}
