package eval

import (
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// The CPU kernels of the matrix products (ir/matmul.go), each with its
// prepared job.
func init() {
	mustKernel(ir.OpMulMat, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.MulMat(dst, a[0], a[1])
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options, threads int) (kernels.Job, error) {
		return weightPacks(n, o).MulMatJob(dst, a[0], a[1], nil, threads)
	})
	mustKernel(ir.OpMulMatAdd, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.MulMatAdd(dst, a[0], a[1], a[2])
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options, threads int) (kernels.Job, error) {
		return weightPacks(n, o).MulMatJob(dst, a[0], a[1], &a[2], threads)
	})
}

// weightPacks returns o without its repacked weights when the matrix of n
// (operand 0) is not a model weight: only a weight may be repacked once.
// A computed matrix (a concat of weights made by merge-qkv, an activation)
// changes between steps and is not even written when the executable is
// compiled.
func weightPacks(n *ir.Node, o kernels.Options) kernels.Options {
	if !isWeightData(n.Args[0]) {
		o.Packs = nil
	}
	return o
}
