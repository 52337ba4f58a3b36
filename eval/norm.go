package eval

import (
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// The CPU kernels of the normalisation ops (ir/norm.go).
func init() {
	mustKernel(ir.OpRMSNorm, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.RMSNorm(dst, a[0], float32(n.Attrs.Eps()))
	})
	mustKernel(ir.OpRMSNormMul, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.RMSNormMul(dst, a[0], a[1], float32(n.Attrs.Eps()))
	})
	mustKernel(ir.OpAddRMSNormMul, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		ne := dst.Ne
		ne[3] = 1
		norm, err := dst.View(ne, dst.Nb, 0)
		if err != nil {
			return err
		}
		sum, err := dst.View(ne, dst.Nb, dst.Nb[3])
		if err != nil {
			return err
		}
		return o.AddRMSNormMul(norm, sum, a[0], a[1], a[2], float32(n.Attrs.Eps()))
	})
}
