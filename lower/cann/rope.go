package cann

import (
	"strconv"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/target"
)

// RopePositionsAttr is the kernel attribute Lower adds to the NPU kernels
// of rope, rope_cache and rope_set_rows: the number of positions (the
// graph's n_ctx meta value) below which every position of a step lies, so
// that runtime/acl can precompute the angles of positions 0..n_pos-1 as a
// constant table and gather the step's rows (docs/RUNTIME.md).
const RopePositionsAttr = "n_pos"

func init() {
	for _, op := range []ir.Op{ir.OpRopeCache, ir.OpRope, ir.OpRopeSetRows} {
		kernelExtras[op] = ropePositions
	}
}

// ropePositions adds RopePositionsAttr to a RoPE kernel.
func ropePositions(l *lowerer, n *ir.Node, k *Kernel, _ target.Device) {
	// The positions a session passes are below n_ctx (the KV cache's
	// cells): runtime/acl precomputes the RoPE angles of positions
	// 0..n_ctx-1 once and gathers the step's rows.
	if nctx, err := strconv.ParseInt(l.g.Meta["n_ctx"], 10, 64); err == nil && nctx > 0 {
		if k.Attrs == nil {
			k.Attrs = ir.Attrs{}
		}
		k.Attrs[RopePositionsAttr] = nctx
	}
}
