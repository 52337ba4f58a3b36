package target

import (
	"github.com/irtool/irtool/gguf/wqconv"
	"github.com/irtool/irtool/ir"
)

// The rules of the ops that move data (ir/copy.go).
func init() {
	mustRule(ir.OpGetRows, OpRule{NPU: npuGetRows, Traffic: getRowsTraffic, Workspace: getRowsWorkspace})
	mustRule(ir.OpSetRows, OpRule{NPU: npuSetRows, Traffic: writeTraffic(0), Workspace: setRowsWorkspace})
	mustRule(ir.OpCpy, OpRule{NPU: npuCpy, Traffic: writeTraffic(0), Workspace: NoWorkspace})
	mustRule(ir.OpCont, OpRule{NPU: npuCont, Traffic: streamTraffic(1), Workspace: NoWorkspace})
	mustRule(ir.OpCast, OpRule{NPU: npuCast, Traffic: streamTraffic(1), Workspace: NoWorkspace})
	mustRule(ir.OpConcat, OpRule{NPU: npuConcat, Traffic: streamTraffic(1), Workspace: NoWorkspace})
	mustRule(ir.OpTransfer, OpRule{CPUOnly: "a transfer is a host<->device copy step of the program (aclrtMemcpyAsync), not a kernel", Traffic: streamTraffic(1)})
}

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
		// The rows of the table converted at load (gguf/wqconv): int8
		// values, scales (and offsets) gathered, then (w + offset) · scale
		// in f32.
		l, why := wqRows(n.Args[0])
		if why != "" {
			return no("get_rows: %s", why)
		}
		if l.Dtype == wqconv.Int4 {
			// No operator bound here gathers int4 rows, and an int8
			// copy of the table just for them would hold it twice
			// (the int4 layout a tied output projection reads, or
			// the blocks). The CPU gathers it from the file, as
			// llama.cpp keeps its input layer on the CPU
			// (src/llama-model.cpp, load_tensors: "there is very
			// little benefit to offloading the input layer"); one
			// step's embeddings go to the device.
			return no("get_rows from a %s table (int4 on the NPU) runs on the cpu, as llama.cpp's input layer", n.Args[0].Type.DType)
		}
		calls := []string{"aclnnGatherV2", "aclnnGatherV2"}
		if l.Offset {
			calls = append(calls, "aclnnGatherV2", "aclnnCast", "aclnnCast", "aclnnInplaceAdd")
		} else {
			calls = append(calls, "aclnnCast")
		}
		return yes("aclnnGatherV2", append(calls, "aclnnCast", "aclnnInplaceMul")...)
	}
}

// getRowsTraffic: only the picked rows of the table are read.
func getRowsTraffic(n *ir.Node, b ir.Bindings) (float64, float64, error) {
	_, out, elems, err := ioBytes(n, b)
	if err != nil {
		return 0, 0, err
	}
	idx, _ := bytesOf(n.Args[1].Type, b)
	rows := elems * float64(n.Args[0].Type.DType.TypeSize()) / float64(n.Args[0].Type.DType.BlockSize())
	return 0, rows + idx + out, nil
}

// getRowsWorkspace: the gathered rows before their cast or scale, for a
// table that is not f32.
func getRowsWorkspace(n *ir.Node, _ Support) int64 {
	dt := n.Args[0].Type.DType
	if l, ok := WQLayout(dt); ok && dt != ir.Q8_0 {
		// The gathered int8 values, f16 scales and offsets, and their f32
		// casts.
		rows := elems(n.Type) / max(1, elemsK(n))
		g := rows * ((elemsK(n) + int64(l.Span) - 1) / int64(l.Span))
		return align32(elems(n.Type)) + 2*align32(2*g) + 2*align32(4*g)
	}
	if dt != ir.F32 {
		return 4 * elems(n.Type)
	}
	return 0
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

// setRowsWorkspace: the f16 cast of the rows written into an f16 cache.
func setRowsWorkspace(n *ir.Node, _ Support) int64 {
	if n.Args[0].Type.DType == ir.F16 {
		return 2 * elems(n.Args[1].Type)
	}
	return 0
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

func npuConcat(n *ir.Node) Support {
	for _, a := range n.Args {
		if !isFloat(a.Type.DType) {
			return no("concat of %s", a.Type.DType)
		}
	}
	return yes("aclnnCat")
}

// elemsK is the row length of a get_rows result (0 when symbolic).
func elemsK(n *ir.Node) int64 {
	if d := n.Type.Shape[0]; d.IsConst() {
		return d.Val
	}
	return 0
}
