package eval

import (
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// The CPU kernels of the element-wise ops (ir/elementwise.go), each with
// its prepared job.
func init() {
	mustKernel(ir.OpMul, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.Mul(dst, a[0], a[1])
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options, threads int) (kernels.Job, error) {
		return kernels.MulJob(dst, a[0], a[1], threads)
	})
	mustKernel(ir.OpAdd, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.Add(dst, a[0], a[1])
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options, threads int) (kernels.Job, error) {
		return kernels.AddJob(dst, a[0], a[1], threads)
	})
	mustKernel(ir.OpScale, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.Scale(dst, a[0], float32(n.Attrs.Scale()))
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options, threads int) (kernels.Job, error) {
		return kernels.ScaleJob(dst, a[0], float32(n.Attrs.Scale()), threads)
	})
	mustKernel(ir.OpSilu, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.Silu(dst, a[0])
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options, threads int) (kernels.Job, error) {
		return kernels.SiluJob(dst, a[0], threads)
	})
	mustKernel(ir.OpGelu, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.Gelu(dst, a[0])
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options, threads int) (kernels.Job, error) {
		return kernels.GeluJob(dst, a[0], threads)
	})
	mustKernel(ir.OpDiv, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.Div(dst, a[0], a[1])
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options, threads int) (kernels.Job, error) {
		return kernels.DivJob(dst, a[0], a[1], threads)
	})
	mustKernel(ir.OpSwiGLU, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.SwiGLU(dst, a[0], a[1])
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options, threads int) (kernels.Job, error) {
		return kernels.SwiGLUJob(dst, a[0], a[1], threads)
	})
}
