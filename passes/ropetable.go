package passes

import (
	"fmt"
	"math"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/kernels"
)

// ggml-cann's RoPE cache (llama.cpp PR #15912): the inverse
// frequencies theta_scale^i are a constant table, and each step's angles
// are positions times that table. It is opt-in (pass rope-table) because it
// is not ggml's arithmetic: ggml's CPU rope multiplies the angle by
// theta_scale once per pair in float32 (theta_i = ((p*s)*s)*...), and a
// constant table cannot reproduce those roundings (p * fl(s*s) is not
// fl(fl(p*s)*s)). The default pipeline keeps rope_cache, which follows ggml
// bit for bit; docs/PASSES.md gives the difference this one makes.

const (
	// OpRopeTheta is the inverse-frequency table of a RoPE: an op without
	// operands that constant folding turns into a constant.
	OpRopeTheta ir.Op = "rope_theta"
	// OpRopeCacheTable computes the cos/sin table from positions and an
	// inverse-frequency table.
	OpRopeCacheTable ir.Op = "rope_cache_table"
)

func init() {
	mustRegister(ir.OpInfo{Name: OpRopeTheta, Fused: true,
		Doc: "rope_theta(){n_dims, freq_base}: f32[n_dims/2], theta_scale^i with theta_scale = freq_base^(-2/n_dims), each power the float32 product of the previous one and theta_scale (a constant once folded)",
		Infer: func(n *ir.Node) (ir.Type, error) {
			nd, ok := n.Attrs.Int("n_dims")
			if !ok || nd <= 0 || nd%2 != 0 {
				return ir.Type{}, fmt.Errorf("n_dims must be a positive even integer")
			}
			return ir.T(ir.F32, nd/2), nil
		},
		Check: func(n *ir.Node) error {
			if b, ok := n.Attrs.Float("freq_base"); !ok || !(b > 0) {
				return fmt.Errorf("freq_base must be positive")
			}
			return nil
		},
	}, func(n *ir.Node, dst kernels.Tensor, _ []kernels.Tensor, _ kernels.Options) error {
		nd, _ := n.Attrs.Int("n_dims")
		ts := float32(math.Pow(float64(f32Attr(n, "freq_base")), float64(-2/float32(nd))))
		t := float32(1)
		for i := range nd / 2 {
			if err := dst.SetFloat(t, i, 0, 0, 0); err != nil {
				return err
			}
			t *= ts
		}
		return nil
	})

	mustRegister(ir.OpInfo{Name: OpRopeCacheTable, Fused: true, MinArgs: 2, MaxArgs: 3,
		Doc: "rope_cache_table(pos, inv_freq, freq_factors?){n_dims, mode, freq_scale, attn_factor}: the table rope_cache makes, from angles pos*inv_freq[i]/ff[i]*freq_scale (ggml-cann's formulation; ext_factor 0 only)",
		Infer: func(n *ir.Node) (ir.Type, error) {
			return ropeTableType(n, func(i int, t ir.Type) string { return fmt.Sprintf("operand %d %s", i, t) })
		},
		Check: func(n *ir.Node) error { return ropeCheck(n, "n_dims", "mode") },
	}, ropeCacheTableKernel)
}

func ropeTableRules() []*Rule {
	return []*Rule{
		{Name: "rope-table", Doc: "rope_cache(pos, ff?){ext_factor=0} -> rope_cache_table(pos, rope_theta(), ff?)",
			Pattern: Op(OpRopeCache, Any("pos")).AllowMore().Where(func(n *ir.Node) bool { return attrFloat(n, "ext_factor", 0) == 0 }),
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				r := m.Root
				b.Name, b.Layer = "rope_inv_freq", -1
				theta, err := b.Op(OpRopeTheta, ir.Attrs{"n_dims": r.Attrs["n_dims"], "freq_base": r.Attrs["freq_base"]})
				if err != nil {
					return nil, err
				}
				b.Name, b.Layer = r.Name, r.Layer
				attrs := ir.Attrs{"n_dims": r.Attrs["n_dims"], "mode": r.Attrs["mode"],
					"freq_scale": attrFloat(r, "freq_scale", 1), "attn_factor": attrFloat(r, "attn_factor", 1)}
				args := append([]*ir.Node{r.Args[0], theta}, r.Args[1:]...)
				return b.Op(OpRopeCacheTable, attrs, args...)
			}},
	}
}

func ropeCacheTableKernel(n *ir.Node, dst kernels.Tensor, a []kernels.Tensor, _ kernels.Options) error {
	nd64, _ := n.Attrs.Int("n_dims")
	nd := int(nd64)
	fs, af := f32Attr(n, "freq_scale"), f32Attr(n, "attn_factor")
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
