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
// target.DeviceWeightBytes; a table get_rows reads gets an int8 copy of an
// int4 layout). A weight the NPU only multiplies or gathers still keeps
// its ggml bytes on the device: the runtime writes them there and converts
// from them.
func deviceWeights(g *ir.Graph, dev []target.Device, prof *target.Profile) (ggml, converted int64, err error) {
	type use struct{ npu, matmul, rows bool }
	uses := map[int]*use{}
	for _, n := range g.Nodes {
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
		ggml += b
		l, ok := target.WQLayout(n.Type.DType)
		if !ok {
			continue
		}
		// As runtime/acl's PlaceWeight: one copy for the matmuls (and for
		// an int8 table), an int8 copy of an int4 table for get_rows; q8_0
		// tables are gathered from their blocks.
		rows8 := u.rows && n.Type.DType != ir.Q8_0
		int4 := l.Dtype.String() == "int4"
		for _, c := range []struct{ need, widen bool }{
			{u.matmul || rows8 && !int4, false},
			{rows8 && int4, true},
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
