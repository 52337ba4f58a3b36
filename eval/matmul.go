package eval

import (
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// The CPU kernels of the matrix products (ir/matmul.go).
func init() {
	mustKernel(ir.OpMulMat, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.MulMat(dst, a[0], a[1])
	})
	mustKernel(ir.OpMulMatAdd, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.MulMatAdd(dst, a[0], a[1], a[2])
	})
}
