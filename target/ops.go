package target

import (
	"fmt"

	"github.com/irtool/irtool/ir"
)

// rule decides NPU support for one node of its op.
type rule = func(n *ir.Node) Support

func yes(kernel string, calls ...string) Support {
	return Support{OK: true, Kernel: kernel, Calls: calls}
}

func no(format string, args ...any) Support {
	return Support{Reason: fmt.Sprintf(format, args...)}
}

func isFloat(t ir.DType) bool { return t == ir.F32 || t == ir.F16 }

func binary(kernel string) rule {
	return func(n *ir.Node) Support {
		for _, a := range n.Args {
			if !isFloat(a.Type.DType) {
				return no("%s of %s", n.Op, a.Type.DType)
			}
		}
		return yes(kernel)
	}
}

func unary(kernel string) rule {
	return func(n *ir.Node) Support {
		if dt := n.Args[0].Type.DType; !isFloat(dt) {
			return no("%s of %s", n.Op, dt)
		}
		if b, ok := n.Attrs.Float("bias"); ok && b != 0 {
			return no("%s with a bias: the CANN backend supports bias 0 only", n.Op)
		}
		return yes(kernel)
	}
}

// MatmulKernel names the aclnn matmul ggml-cann picks by operand rank:
// aclnnMm for 2-D, aclnnBatchMatMul for 3-D with equal batches, and
// aclnnMatmul, which broadcasts, for 4-D or for the repeated batches of
// grouped-query attention (ggml-cann's supports_op and compute_forward). A symbolic outer dim counts as more
// than one.
func MatmulKernel(a, b ir.Shape) string {
	one := func(d ir.Dim) bool { return d.IsConst() && d.Val == 1 }
	switch {
	case one(a[2]) && one(a[3]) && one(b[2]) && one(b[3]):
		return "aclnnMm"
	case one(a[3]) && one(b[3]) && a[2].Equal(b[2]):
		return "aclnnBatchMatMul"
	}
	return "aclnnMatmul"
}

func mulMat(n *ir.Node) Support {
	a, b := n.Args[0], n.Args[1]
	switch dt := a.Type.DType; dt {
	case ir.F32, ir.F16:
		k := MatmulKernel(a.Type.Shape, b.Type.Shape)
		if dt == ir.F16 && b.Type.DType == ir.F32 {
			// The activations cast to f16 first, as ggml-cpu converts them
			// to its vec_dot_type (runtime/acl's mul_mat recipe).
			return yes(k, "aclnnCast", k)
		}
		return yes(k)
	case ir.Q4_0, ir.Q8_0:
		if !Contiguous(a) || !Contiguous(b) {
			return no("quantised matmul needs contiguous operands (ggml-cann's supports_op and compute_forward)")
		}
		// Input cast to f16, weight-quant matmul, output cast back to f32.
		return yes("aclnnWeightQuantBatchMatmulV2", "aclnnCast", "aclnnWeightQuantBatchMatmulV2", "aclnnCast")
	default:
		return no("mul_mat with %s weights: the CANN backend runs only q4_0 and q8_0 quantised matmul (ggml-cann's supports_op and compute_forward); requantise to run it on the NPU", dt)
	}
}

