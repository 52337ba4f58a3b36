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
// target.DeviceWeightBytes; a get_rows from a table with an int4 layout
// runs on the CPU, as llama.cpp's input layer, and asks for nothing) that
// do not fit in the weight's own bytes. A layout that
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
		_, ok := target.WQLayout(n.Type.DType)
		if !ok {
			ggml += b
			continue
		}
		// As runtime/acl's PlaceWeight: one copy for the matmuls and for
		// an NPU get_rows (whose table is int8: the target keeps int4
		// tables' get_rows on the CPU), in place when it fits.
		ne, err := n.Type.Shape.Ne()
		if err != nil {
			return 0, 0, fmt.Errorf("partition: weight %q: %w", n.Name, err)
		}
		inPlace := target.WQInPlace(n.Type.DType, ne[0], ne[1]*ne[2]*ne[3])
		if inPlace || other[n.ID] || !u.matmul && !u.rows {
			ggml += b // the blocks (or a layout written over them)
		}
		if (u.matmul || u.rows) && !inPlace {
			b, err := target.DeviceWeightBytes(n.Type)
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
