package target

import (
	"fmt"

	"github.com/irtool/irtool/ir"
)

// The helpers the rules of every op family share (the rules themselves are
// in one file per family: copy.go, elementwise.go, norm.go, matmul.go,
// rope.go, attention.go, moe.go). Each NPU rule names the aclnn calls
// runtime/acl's recipe makes; where the device's arithmetic differs from
// ggml-cpu's the difference is in docs/LOWERING.md.

// rule decides NPU support for one node of its op.
type rule = func(n *ir.Node) Support

func yes(kernel string, calls ...string) Support {
	return Support{OK: true, Kernel: kernel, Calls: calls}
}

func no(format string, args ...any) Support {
	return Support{Reason: fmt.Sprintf(format, args...)}
}

func isFloat(t ir.DType) bool { return t == ir.F32 || t == ir.F16 }

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
		nb, _ := n.Attrs.Ints(ir.AttrNB)
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
			ax, _ = n.Attrs.Ints(ir.AttrAxes)
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
	s = attentionWithoutFIA(n, s, "aclnnFusedInferAttentionScoreV2 is not available on Atlas 200I/500 A2 (CANN aclnn operator reference, product support table)")
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

// align32 rounds n up to the 32 bytes runtime/acl aligns its staging to.
func align32(n int64) int64 { return (n + 31) / 32 * 32 }