// Contiguous reports whether a node's value is densely packed in ggml order,
// deciding from the graph alone (shapes may be symbolic): leaves and computed
// values are; reshapes keep their source's answer; a view is when its
// strides are the dense ones of its static shape; permutes and transposes
// are when they move only dims of size 1.
func Contiguous(n *ir.Node) bool {
	info, ok := n.Info()
	if !ok {
		return false
	}
	if info.Kind != ir.KindView {
		return true
	}
	switch n.Op {
	case ir.OpReshape:
		return Contiguous(n.Args[0])
	case ir.OpView:
		// The dense stride of dim i is known while dims 0..i-1 are
		// static; a symbolic dim (n_tokens) makes the strides after it
		// unknown, which is fine as long as those dims are 1.
		var ne [4]int64
		firstSym := len(n.Type.Shape)
		for i, d := range n.Type.Shape {
			ne[i] = 1
			if d.IsConst() {
				ne[i] = d.Val
			} else if i < firstSym {
				firstSym = i
			}
		}
		nb, _ := n.Attrs.Ints("nb")
		want := ir.ContiguousStrides(n.Type.DType, ne)
		for i, d := range n.Type.Shape {
			if d.IsConst() && d.Val == 1 {
				continue
			}
			if i > firstSym || i >= len(nb) || nb[i] != want[i] {
				return false
			}
		}
		return Contiguous(n.Args[0])
	case ir.OpPermute, ir.OpTransp:
		ax := []int64{1, 0, 2, 3}
		if n.Op == ir.OpPermute {
			ax, _ = n.Attrs.Ints("axes")
		}
		// The order of the dims that are not 1 must be unchanged.
		src := n.Args[0].Type.Shape
		last := int64(-1)
		for i, a := range ax {
			if d := src[i]; d.IsConst() && d.Val == 1 {
				continue
			}
			if a < last {
				return false
			}
			last = a
		}
		return Contiguous(n.Args[0])
	}
	// cpy, set_rows and fused writers: a window of their destination.
	return false
}

// gate310B applies the limits of 310-class parts: llama.cpp's CANN backend
// builds no ACL graph, no flash attention and no q4_0/q8_0 matmul for them
// (ggml-cann's supports_op for 310P), and Huawei's operator tables list
// aclnnRotaryPositionEmbedding, aclnnWeightQuantBatchMatmulV2 and
// aclnnFusedInferAttentionScoreV2 as unsupported on Atlas 200I/500 A2
// (CANN 8.3 aclnn reference, "产品支持情况"). llama.cpp emulates RoPE on
// 310P with roll/mul/add (ggml-cann's aclnn_ops.cpp); irtool does not, so RoPE falls back.
func gate310B(n *ir.Node, s Support) Support {
	for _, c := range s.Calls {
		switch c {
		case "aclnnRotaryPositionEmbedding", "aclnnWeightQuantBatchMatmulV2", "aclnnFusedInferAttentionScoreV2":
			return no("%s is not available on Atlas 200I/500 A2 (CANN aclnn operator reference, product support table)", c)
		}
	}
	for _, a := range n.Args {
		if a.Type.DType == ir.BF16 {
			return no("bf16 is not supported on 310-class parts (ggml-cann's supports_op and compute_forward)")
		}
	}
	return s
}

// strictly310B are the further aclnn operators whose CANN 8.x product table
// marks Atlas 200I/500 A2 "×" (aclnnMm, aclnnBatchMatMul, aclnnRmsNorm,
// aclnnIndexCopy/aclnnInplaceIndexCopy, aclnnGelu, aclnnReduceSum,
// aclnnTopk, aclnnInplaceMaskedFillScalar), or that its aclnnMatmul page does
// not list among supported products.
var strictly310B = map[string]bool{
	"aclnnMm": true, "aclnnBatchMatMul": true, "aclnnMatmul": true,
	"aclnnRmsNorm": true, "aclnnInplaceIndexCopy": true,
	// the MoE and GELU operators (CANN 8.3 aclnnGelu, aclnnReduceSum and
	// aclnnTopk product tables: Atlas 200I/500 A2 ×)
	"aclnnGelu": true, "aclnnReduceSum": true, "aclnnTopk": true, "aclnnInplaceMaskedFillScalar": true,
}

func gate310BStrict(n *ir.Node, s Support) Support {
	if s = gate310B(n, s); !s.OK {
		return s
	}
	for _, c := range s.Calls {
		if strictly310B[c] {
			return no("%s is marked unsupported for Atlas 200I/500 A2 in the CANN operator table", c)
		}
	}
	return s
}

// gammaRow reports whether w is a 1-D table as long as x's rows, the only
// gamma shape aclnnRmsNorm and aclnnAddRmsNorm take (gamma_shape =
// x_shape[n:], CANN aclnnRmsNorm reference).
func gammaRow(x, w ir.Type) bool {
	one := func(d ir.Dim) bool { return d.IsConst() && d.Val == 1 }
	return w.Shape[0].Equal(x.Shape[0]) && one(w.Shape[1]) && one(w.Shape[2]) && one(w.Shape[3])
}

