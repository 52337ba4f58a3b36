package target

import (
	"slices"

	"github.com/irtool/irtool/ir"
)

// The rules of the attention ops (ir/attention.go).
func init() {
	mustRule(ir.OpSoftMax, OpRule{NPU: npuSoftMax, Traffic: streamTraffic(5), Workspace: softMaxWorkspace})
	mustRule(ir.OpAttention, OpRule{NPU: npuAttention, Traffic: attentionTraffic, Workspace: attentionWorkspace})
	mustRule(ir.OpSWAMask, OpRule{NPU: npuSWAMask, Traffic: streamTraffic(1), Workspace: swaMaskWorkspace})
}

func npuSoftMax(n *ir.Node) Support {
	if dt := n.Args[0].Type.DType; dt != ir.F32 {
		return no("soft_max of %s: f32 only", dt)
	}
	calls := []string{}
	if s, ok := n.Attrs.Float(ir.AttrScale); !ok || s != 1 {
		calls = append(calls, "aclnnMuls")
	}
	if mb := n.Attrs.MaxBias(); mb != 0 {
		// ggml-cann builds ALiBi slopes with aclnnPowScalarTensor and
		// aclnnMul; runtime/acl does not bind them.
		return no("soft_max with ALiBi (max_bias %g) is not bound by runtime/acl", mb)
	}
	if len(n.Args) > 1 {
		calls = append(calls, "aclnnAdd")
	}
	calls = append(calls, "aclnnSoftmax")
	return yes("aclnnSoftmax", calls...)
}

// softMaxWorkspace: the scaled (and masked) copy a softmax with more than
// one call works on.
func softMaxWorkspace(n *ir.Node, s Support) int64 {
	if len(s.Calls) > 1 {
		return 4 * elems(n.Type)
	}
	return 0
}

// Attention as ggml-cann runs llama.cpp's attention with flash attention
// off, which is also ggml-cpu's arithmetic: Q cast to f16, scores = Q·Kᵀ
// (aclnnMatmul, f16 operands, f32 result, the KV heads broadcast over their
// query heads), scale, mask, softmax, the probabilities cast to f16 and P·V
// (aclnnMatmul, f32 result). runtime/acl's Options.FlashAttention runs it
// through aclnnFusedInferAttentionScoreV2 instead (FLASH_ATTN_EXT), whose
// f16 output moves the logits by up to 1e-2 of their range on the K-quant
// reference models (docs/LOWERING.md). K and V must be f16 with one head
// dim.
func npuAttention(n *ir.Node) Support {
	q, k, v := n.Args[0].Type, n.Args[1].Type, n.Args[2].Type
	if k.DType != ir.F16 || v.DType != ir.F16 {
		return no("attention over %s/%s K/V: the f16 matmuls (and aclnnFusedInferAttentionScoreV2) take f16 K and V", k.DType, v.DType)
	}
	if !k.Shape[0].Equal(v.Shape[1]) {
		return no("attention with K head dim %s and V head dim %s: must be equal", k.Shape[0], v.Shape[1])
	}
	if q.DType != ir.F32 {
		return no("attention query of %s: f32 only (cast to f16 by the recipe)", q.DType)
	}
	if mb := n.Attrs.MaxBias(); mb != 0 {
		return no("attention with ALiBi (max_bias %g) is not bound by runtime/acl", mb)
	}
	calls := []string{"aclnnCast", "aclnnMatmul", "aclnnMuls"}
	if len(n.Args) > 3 {
		calls = append(calls, "aclnnAdd")
	}
	return yes("aclnnMatmul", append(calls, "aclnnSoftmax", "aclnnCast", "aclnnMatmul")...)
}

// attentionTraffic: softmax(k·q)·v per head: q [hd, T, H], k [hd, n_kv,
// Hkv], v [n_kv, hd_v, Hkv].
func attentionTraffic(n *ir.Node, b ir.Bindings) (float64, float64, error) {
	in, out, _, err := ioBytes(n, b)
	if err != nil {
		return 0, 0, err
	}
	q, err := n.Args[0].Type.Shape.Eval(b)
	if err != nil {
		return 0, 0, err
	}
	k, err := n.Args[1].Type.Shape.Eval(b)
	if err != nil {
		return 0, 0, err
	}
	v, err := n.Args[2].Type.Shape.Eval(b)
	if err != nil {
		return 0, 0, err
	}
	rows := float64(q[1].Val * q[2].Val * q[3].Val)
	return 2*rows*float64(k[1].Val)*float64(q[0].Val+v[1].Val) + 5*rows*float64(k[1].Val), in + out, nil
}

// attentionWorkspace: Q cast to f16 and the f16 result before its cast
// back, the f16 copy of an f32 mask (the fused call's pse shift), and, on
// the unfused path (its calls end in aclnnSoftmax), the scores
// (AttentionScoresBytes); 32 bytes of alignment per piece.
func attentionWorkspace(n *ir.Node, s Support) int64 {
	ws := align32(2*elems(n.Args[0].Type)) + align32(2*elems(n.Type)) + 32
	q, err1 := n.Args[0].Type.Shape.Ne()
	k, err2 := n.Args[1].Type.Shape.Ne()
	if err1 != nil || err2 != nil {
		return ws
	}
	T, H, KV := q[1], q[2], k[1]
	ws += align32(2*KV*T) + 32
	if slices.Contains(s.Calls, "aclnnSoftmax") {
		ws += align32(AttentionScoresBytes(H, T, KV)) + 32
	}
	return ws
}

// AttentionScoresBytes is the scratch of unfused attention over H heads,
// T queries and KV cells: the f32 scores, the f32 scaled (and masked)
// scores and the f16 probabilities, 10 bytes per score (ggml-cann's
// attention with flash attention off keeps the same tensors).
func AttentionScoresBytes(H, T, KV int64) int64 { return 10 * H * T * KV }

// swa_mask: made on the device from the step's positions (llama.cpp makes
// KQ_mask_swa on the host in set_input; on the device it needs no copy and
// splits no segment): the distances pos − (cell + window) against a
// constant table, aclnnGeScalar(≥ 0), the mask copied, and −inf filled
// where the distance is not negative.
func npuSWAMask(n *ir.Node) Support {
	m, p := n.Args[0].Type, n.Args[1].Type
	if m.DType != ir.F32 || p.DType != ir.I32 {
		return no("swa_mask of a %s mask at %s positions: f32 and i32 only", m.DType, p.DType)
	}
	return yes("aclnnInplaceMaskedFillScalar", "aclnnCast", "aclnnAdd", "aclnnGeScalar", "aclnnInplaceCopy", "aclnnInplaceMaskedFillScalar")
}

// swaMaskWorkspace: the f32 positions, the f32 distances and the BOOL
// outside-the-window flags, one per token and cell.
func swaMaskWorkspace(n *ir.Node, _ Support) int64 {
	ne, err := n.Type.Shape.Ne()
	if err != nil {
		return 0
	}
	t := elems(n.Args[1].Type)
	return align32(4*t) + align32(4*t*ne[0]) + align32(t*ne[0])
}
