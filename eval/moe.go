package eval

import (
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// The CPU kernels of the mixture-of-experts ops (ir/moe.go).
func init() {
	mustKernel(ir.OpSumRows, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.SumRows(dst, a[0])
	})
	mustKernel(ir.OpTopK, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.TopK(dst, a[0], int(n.Attrs.K()))
	})
	mustKernel(ir.OpMulMatID, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.MulMatID(dst, a[0], a[1], a[2])
	})
}
