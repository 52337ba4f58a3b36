package target

import (
	"github.com/irtool/irtool/gguf/wqconv"
	"github.com/irtool/irtool/ir"
)

// The rules of the mixture-of-experts ops (ir/moe.go).
func init() {
	mustRule(ir.OpSumRows, OpRule{NPU: npuSumRows, Traffic: streamTraffic(1), Workspace: NoWorkspace})
	mustRule(ir.OpTopK, OpRule{NPU: npuTopK, Traffic: streamTraffic(1), Workspace: topKWorkspace})
	mustRule(ir.OpMulMatID, OpRule{NPU: npuMulMatID, Traffic: matmulIDTraffic, Workspace: mulMatIDWorkspace})
}

// sum_rows: aclnnReduceSum over the last ACL dim, kept, FLOAT.
func npuSumRows(n *ir.Node) Support {
	if dt := n.Args[0].Type.DType; dt != ir.F32 {
		return no("sum_rows of %s: f32 only", dt)
	}
	return yes("aclnnReduceSum")
}

// top_k: aclnnTopk (largest, sorted) then the INT64 indices cast to INT32.
func npuTopK(n *ir.Node) Support {
	if dt := n.Args[0].Type.DType; dt != ir.F32 {
		return no("top_k of %s: f32 only", dt)
	}
	return yes("aclnnTopk", "aclnnTopk", "aclnnCast")
}

// topKWorkspace: the f32 values and the INT64 indices aclnnTopk writes.
func topKWorkspace(n *ir.Node, _ Support) int64 {
	return align32(4*elems(n.Type)) + align32(8*elems(n.Type))
}

// pairs is the number of (token, slot) products of a mul_mat_id node: n_used
// times the tokens, one token when the token count is symbolic.
func pairs(n *ir.Node) int64 {
	ids := n.Args[2].Type.Shape
	p := ids[0].Val
	if d := ids[1]; d.IsConst() {
		p *= d.Val
	}
	return p
}

// mul_mat_id: the chosen experts are gathered on the device by the ids
// (aclnnGatherV2 over the stacked, resident experts), then multiplied: f32
// with one broadcasting aclnnMatmul, q8_0/q4_0 with one
// aclnnWeightQuantBatchMatmulV2 per token and slot between casts. The ids
// stay on the device, so routing keeps a segment capturable (ggml-cann's
// mul_mat_id keeps every expert resident too).
func npuMulMatID(n *ir.Node) Support {
	as, x, ids := n.Args[0], n.Args[1], n.Args[2]
	if !Contiguous(as) || !Contiguous(ids) {
		return no("mul_mat_id needs contiguous experts and ids")
	}
	if x.Type.DType != ir.F32 || !ids.Type.Shape[0].IsConst() {
		return no("mul_mat_id of %s activations: f32 only", x.Type.DType)
	}
	switch dt := as.Type.DType; dt {
	case ir.F32:
		return yes("aclnnMatmul", "aclnnGatherV2", "aclnnMatmul")
	default:
		l, why := wqRows(as)
		if why != "" {
			return no("mul_mat_id: %s", why)
		}
		if l.HighBits {
			return no("mul_mat_id of %s experts: their int4 + high-bit layout has no expert recipe (gathered experts and two matmuls per slot); they run on the cpu", dt)
		}
		// The chosen experts' values, scales (and offsets) of the layout
		// converted at load (gguf/wqconv.ConvertExperts) gathered, the
		// activations cast to f16, one weight-quant matmul per token and
		// slot, the result cast back.
		calls := []string{"aclnnGatherV2", "aclnnGatherV2"}
		if l.Offset {
			calls = append(calls, "aclnnGatherV2")
		}
		calls = append(calls, "aclnnCast")
		for range pairs(n) {
			for range WQBMMChunks(constOr1(as.Type.Shape[1])) {
				calls = append(calls, "aclnnWeightQuantBatchMatmulV2")
			}
		}
		return yes("aclnnWeightQuantBatchMatmulV2", append(calls, "aclnnCast")...)
	}
}

// mulMatIDWorkspace: the gathered experts, and for quantised ones also the
// f16 activations and results.
func mulMatIDWorkspace(n *ir.Node, s Support) int64 {
	as, x := n.Args[0].Type, n.Args[1].Type
	ne, err := as.Shape.Ne()
	if err != nil {
		return 0
	}
	k, m, p := ne[0], ne[1], pairs(n)
	if s.Kernel != "aclnnWeightQuantBatchMatmulV2" {
		return align32(4 * p * k * m)
	}
	l, _ := WQLayout(as.DType)
	values := k * m
	if l.Dtype == wqconv.Int4 {
		values /= 2
	}
	params := align32(p * k * m / int64(l.Span) * 2) // f16 scales (and offsets) of the chosen experts
	if l.Offset {
		params *= 2
	}
	return align32(p*values) + params + align32(2*elems(x)) + 2*elems(n.Type)
}

// matmulIDTraffic: 2·k·n FLOPs per token and chosen expert; only the
// chosen experts' matrices are read.
func matmulIDTraffic(n *ir.Node, b ir.Bindings) (float64, float64, error) {
	_, out, _, err := ioBytes(n, b)
	if err != nil {
		return 0, 0, err
	}
	sa, err := n.Args[0].Type.Shape.Eval(b)
	if err != nil {
		return 0, 0, err
	}
	so, err := n.Type.Shape.Eval(b)
	if err != nil {
		return 0, 0, err
	}
	k, m := float64(sa[0].Val), float64(sa[1].Val)
	prods := float64(so[1].Val * so[2].Val)
	dt := n.Args[0].Type.DType
	w := k * m * prods * float64(dt.TypeSize()) / float64(dt.BlockSize())
	act, err := bytesOf(n.Args[1].Type, b)
	if err != nil {
		return 0, 0, err
	}
	ids, _ := bytesOf(n.Args[2].Type, b)
	return 2 * k * m * prods, w + act + ids + out, nil
}
