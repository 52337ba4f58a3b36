package eval

import (
	"fmt"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// The CPU kernels of the ops that move data (ir/copy.go), with their
// prepared jobs (concat and transfer have none).
func init() {
	copyKernel := func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.Cpy(dst, a[0])
	}
	copyJob := func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options, threads int) (kernels.Job, error) {
		return kernels.CpyJob(dst, a[0], threads)
	}
	mustKernel(ir.OpCont, copyKernel, copyJob)
	mustKernel(ir.OpCast, copyKernel, copyJob)
	mustKernel(ir.OpCpy, copyKernel, copyJob) // dst is the view of operand 1 the result aliases
	mustKernel(ir.OpGetRows, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.GetRows(dst, a[0], a[1])
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options, threads int) (kernels.Job, error) {
		return kernels.GetRowsJob(dst, a[0], a[1], threads)
	})
	mustKernel(ir.OpSetRows, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return kernels.SetRows(dst, a[1], a[2])
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options, threads int) (kernels.Job, error) {
		return kernels.SetRowsJob(dst, a[1], a[2], threads)
	})
	mustKernel(ir.OpConcat, concatKernel, nil)
	mustKernel(ir.OpTransfer, copyKernel, nil)
}

// concatKernel copies each operand into its slice of dst.
func concatKernel(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
	d := n.Attrs.ConcatDim()
	off := int64(0)
	for i, x := range a {
		part, err := dst.View(x.Ne, dst.Nb, off*dst.Nb[d])
		if err != nil {
			return fmt.Errorf("operand %d: %w", i, err)
		}
		if err := kernels.Cpy(part, x); err != nil {
			return fmt.Errorf("operand %d: %w", i, err)
		}
		off += x.Ne[d]
	}
	return nil
}
