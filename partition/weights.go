package partition

import (
	"fmt"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/target"
)

// WeightBytes is what one weight takes on the NPU's device memory, the
// one definition that partition (DeviceWeightBytes), lower/cann (the
// weights region) and compiler (device_memory.weights_bytes) share.
type WeightBytes struct {
	// GGML are the weight's ggml blocks, uploaded as the file holds them
	// (or with the layout a q4_0 or q8_0 weight is converted to written
	// over them, target.WQInPlace); 0 when the device holds the weight in
	// its converted copy alone.
	GGML int64
	// Converted is the copy converted at load for
	// aclnnWeightQuantBatchMatmulV2 and get_rows (gguf/wqconv's layout,
	// sized by target.DeviceWeightBytes) that does not fit in the blocks.
	Converted int64
}

// Bytes is the weight's device memory: GGML + Converted.
func (w WeightBytes) Bytes() int64 { return w.GGML + w.Converted }

// DeviceWeights gives, for every weight an NPU node of g reads (dev gives
// each node's device, as Result.Device), the device memory it takes: in
// ggml's bytes, plus the copy converted at load for
// aclnnWeightQuantBatchMatmulV2 and get_rows (a get_rows from a table with
// an int4 layout runs on the CPU, as llama.cpp's input layer, and asks for
// nothing) when it does not fit in the weight's own bytes. A layout that
// fits (target.WQInPlace: q4_0, q8_0) replaces the blocks and adds
// nothing. A weight with a larger layout that only matmuls and get_rows
// read (as their matrix or table, on any device) lives in its converted
// copy alone: the runtime hands it to the device (runtime/acl's
// TakeWeight) instead of writing its blocks, so its ggml bytes are not
// counted. As runtime/program's region placement, this assumes the
// "wqbmm" QuantMatmul mode.
func DeviceWeights(g *ir.Graph, dev []target.Device, prof *target.Profile) (map[int]WeightBytes, error) {
	if len(dev) != len(g.Nodes) {
		return nil, fmt.Errorf("partition: device weights of %q: %d devices for %d nodes", g.Name, len(dev), len(g.Nodes))
	}
	type use struct{ npu, matmul, rows bool }
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
	out := make(map[int]WeightBytes, len(uses))
	for _, n := range g.Nodes {
		u := uses[n.ID]
		if u == nil {
			continue
		}
		b, err := n.Type.Bytes()
		if err != nil {
			return nil, fmt.Errorf("partition: weight %q: %w", n.Name, err)
		}
		_, ok := target.WQLayout(n.Type.DType)
		if !ok {
			out[n.ID] = WeightBytes{GGML: b}
			continue
		}
		// As runtime/acl's PlaceWeight: one copy for the matmuls and for
		// an NPU get_rows (whose table is int8: the target keeps int4
		// tables' get_rows on the CPU), in place when it fits.
		ne, err := n.Type.Shape.Ne()
		if err != nil {
			return nil, fmt.Errorf("partition: weight %q: %w", n.Name, err)
		}
		var w WeightBytes
		inPlace := target.WQInPlace(n.Type.DType, ne[0], ne[1]*ne[2]*ne[3])
		if inPlace || other[n.ID] || !u.matmul && !u.rows {
			w.GGML = b // the blocks (or a layout written over them)
		}
		if (u.matmul || u.rows) && !inPlace {
			if w.Converted, err = target.DeviceWeightBytes(n.Type); err != nil {
				return nil, fmt.Errorf("partition: weight %q: %w", n.Name, err)
			}
		}
		out[n.ID] = w
	}
	return out, nil
}

// deviceWeights sums DeviceWeights.
func deviceWeights(g *ir.Graph, dev []target.Device, prof *target.Profile) (ggml, converted int64, err error) {
	ws, err := DeviceWeights(g, dev, prof)
	if err != nil {
		return 0, 0, err
	}
	for _, w := range ws {
		ggml += w.GGML
		converted += w.Converted
	}
	return ggml, converted, nil
}

func isMatmul(op ir.Op) bool {
	return op == ir.OpMulMat || op == ir.OpMulMatAdd || op == ir.OpMulMatID
}