// ropeHead checks the rope limits shared by the rope ops.
func ropeHead(x ir.Type) (Support, bool) {
	if x.DType != ir.F32 {
		// runtime/acl builds f32 cos/sin tables.
		return no("rope of %s: the cos/sin tables aclnnRotaryPositionEmbedding is given are f32, so x must be", x.DType), false
	}
	if d := x.Shape[0]; !d.IsConst() || d.Val > 896 {
		return no("rope head dim %s: the CANN backend takes at most 896", d), false
	}
	return Support{}, true
}

// ropeAttrs refuses the RoPE variants runtime/acl does not bind: a partial
// rotation (aclnnRotaryPositionEmbedding rotates the whole last dim),
// YaRN's ramp (ext_factor != 0) and a scaled magnitude (attn_factor != 1);
// x is the rotated tensor, or the table when its width is n_dims.
func ropeAttrs(n *ir.Node, x ir.Type) (Support, bool) {
	nd, _ := n.Attrs.Int("n_dims")
	if d := x.Shape[0]; d.IsConst() && d.Val != nd {
		return no("partial rope (n_dims %d of %d): aclnnRotaryPositionEmbedding rotates the whole head; the rest would need a split and a copy, not bound", nd, d.Val), false
	}
	if e, _ := n.Attrs.Float("ext_factor"); e != 0 {
		return no("YaRN rope (ext_factor %g) is not bound: the ramp between interpolated and extrapolated angles has no aclnn operator here", e), false
	}
	if a, ok := n.Attrs.Float("attn_factor"); ok && a != 1 {
		return no("rope with attn_factor %g is not bound", a), false
	}
	return Support{}, true
}

// ropeWrite lowers rope + set_rows into the K cache: the rotation, then the
// row scatter (after a cast to an f16 cache).
func ropeWrite(rope string, angles bool) rule {
	return func(n *ir.Node) Support {
		if s, ok := ropeHead(n.Args[1].Type); !ok {
			return s
		}
		if s, ok := ropeAttrs(n, n.Args[1].Type); !ok {
			return s
		}
		var calls []string
		if angles {
			// rope_set_rows makes its cos and sin tables from the positions.
			calls = ropeAngleCalls(n, false)
		}
		switch dt := n.Args[0].Type.DType; dt {
		case ir.F32:
			return yes("aclnnInplaceIndexCopy", append(calls, rope, "aclnnInplaceIndexCopy")...)
		case ir.F16:
			return yes("aclnnInplaceIndexCopy", append(calls, rope, "aclnnCast", "aclnnInplaceIndexCopy")...)
		default:
			return no("KV write into %s: f32 and f16 only", dt)
		}
	}
}

// The NPU support rules of the ops, one function per op; rules.go
// gathers them into the op records.

func npuGetRows(n *ir.Node) Support {
	one := func(d ir.Dim) bool { return d.IsConst() && d.Val == 1 }
	if t := n.Args[0].Type; t.DType != ir.F32 && !(one(t.Shape[2]) && one(t.Shape[3])) {
		// runtime/acl gathers batched tables (the MoE router's
		// probabilities) for f32 only.
		return no("get_rows from a batched %s table: f32 only", t.DType)
	}
	switch dt := n.Args[0].Type.DType; dt {
	case ir.F32:
		return yes("aclnnGatherV2")
	case ir.F16:
		return yes("aclnnGatherV2", "aclnnGatherV2", "aclnnCast")
	case ir.Q8_0:
		return yes("aclnnGatherV2", "aclnnMul", "aclnnGatherV2")
	default:
		return no("get_rows from a %s table: the CANN backend gathers f32, f16 and q8_0 only", dt)
	}
}

func npuSetRows(n *ir.Node) Support {
	dst, src := n.Args[0].Type.DType, n.Args[1].Type.DType
	if src != ir.F32 {
		return no("set_rows from %s rows: f32 only", src)
	}
	switch dst {
	case ir.F32:
		return yes("aclnnInplaceIndexCopy")
	case ir.F16:
		return yes("aclnnInplaceIndexCopy", "aclnnCast", "aclnnInplaceIndexCopy")
	}
	return no("set_rows into %s: the CANN backend writes f32 and f16 only", dst)
}

