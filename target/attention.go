package target

import (
	"fmt"
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

// FIA is the fused attention operator of Atlas A2 (and A3):
// aclnnFusedInferAttentionScoreV2, its IncreFlashAttention branch for one
// query token, its PromptFlashAttention branch for more.
const FIA = "aclnnFusedInferAttentionScoreV2"

// npuAttention is the attention rule of Atlas A2: FIA, as llama.cpp's CANN
// backend runs attention with flash attention on (-fa, FLASH_ATTN_EXT)
// and vLLM-Ascend runs its prefill and decode. The query is cast to f16
// (FIA takes f16/bf16 queries; irtool's are f32), the mask (0 or −inf
// per KV cell, llama.cpp's KQ_mask and its sliding-window variant) becomes
// FIA's boolean attenMask (1: not computed) by aclnnMuls(−1) and
// aclnnGeScalar(≥ 1), one [T, n_kv] plane shared by every head, and the
// f16 output is cast back to f32: Cast, [Muls, GeScalar], FIA, Cast. The
// scores never leave the operator. Its f16 output rounds the attention
// output once more than ggml-cpu does, so the runtime keeps the unfused
// calls (unfusedAttention) in its "ggml" arithmetic, and the parts
// without FIA take them through their gates (attentionWithoutFIA). FIA V2
// has no logit softcap parameter (CANN's page): a model that caps its
// attention logits keeps a tanh between the matmul and the softmax, which
// the attention fusion (passes) does not absorb, so no attention node
// carries one.
func npuAttention(n *ir.Node) Support {
	if s, ok := attentionOperands(n); !ok {
		return s
	}
	q, k := n.Args[0].Type, n.Args[1].Type
	if d := q.Shape[0]; !d.IsConst() || d.Val > fiaMaxDim || !k.Shape[2].IsConst() || q.Shape[2].IsConst() && q.Shape[2].Val > fiaMaxHeads {
		s := unfusedAttention(n)
		s.Reason = fmt.Sprintf("unfused: head dim %s or heads %s outside aclnnFusedInferAttentionScoreV2's D ≤ %d, N ≤ %d (CANN's page)", d, q.Shape[2], fiaMaxDim, fiaMaxHeads)
		return s
	}
	if !fiaCache(n.Args[1], 1, 2, 0) || !fiaCache(n.Args[2], 0, 2, 1) {
		s := unfusedAttention(n)
		s.Reason = "unfused: the K/V cache views are not contiguous BSND (a transposed V cache, --kv-write cpy), and aclnnFusedInferAttentionScoreV2 takes no strided key or value (CANN's page)"
		return s
	}
	calls := []string{"aclnnCast"}
	why := ""
	if _, pad := FIAPadding(n); pad {
		// zero the padded Q, K and V, then Q cast and K, V copied in
		calls = []string{"aclnnInplaceCopy", "aclnnCast", "aclnnInplaceCopy", "aclnnInplaceCopy"}
		why = fmt.Sprintf("; head dim %d zero-padded to a multiple of %d for the prefill branch", q.Shape[0].Val, fiaPrefillAlign)
	}
	if len(n.Args) > 3 {
		calls = append(calls, "aclnnMuls", "aclnnGeScalar")
	}
	s := yes(FIA, append(calls, FIA, "aclnnCast")...)
	s.Reason = "fused: aclnnFusedInferAttentionScoreV2 (Atlas A2; llama.cpp's CANN backend with -fa, vLLM-Ascend), its f16 output cast to f32" + why + "; the runtime's ggml arithmetic keeps the unfused calls"
	return s
}

// fiaPrefillAlign: with more than one query token (the PromptFlashAttention
// branch) and f16/bf16 operands, FIA wants the head dim D a multiple of 16
// on Atlas A2 (CANN's page, "D轴限制").
const fiaPrefillAlign = 16

// FIAPadding returns the head dim attention node n runs FIA with, and
// whether that pads it: a prefill (more than one query token) whose head
// dim is not a multiple of 16 has Q, K and V zero-padded to the next one
// in the workspace (the padded lanes add exact zeros to every score; the
// output's are dropped). Decode (one token, the IncreFlashAttention
// branch) has no such limit; a node whose token count is still symbolic
// is costed as the decode step it is priced at (lowering specialises the
// graph to its tokens first).
func FIAPadding(n *ir.Node) (int64, bool) {
	d := n.Args[0].Type.Shape[0].Val
	if t := n.Args[0].Type.Shape[1]; !t.IsConst() || t.Val == 1 || d%fiaPrefillAlign == 0 {
		return d, false
	}
	return (d + fiaPrefillAlign - 1) / fiaPrefillAlign * fiaPrefillAlign, true
}

// fiaCache reports whether cache view t, whose dims sd, nd and dd are
// FIA's S, N and D, is contiguous BSND, as FIA's key and value must be:
// D innermost, then N, then S (dims of size 1 may have any stride). Its
// strides are a view's nb, or ggml's dense ones.
func fiaCache(t *ir.Node, sd, nd, dd int) bool {
	es := t.Type.DType.TypeSize()
	sh := t.Type.Shape
	var nb [4]int64
	if t.Op == ir.OpView {
		v, ok := t.Attrs.Ints(ir.AttrNB)
		if !ok || len(v) < 3 {
			return false
		}
		copy(nb[:], v)
	} else if Contiguous(t) {
		var ne [4]int64
		for i, d := range sh {
			ne[i] = 1
			if d.IsConst() {
				ne[i] = d.Val
			} else if i < 3 {
				return false
			}
		}
		nb = ir.ContiguousStrides(t.Type.DType, ne)
	} else {
		return false
	}
	want := es
	for _, i := range []int{dd, nd, sd} {
		d := sh[i]
		if !(d.IsConst() && d.Val == 1) && nb[i] != want {
			return false
		}
		if i != sd {
			if !d.IsConst() {
				return false
			}
			want *= d.Val
		}
	}
	return true
}

// FIA's query limits for f16 (CANN's aclnnFusedInferAttentionScoreV2 page,
// both branches): N ≤ 256 heads, D ≤ 512.
const (
	fiaMaxHeads = 256
	fiaMaxDim   = 512
)

// attentionOperands checks what both lowerings need: f16 K and V with one
// head dim, an f32 query, no ALiBi.
func attentionOperands(n *ir.Node) (Support, bool) {
	q, k, v := n.Args[0].Type, n.Args[1].Type, n.Args[2].Type
	if k.DType != ir.F16 || v.DType != ir.F16 {
		return no("attention over %s/%s K/V: the f16 matmuls (and aclnnFusedInferAttentionScoreV2) take f16 K and V", k.DType, v.DType), false
	}
	if !k.Shape[0].Equal(v.Shape[1]) {
		return no("attention with K head dim %s and V head dim %s: must be equal", k.Shape[0], v.Shape[1]), false
	}
	if q.DType != ir.F32 {
		return no("attention query of %s: f32 only (cast to f16 by the recipe)", q.DType), false
	}
	if mb := n.Attrs.MaxBias(); mb != 0 {
		return no("attention with ALiBi (max_bias %g) is not bound by runtime/acl", mb), false
	}
	return Support{OK: true}, true
}

// unfusedAttention is attention as ggml-cann runs llama.cpp's attention
// with flash attention off, which is also ggml-cpu's arithmetic: Q cast to
// f16, scores = Q·Kᵀ (aclnnMatmul, f16 operands, f32 result, the KV heads
// broadcast over their query heads), scale, mask, softmax, the
// probabilities cast to f16 and P·V (aclnnMatmul, f32 result). The f32
// scores and probabilities live in device scratch.
func unfusedAttention(n *ir.Node) Support {
	if s, ok := attentionOperands(n); !ok {
		return s
	}
	calls := []string{"aclnnCast", "aclnnMatmul", "aclnnMuls"}
	if len(n.Args) > 3 {
		calls = append(calls, "aclnnAdd")
	}
	return yes("aclnnMatmul", append(calls, "aclnnSoftmax", "aclnnCast", "aclnnMatmul")...)
}

// attentionWithoutFIA is the gate of a part without FIA: its attention
// runs unfused, saying why.
func attentionWithoutFIA(n *ir.Node, s Support, why string) Support {
	if n.Op != ir.OpAttention || s.Kernel != FIA {
		return s
	}
	u := unfusedAttention(n)
	if u.OK {
		u.Reason = "unfused: " + why
	}
	return u
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

// attentionWorkspace: fused (FIA), Q cast to f16, FIA's f16 output, K and V
// when padded, and with a mask its negation (f32) and the boolean
// attenMask of T rows; unfused, Q cast to f16 and the f16 result before
// its cast back, and the scores when the calls end in aclnnSoftmax
// (AttentionScoresBytes), with 32 bytes of alignment per piece.
func attentionWorkspace(n *ir.Node, s Support) int64 {
	q, err := n.Args[0].Type.Shape.Ne()
	if err != nil {
		return 0
	}
	k, err := n.Args[1].Type.Shape.Ne()
	if err != nil {
		return 0
	}
	if s.Kernel != FIA {
		ws := align32(2*elems(n.Args[0].Type)) + align32(2*elems(n.Type)) + 32
		if slices.Contains(s.Calls, "aclnnSoftmax") {
			ws += align32(AttentionScoresBytes(q[2], q[1], k[1])) + 32
		}
		return ws
	}
	dp, pad := FIAPadding(n)
	ws := 2 * align32(2*q[1]*q[2]*dp) // Q in f16 and FIA's f16 output
	if pad {
		ws += 2 * align32(2*k[1]*k[2]*dp) // K and V padded
	}
	if len(n.Args) > 3 {
		rows := q[1] * k[1]
		ws += align32(4*rows) + align32(rows)
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
