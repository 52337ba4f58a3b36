package eval

import (
	"math"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// The CPU kernel of softplus (ir/elementwise.go), element by element:
// ggml-cpu's op_softplus, x > 20 ? x : logf(1 + expf(x)), each step
// rounded to float32.
func init() {
	mustKernel(ir.OpSoftplus, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		src := a[0]
		for i3 := range src.Ne[3] {
			for i2 := range src.Ne[2] {
				for i1 := range src.Ne[1] {
					for i0 := range src.Ne[0] {
						x, err := src.Float(i0, i1, i2, i3)
						if err != nil {
							return err
						}
						if err := dst.SetFloat(softplus(x), i0, i1, i2, i3); err != nil {
							return err
						}
					}
				}
			}
		}
		return nil
	})
}

func softplus(x float32) float32 {
	if x > 20 {
		return x
	}
	e := float32(math.Exp(float64(x)))
	return float32(math.Log(float64(1 + e)))
}
