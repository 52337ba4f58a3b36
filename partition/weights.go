package partition

import (
	"fmt"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/target"
)

// deviceWeights sums the device memory the NPU's weights take: every
// weight an NPU node reads in ggml's bytes (the weights region), plus the
// copies of quantised weights converted at load to what
// aclnnWeightQuantBatchMatmulV2 and get_rows read (gguf/wqconv, sized by
// target.DeviceWeightBytes; a table get_rows reads on the NPU gets an int8
// copy of an int4 layout, which the target never asks for: it keeps such
// a get_rows on the CPU, as llama.cpp keeps its input layer) that do not
// fit in the weight's own bytes. A layout that
// fits (target.WQInPlace: q4_0, q8_0) replaces the blocks in the weights
// region and adds nothing. A weight with a larger layout that only
// matmuls and get_rows read (as their matrix or table, on any device)
// lives in its converted copies alone: the runtime hands it to the device
// (runtime/acl's TakeWeight) instead of writing its blocks, so its ggml
// bytes are not counted. As runtime/program's region placement, this
// assumes the "wqbmm" QuantMatmul mode.
func deviceWeights(g *ir.Graph, dev []target.Device, prof *target.Profile) (ggml, converted int64, err error) {
	type use struct{ npu, matmul, rows, other bool }
	uses := map[int]*use{}
	other := map[int]bool{} // read other than as a matmul's matrix or a get_rows table
	for _, n := range g.Nodes {
		for i, a := range n.Args {
			if a.Op == ir.OpWeight && (i != 0 || !isMatmul(n.Op) && n.Op != ir.OpGetRows) {
				other[a.ID] = true
			}
		}
		if dev[n.ID] != target.NPU {
			continue
		}
		for i, a := range n.Args {
			if a.Op != ir.OpWeight {
				continue
			}
			u := uses[a.ID]
			if u == nil {
				u = &use{}
				uses[a.ID] = u
			}
			u.npu = true
			if i != 0 || !a.Type.DType.Quantized() {
				continue
			}
			switch n.Op {
			case ir.OpMulMat, ir.OpMulMatAdd, ir.OpMulMatID:
				u.matmul = u.matmul || prof.Supports(n).Kernel == "aclnnWeightQuantBatchMatmulV2"
			case ir.OpGetRows:
				u.rows = true
			}
		}
	}
	for _, n := range g.Nodes {
		u := uses[n.ID]
		if u == nil {
			continue
		}
		b, err := n.Type.Bytes()
		if err != nil {
			return 0, 0, fmt.Errorf("partition: weight %q: %w", n.Name, err)
		}
		l, ok := target.WQLayout(n.Type.DType)
		if !ok {
			ggml += b
			continue
		}
		// As runtime/acl's PlaceWeight: one copy for the matmuls (and for
		// an int8 table), in place when it fits; an int8 copy of an int4
		// table for get_rows.
		int4 := l.Dtype.String() == "int4"
		ne, err := n.Type.Shape.Ne()
		if err != nil {
			return 0, 0, fmt.Errorf("partition: weight %q: %w", n.Name, err)
		}
		inPlace := target.WQInPlace(n.Type.DType, ne[0], ne[1]*ne[2]*ne[3])
		if inPlace || other[n.ID] || !u.matmul && !u.rows {
			ggml += b // the blocks (or a layout written over them)
		}
		for _, c := range []struct{ need, widen bool }{
			{(u.matmul || u.rows && !int4) && !inPlace, false},
			{u.rows && int4, true},
		} {
			if !c.need {
				continue
			}
			b, err := target.DeviceWeightBytes(n.Type, c.widen)
			if err != nil {
				return 0, 0, fmt.Errorf("partition: weight %q: %w", n.Name, err)
			}
			converted += b
		}
	}
	return ggml, converted, nil
}

func isMatmul(op ir.Op) bool {
	return op == ir.OpMulMat || op == ir.OpMulMatAdd || op == ir.OpMulMatID
}
