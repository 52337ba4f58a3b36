package target

import (
	"fmt"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/gguf/wqconv"
	"github.com/irtool/irtool/ir"
)

// The NPU's quantised weights: every ggml block type gguf/wqconv maps to
// what aclnnWeightQuantBatchMatmulV2 takes (int4/int8 values, f16
// per-group scale and offset) is converted once, when the weights are
// placed on the device, and mul_mat, mul_mat_add, mul_mat_id and get_rows
// read the converted layout (docs/LOWERING.md, "Quantised weights for
// aclnnWeightQuantBatchMatmulV2").

// WQLayout is the device layout of a weight of dtype dt read by the
// NPU's quantised recipes, and whether dt has one.
func WQLayout(dt ir.DType) (wqconv.Layout, bool) {
	if !dt.Quantized() {
		return wqconv.Layout{}, false
	}
	l, err := wqconv.LayoutOf(gguf.GGMLType(dt))
	return l, err == nil
}

// WQTypes lists the weight types the NPU's quantised recipes take, in
// ggml's id order.
func WQTypes() []ir.DType {
	var out []ir.DType
	for _, t := range wqconv.Types() {
		out = append(out, ir.DType(t))
	}
	return out
}

// wqRows checks a quantised weight of rows of k elements (its ne[0]) for
// the converted layout: a type with a mapping and a static k that is a
// whole number of blocks (k's limit on Atlas A2/A3 is the target's call
// limits', target/limits.go).
// It returns the layout and "" or the reason it does not fit.
func wqRows(a *ir.Node) (wqconv.Layout, string) {
	dt := a.Type.DType
	l, ok := WQLayout(dt)
	if !ok {
		return l, fmt.Sprintf("%s weights have no aclnnWeightQuantBatchMatmulV2 layout (gguf/wqconv converts %s)", dt, typeList())
	}
	k := a.Type.Shape[0]
	if !k.IsConst() || k.Val%dt.BlockSize() != 0 {
		return l, fmt.Sprintf("%s weight of %s columns (not a static multiple of %d)", dt, k, dt.BlockSize())
	}
	return l, ""
}

func typeList() string {
	s := ""
	for i, t := range WQTypes() {
		if i > 0 {
			s += " "
		}
		s += t.String()
	}
	return s
}

// wqElems is the element count of a static weight, 0 when symbolic.
func wqElems(t ir.Type) float64 {
	return float64(elems(t))
}

// npuWeightBytes is the change in a node's modelled bytes when the NPU
// reads its quantised weight (operand 0) in the converted layout rather
// than in ggml's blocks: (device bytes per weight − ggml bytes per weight)
// × the weights read (the whole matrix for mul_mat and get_rows' rows, the
// chosen experts for mul_mat_id).
func npuWeightBytes(n *ir.Node, s Support, b ir.Bindings) float64 {
	if len(n.Args) == 0 {
		return 0
	}
	a := n.Args[0]
	l, ok := WQLayout(a.Type.DType)
	if !ok || a.Op != ir.OpWeight {
		return 0
	}
	dt := a.Type.DType
	per := l.BytesPerWeight() - float64(dt.TypeSize())/float64(dt.BlockSize())
	if l.HighBits && n.Op != ir.OpGetRows {
		per += HighBitsBytesPerWeight
	}
	switch n.Op {
	case ir.OpMulMat, ir.OpMulMatAdd:
		if s.Kernel != "aclnnWeightQuantBatchMatmulV2" {
			return 0
		}
		return per * wqElems(a.Type)
	case ir.OpMulMatID:
		if s.Kernel != "aclnnWeightQuantBatchMatmulV2" {
			return 0
		}
		so, err := n.Type.Shape.Eval(b)
		sa, err2 := a.Type.Shape.Eval(b)
		if err != nil || err2 != nil {
			return 0
		}
		return per * float64(sa[0].Val*sa[1].Val*so[1].Val*so[2].Val)
	case ir.OpGetRows:
		if dt == ir.Q8_0 {
			return 0 // gathered from ggml's blocks
		}
		out, err := numel(n.Type, b)
		if err != nil {
			return 0
		}
		return per * out // int8 layouts only: an int4 table's rows are the CPU's
	}
	return 0
}

// DeviceWeightBytes is the size of a weight on the NPU: the converted
// layout's (values, scales, offsets) for a quantised type the NPU's
// recipes read converted, with rows of k = ne[0], or the ggml bytes
// otherwise.
func DeviceWeightBytes(t ir.Type) (int64, error) {
	ne, err := t.Shape.Ne()
	if err != nil {
		return 0, err
	}
	l, ok := WQLayout(t.DType)
	if !ok {
		return t.Bytes()
	}
	return l.DeviceBytes(int(ne[1]*ne[2]*ne[3]), int(ne[0])), nil
}

// WQInPlace reports whether the converted layout of a weight of dtype dt
// with rows rows of k values fits in its ggml bytes, so that the runtime
// writes it over the blocks when it places the weight and the device
// holds the weight once: q4_0 and q8_0, whose layouts (int4 or int8
// values, then one f16 scale per 32) are as large as their blocks.
// ggml-cann transforms these two types in place too (its set_tensor,
// ggml-cann.cpp). The other layouts are larger and live beside the
// blocks.
func WQInPlace(dt ir.DType, k, rows int64) bool {
	l, ok := WQLayout(dt)
	if !ok || k <= 0 || rows <= 0 || k%dt.BlockSize() != 0 {
		return false
	}
	return l.DeviceBytes(int(rows), int(k)) <= rows*k/dt.BlockSize()*dt.TypeSize()
}
