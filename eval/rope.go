package eval

import (
	"fmt"
	"math"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// The CPU kernels of the rotary position embedding ops (ir/rope.go).

// RopeParams reads a rope node's attributes (ggml_rope_ext's parameters).
func RopeParams(n *ir.Node) kernels.RopeParams {
	r := n.Attrs.Rope()
	return kernels.RopeParams{
		NDims:      int(r.NDims),
		Mode:       int(r.Mode),
		NCtxOrig:   int(r.NCtxOrig),
		FreqBase:   float32(r.FreqBase),
		FreqScale:  float32(r.FreqScale),
		ExtFactor:  float32(r.ExtFactor),
		AttnFactor: float32(r.AttnFactor),
		BetaFast:   float32(r.BetaFast),
		BetaSlow:   float32(r.BetaSlow),
	}
}

func init() {
	mustKernel(ir.OpRope, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		if len(a) > 2 {
			return o.RopeWithFactors(dst, a[0], a[1], a[2], RopeParams(n))
		}
		return o.Rope(dst, a[0], a[1], RopeParams(n))
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options, threads int) (kernels.Job, error) {
		if len(a) > 2 && !isWeightData(n.Args[2]) {
			return nil, nil // factors computed by the graph: read at each run by the kernel table
		}
		return kernels.RopeJob(dst, a[0], a[1], optional(a, 2), RopeParams(n), threads)
	})
	mustKernel(ir.OpRopeCache, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		if len(a) > 1 {
			return kernels.RopeCacheWithFactors(dst, a[0], a[1], RopeParams(n))
		}
		return kernels.RopeCache(dst, a[0], RopeParams(n))
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options, threads int) (kernels.Job, error) {
		return kernels.RopeCacheJob(dst, a[0], optional(a, 1), RopeParams(n), threads)
	})
	mustKernel(ir.OpRopeApply, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.RopeApply(dst, a[0], a[1], RopeParams(n))
	}, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options, threads int) (kernels.Job, error) {
		return kernels.RopeApplyJob(dst, a[0], a[1], nil, nil, RopeParams(n), threads)
	})
	mustKernel(ir.OpRopeSetRows, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.RopeSetRows(dst, a[1], a[2], a[3], RopeParams(n))
	}, nil)
	mustKernel(ir.OpRopeApplySetRows, ropeApplySetRowsKernel, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options, threads int) (kernels.Job, error) {
		return kernels.RopeApplyJob(kernels.Tensor{}, a[1], a[2], &dst, &a[3], RopeParams(n), threads)
	})
	mustKernel(ir.OpRopeTheta, func(n *ir.Node, dst kernels.Tensor, _ []kernels.Tensor, _ kernels.Options) error {
		r := n.Attrs.Rope()
		nd := r.NDims
		ts := kernels.Powf(float32(r.FreqBase), -2/float32(nd))
		t := float32(1)
		for i := range nd / 2 {
			if err := dst.SetFloat(t, i, 0, 0, 0); err != nil {
				return err
			}
			t *= ts
		}
		return nil
	}, nil)
	mustKernel(ir.OpRopeCacheTable, ropeCacheTableKernel, nil)
}

// ropeApplySetRowsKernel is rope_apply into a contiguous f32 scratch tensor,
// a reshape to rows and set_rows: exactly the unfused chain, so the result
// is bit for bit the same. A device kernel does it in one pass.
func ropeApplySetRowsKernel(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
	x := a[1]
	tmp, err := kernels.NewTensor(gguf.TypeF32, x.Ne[:]...)
	if err != nil {
		return err
	}
	if err := o.RopeApply(tmp, x, a[2], RopeParams(n)); err != nil {
		return err
	}
	rows, err := tmp.Reshape(x.Ne[0]*x.Ne[1], x.Ne[2], x.Ne[3])
	if err != nil {
		return err
	}
	return kernels.SetRows(dst, rows, a[3])
}

func ropeCacheTableKernel(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
	r := n.Attrs.Rope()
	nd := int(r.NDims)
	fs, af := float32(r.FreqScale), float32(r.AttnFactor)
	inv, err := kernels.ToF32(a[1])
	if err != nil {
		return err
	}
	var ff []float32
	if len(a) > 2 {
		if ff, err = kernels.ToF32(a[2]); err != nil {
			return err
		}
	}
	if dst.Ne[0] != int64(nd) || len(inv) < nd/2 || a[0].Ne[0] < dst.Ne[1] {
		return fmt.Errorf("rope_cache_table: dst %s, %d inverse frequencies, positions %s", dst, len(inv), a[0])
	}
	for j := range dst.Ne[1] {
		p, err := a[0].Int(j, 0, 0, 0)
		if err != nil {
			return err
		}
		for i := 0; i < nd/2; i++ {
			theta := float32(p) * inv[i]
			if ff != nil {
				theta /= ff[i]
			}
			theta *= fs
			c := float32(math.Cos(float64(theta))) * af
			s := float32(math.Sin(float64(theta))) * af
			if err := dst.SetFloat(c, int64(2*i), j, 0, 0); err != nil {
				return err
			}
			if err := dst.SetFloat(s, int64(2*i+1), j, 0, 0); err != nil {
				return err
			}
		}
	}
	return nil
}
