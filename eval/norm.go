package eval

import (
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// The CPU kernels of the normalisation ops (ir/norm.go), each with its
// prepared job.
func init() {
	mustKernel(ir.OpRMSNorm, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.RMSNorm(dst, a[0], float32(n.Attrs.Eps()))
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options, threads int) (kernels.Job, error) {
		return kernels.RMSNormJob(dst, a[0], float32(n.Attrs.Eps()), threads)
	})
	mustKernel(ir.OpRMSNormMul, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.RMSNormMul(dst, a[0], a[1], float32(n.Attrs.Eps()))
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options, threads int) (kernels.Job, error) {
		return kernels.RMSNormMulJob(dst, a[0], a[1], float32(n.Attrs.Eps()), threads)
	})
	mustKernel(ir.OpAddRMSNormMul, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		norm, sum, err := addRMSNormMulHalves(dst)
		if err != nil {
			return err
		}
		return o.AddRMSNormMul(norm, sum, a[0], a[1], a[2], float32(n.Attrs.Eps()))
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options, threads int) (kernels.Job, error) {
		norm, sum, err := addRMSNormMulHalves(dst)
		if err != nil {
			return nil, err
		}
		return kernels.AddRMSNormMulJob(norm, sum, a[0], a[1], a[2], float32(n.Attrs.Eps()), threads)
	})
}

// addRMSNormMulHalves splits the result of add_rms_norm_mul into its two
// halves along dim 3: the normalised product, then the sum.
func addRMSNormMulHalves(dst kernels.Tensor) (norm, sum kernels.Tensor, err error) {
	ne := dst.Ne
	ne[3] = 1
	if norm, err = dst.View(ne, dst.Nb, 0); err != nil {
		return
	}
	sum, err = dst.View(ne, dst.Nb, dst.Nb[3])
	return
}
