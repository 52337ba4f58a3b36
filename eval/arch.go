package eval

import (
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// Kernels of the ops of the newer architectures (ir/op_arch.go).
func init() {
	mustKernel(ir.OpGelu, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.Gelu(dst, a[0])
	})
	mustKernel(ir.OpDiv, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.Div(dst, a[0], a[1])
	})
	mustKernel(ir.OpSumRows, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.SumRows(dst, a[0])
	})
	mustKernel(ir.OpTopK, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.TopK(dst, a[0], intAttr(n, "k", 0))
	})
	mustKernel(ir.OpMulMatID, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.MulMatID(dst, a[0], a[1], a[2])
	})
	mustKernel(ir.OpSWAMask, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		w, _ := n.Attrs.Int("window")
		return kernels.SWAMask(dst, a[0], a[1], w)
	})
}