func npuCpy(n *ir.Node) Support {
	src, dst := n.Args[0].Type.DType, n.Args[1].Type.DType
	if !isFloat(src) || !isFloat(dst) {
		return no("cpy %s -> %s: f32/f16 only", src, dst)
	}
	if src != dst {
		return yes("aclnnCast")
	}
	return yes("aclnnInplaceCopy")
}

func npuCont(n *ir.Node) Support {
	if dt := n.Args[0].Type.DType; !isFloat(dt) {
		return no("cont of %s: f32/f16 only", dt)
	}
	return yes("aclnnInplaceCopy")
}

func npuCast(n *ir.Node) Support {
	if src, dst := n.Args[0].Type.DType, n.Type.DType; !isFloat(src) || !isFloat(dst) {
		return no("cast %s -> %s: f32/f16 only", src, dst)
	}
	return yes("aclnnCast")
}

func npuRMSNorm(n *ir.Node) Support {
	if dt := n.Args[0].Type.DType; dt != ir.F32 {
		return no("rms_norm of %s: the gamma table of ones runtime/acl passes aclnnRmsNorm is f32, so x must be", dt)
	}
	// gamma is a table of ones built at load time (llama.cpp PR #20747).
	return yes("aclnnRmsNorm")
}

func npuSoftMax(n *ir.Node) Support {
	if dt := n.Args[0].Type.DType; dt != ir.F32 {
		return no("soft_max of %s: f32 only", dt)
	}
	calls := []string{}
	if s, ok := n.Attrs.Float("scale"); !ok || s != 1 {
		calls = append(calls, "aclnnMuls")
	}
	if mb, _ := n.Attrs.Float("max_bias"); mb != 0 {
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

func npuRope(n *ir.Node) Support {
	if s, ok := ropeHead(n.Args[0].Type); !ok {
		return s
	}
	if s, ok := ropeAttrs(n, n.Args[0].Type); !ok {
		return s
	}
	switch m, _ := n.Attrs.Int("mode"); m {
	case 0, 2: // normal (interleaved) and neox (half)
	default:
		return no("rope mode %d is not lowered", m)
	}
	// The cos and sin tables from the positions, then the rotation.
	return yes("aclnnRotaryPositionEmbedding", append(ropeAngleCalls(n, len(n.Args) > 2), "aclnnRotaryPositionEmbedding")...)
}

// aclnnRmsNorm with the weight as gamma.
func npuRMSNormMul(n *ir.Node) Support {
	x, w := n.Args[0].Type, n.Args[1].Type
	if !isFloat(x.DType) || !isFloat(w.DType) {
		return no("rms_norm_mul of %s by %s", x.DType, w.DType)
	}
	if !gammaRow(x, w) {
		return no("rms_norm_mul weight %s is not one row of %s: aclnnRmsNorm takes gamma = x_shape[n:]", w, x)
	}
	return yes("aclnnRmsNorm")
}

// aclnnAddRmsNorm: the residual add and the norm in one operator
// (ggml-cann's optional ADD+RMS_NORM fusion; same shapes, no
// broadcast; ggml-cann's supports_op and compute_forward).
func npuAddRMSNormMul(n *ir.Node) Support {
	a, b, w := n.Args[0].Type, n.Args[1].Type, n.Args[2].Type
	if !a.Shape.Equal(b.Shape) {
		return no("add_rms_norm_mul of %s and %s: aclnnAddRmsNorm needs equal shapes", a, b)
	}
	if !gammaRow(a, w) {
		return no("add_rms_norm_mul weight %s is not one row of %s", w, a)
	}
	return yes("aclnnAddRmsNorm")
}

// ggml-cann's SwiGlu operator takes one tensor split in halves; with
// gate and up apart it falls back to Silu and an in-place Mul
// (ggml-cann's supports_op and compute_forward, GLU).
func npuSwiGLU(n *ir.Node) Support {
	return yes("aclnnSilu", "aclnnSilu", "aclnnInplaceMul")
}

// The matmul ggml-cann would pick, then the bias added in place into its
// output (aclnnInplaceAdd, as runtime/acl's recipe does).
func npuMulMatAdd(n *ir.Node) Support {
	s := mulMat(n)
	if !s.OK {
		return s
	}
	if len(s.Calls) == 0 {
		s.Calls = []string{s.Kernel}
	}
	s.Calls = append(append([]string(nil), s.Calls...), "aclnnInplaceAdd")
	return s
}

// ropeAngleCalls are the aclnn calls runtime/acl makes for the RoPE angles
// of a step from its positions, as ggml_rope_cache_init computes them:
// ggml's angle chain is precomputed on the host for every position below
// n_ctx as a constant table (lower/cann passes n_ctx to the kernel) and the
// step's rows are gathered (aclnnGatherV2, the i32 positions as its
// index), divided by the frequency factors [aclnnDiv], scaled by
// freq_scale when it is not 1 [aclnnMuls], then cos and sin.
func ropeAngleCalls(n *ir.Node, factors bool) []string {
	calls := []string{"aclnnGatherV2"}
	if factors {
		calls = append(calls, "aclnnDiv")
	}
	if fs, ok := n.Attrs.Float("freq_scale"); ok && fs != 1 {
		calls = append(calls, "aclnnMuls")
	}
	return append(calls, "aclnnCos", "aclnnSin")
}

// The RoPE cache built on the device from the positions (llama.cpp
// PRs #15912, #20747): the angle calls of ropeAngleCalls, then cos and sin
// copied into the IR table (two aclnnInplaceCopy). These are the calls the
// recipe launches, in order (runtime/acl's TestRecipeCallsMatchTarget
// checks them, and those of every other op it sees).
func npuRopeCache(n *ir.Node) Support {
	if s, ok := ropeAttrs(n, n.Type); !ok {
		return s
	}
	return yes("aclnnSin", append(ropeAngleCalls(n, len(n.Args) > 1), "aclnnInplaceCopy", "aclnnInplaceCopy")...)
}

// ggml-cann's formulation: angles from positions and a table of
// inverse frequencies (a folded constant), then cos and sin.
func npuRopeCacheTable(n *ir.Node) Support {
	if s, ok := ropeAttrs(n, n.Type); !ok {
		return s
	}
	calls := []string{"aclnnCast", "aclnnMul"}
	if len(n.Args) > 2 {
		calls = append(calls, "aclnnDiv")
	}
	if fs, ok := n.Attrs.Float("freq_scale"); ok && fs != 1 {
		calls = append(calls, "aclnnMuls")
	}
	// The half-width angles spread over each pair's two columns, cos and
	// sin, then the IR table (runtime/acl's recipe).
	return yes("aclnnSin", append(calls, "aclnnInplaceCopy", "aclnnCos", "aclnnSin", "aclnnInplaceCopy", "aclnnInplaceCopy")...)
}

// aclnnRotaryPositionEmbedding(x, cos, sin, mode) is this op.
func npuRopeApply(n *ir.Node) Support {
	if s, ok := ropeHead(n.Args[0].Type); !ok {
		return s
	}
	if s, ok := ropeAttrs(n, n.Args[0].Type); !ok {
		return s
	}
	return yes("aclnnRotaryPositionEmbedding")
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
	if mb, _ := n.Attrs.Float("max_bias"); mb != 0 {
		return no("attention with ALiBi (max_bias %g) is not bound by runtime/acl", mb)
	}
	calls := []string{"aclnnCast", "aclnnMatmul", "aclnnMuls"}
	if len(n.Args) > 3 {
		calls = append(calls, "aclnnAdd")
	}
	return yes("aclnnMatmul", append(calls, "aclnnSoftmax", "aclnnCast", "aclnnMatmul")...)
}

func npuConcat(n *ir.Node) Support {
	for _, a := range n.Args {
		if !isFloat(a.Type.DType) {
			return no("concat of %s", a.Type.DType)
		}
	}
	return yes("aclnnCat")
}
