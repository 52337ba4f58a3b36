package passes

import (
	"github.com/irtool/irtool/ir"
)

// ggml-cann's RoPE cache (llama.cpp PR #15912): the inverse
// frequencies theta_scale^i are a constant table, and each step's angles
// are positions times that table. It is opt-in (pass rope-table) because it
// is not ggml's arithmetic: ggml's CPU rope multiplies the angle by
// theta_scale once per pair in float32 (theta_i = ((p*s)*s)*...), and a
// constant table cannot reproduce those roundings (p * fl(s*s) is not
// fl(fl(p*s)*s)). The default pipeline keeps rope_cache, which follows ggml
// bit for bit; docs/PASSES.md gives the difference this one makes.

func ropeTableRules() []*Rule {
	return []*Rule{
		{Name: "rope-table", Doc: "rope_cache(pos, ff?){ext_factor=0} -> rope_cache_table(pos, rope_theta(), ff?)",
			Pattern: Op(ir.OpRopeCache, Any("pos")).AllowMore().Where(func(n *ir.Node) bool { return n.Attrs.Rope().ExtFactor == 0 }),
			Build: func(b *Builder, m *Match) (*ir.Node, error) {
				r := m.Root
				b.Name, b.Layer = "rope_inv_freq", -1
				theta, err := b.Op(ir.OpRopeTheta, ir.Attrs{ir.AttrNDims: r.Attrs[ir.AttrNDims], ir.AttrFreqBase: r.Attrs[ir.AttrFreqBase]})
				if err != nil {
					return nil, err
				}
				b.Name, b.Layer = r.Name, r.Layer
				attrs := ir.Attrs{ir.AttrNDims: r.Attrs[ir.AttrNDims], ir.AttrMode: r.Attrs[ir.AttrMode],
					ir.AttrFreqScale: r.Attrs.Rope().FreqScale, ir.AttrAttnFactor: r.Attrs.Rope().AttnFactor}
				args := append([]*ir.Node{r.Args[0], theta}, r.Args[1:]...)
				return b.Op(ir.OpRopeCacheTable, attrs, args...)
			}},
	}
}
