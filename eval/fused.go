package eval

import (
	"fmt"
	"math"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// The CPU kernels of the fused ops (ir/fused.go). Each is bit for bit the
// unfused chain it replaces; the arithmetic itself lives in package kernels
// (docs/KERNELS.md).
func init() {
	mustKernel(ir.OpRMSNormMul, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.RMSNormMul(dst, a[0], a[1], f32Attr(n, "eps", 0))
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
		return o.AddRMSNormMul(norm, sum, a[0], a[1], a[2], f32Attr(n, "eps", 0))
	})
	mustKernel(ir.OpSwiGLU, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.SwiGLU(dst, a[0], a[1])
	})
	mustKernel(ir.OpMulMatAdd, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.MulMatAdd(dst, a[0], a[1], a[2])
	})
	mustKernel(ir.OpRopeCache, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		if len(a) > 1 {
			return kernels.RopeCacheWithFactors(dst, a[0], a[1], RopeParams(n))
		}
		return kernels.RopeCache(dst, a[0], RopeParams(n))
	})
	mustKernel(ir.OpRopeApply, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
		return o.RopeApply(dst, a[0], a[1], RopeParams(n))
	})
	mustKernel(ir.OpRopeSetRows, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.RopeSetRows(dst, a[1], a[2], a[3], RopeParams(n))
	})
	mustKernel(ir.OpRopeApplySetRows, ropeApplySetRowsKernel)
	mustKernel(ir.OpAttention, attentionKernel)
	mustKernel(ir.OpConcat, concatKernel)
	mustKernel(ir.OpRopeTheta, func(n *ir.Node, dst kernels.Tensor, _ []kernels.Tensor, _ kernels.Options) error {
		nd, _ := n.Attrs.Int("n_dims")
		ts := float32(math.Pow(float64(f32Attr(n, "freq_base", 0)), float64(-2/float32(nd))))
		t := float32(1)
		for i := range nd / 2 {
			if err := dst.SetFloat(t, i, 0, 0, 0); err != nil {
				return err
			}
			t *= ts
		}
		return nil
	})
	mustKernel(ir.OpRopeCacheTable, ropeCacheTableKernel)
	mustKernel(ir.OpTransfer, func(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
		return kernels.Cpy(dst, a[0])
	})
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

// attentionKernel runs kernels.Attention with dst seen as the permuted view
// [hd_v, n_tokens, n_head, ne3] of the contiguous [hd_v, n_head, n_tokens,
// ne3] result, which absorbs the graph's permute and cont.
func attentionKernel(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, o kernels.Options) error {
	q, v := a[0], a[2]
	dv, t, h, b := v.Ne[1], q.Ne[1], q.Ne[2], q.Ne[3]
	e := dst.Nb[0]
	view, err := dst.View([4]int64{dv, t, h, b}, [4]int64{e, e * dv * h, e * dv, e * dv * h * t}, 0)
	if err != nil {
		return err
	}
	var mask *kernels.Tensor
	if len(a) > 3 {
		mask = &a[3]
	}
	return o.Attention(view, q, a[1], v, mask, f32Attr(n, "scale", 0), f32Attr(n, "max_bias", 0))
}

// concatKernel copies each operand into its slice of dst.
func concatKernel(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
	d, _ := n.Attrs.Int("dim")
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

func ropeCacheTableKernel(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
	nd64, _ := n.Attrs.Int("n_dims")
	nd := int(nd64)
	fs, af := f32Attr(n, "freq_scale", 0), f32Attr(n, "attn_factor", 0)
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
