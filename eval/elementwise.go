package eval

import (
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// The CPU kernels of the element-wise ops (ir/elementwise.go).
func init() {
	mustKernel(ir.OpMul, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.Mul(dst, a[0], a[1])
	})
	mustKernel(ir.OpAdd, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.Add(dst, a[0], a[1])
	})
	mustKernel(ir.OpScale, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.Scale(dst, a[0], float32(n.Attrs.Scale()))
	})
	mustKernel(ir.OpSilu, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.Silu(dst, a[0])
	})
	mustKernel(ir.OpGelu, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.Gelu(dst, a[0])
	})
	mustKernel(ir.OpDiv, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.Div(dst, a[0], a[1])
	})
	mustKernel(ir.OpSwiGLU, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.SwiGLU(dst, a[0], a[1])
	})
}
