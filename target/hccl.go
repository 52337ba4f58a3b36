package target

import (
	"fmt"

	"github.com/irtool/irtool/ir"
)

// The HCCL rules of the collective ops. By default (collective.go) the
// collectives run on the host between segments; under HCCLRules the NPU
// runs them as HCCL calls on the segment's stream
// (HcclAllReduce, HcclAllGather, HcclReduceScatter, HcclSend, HcclRecv;
// the HCCL API reference), so a captured segment records them with its
// kernels and every replay runs them. Their operands and results are the
// planned tensors of the segment, like any kernel's; the binding
// (runtime/acl) makes the call through the communicator of the node's
// group.

// HCCLCalls names the HCCL call each collective op lowers to: the one
// table the rules (Support.Kernel), the lowering and the binding
// (runtime/acl) read.
var HCCLCalls = map[ir.Op]string{
	ir.OpAllReduce:     "HcclAllReduce",
	ir.OpAllGather:     "HcclAllGather",
	ir.OpReduceScatter: "HcclReduceScatter",
	ir.OpSend:          "HcclSend",
	ir.OpRecv:          "HcclRecv",
}

// HCCLRules returns a rule set over DefaultRules in which the NPU
// runs every collective node that HCCL can compute on the planned tensors:
// any all_reduce, send and recv; a reduce_scatter whose split dim is the
// outermost one of size above 1; an all_gather of equal parts. HCCL
// concatenates whole buffers in rank order, so an all_gather along an
// inner dim gathers into the node's workspace (the size of its result),
// then the binding moves each rank's blocks into place with device copies
// on the same stream. The others stay on the host, with the reason.
func HCCLRules() (*Rules, error) {
	r := NewRules()
	for _, op := range ir.CollectiveOps() {
		def, ok := DefaultRules().Lookup(op)
		if !ok {
			return nil, fmt.Errorf("target: HCCL rules: op %s has no default rule", op)
		}
		rule := OpRule{NPU: hcclSupport(op), Traffic: def.Traffic, Workspace: hcclWorkspace}
		if err := r.Override(op, rule); err != nil {
			return nil, fmt.Errorf("target: HCCL rules: %w", err)
		}
	}
	return r, nil
}

// outerSplit reports whether every dim of shape above d has size 1: the
// split along d is then the whole buffer's.
func outerSplit(shape ir.Shape, d int) bool {
	for i := d + 1; i < ir.MaxDims; i++ {
		if !shape[i].IsConst() || shape[i].Val != 1 {
			return false
		}
	}
	return true
}

// hcclWorkspace is the scratch of an all_gather along an inner dim: its
// gathered result before the blocks are moved into place.
func hcclWorkspace(n *ir.Node, s Support) int64 {
	if n.Op != ir.OpAllGather || len(n.Args) == 0 || outerSplit(n.Args[0].Type.Shape, int(n.Attrs.GatherDim())) {
		return 0
	}
	b, err := n.Type.Bytes()
	if err != nil {
		return 0
	}
	return b
}

func hcclSupport(op ir.Op) func(n *ir.Node) Support {
	kernel := HCCLCalls[op]
	return func(n *ir.Node) Support {
		switch n.Type.DType {
		case ir.F32, ir.F16, ir.BF16, ir.I32, ir.I16, ir.I8, ir.I64:
		default:
			return Support{Reason: fmt.Sprintf("%s has no HcclDataType for %s", kernel, n.Type.DType)}
		}
		switch op {
		case ir.OpAllGather:
			if n.Attrs.Counts() != nil {
				return Support{Reason: "an all_gather of unequal parts (counts) is not lowered to HCCL"}
			}
		case ir.OpReduceScatter:
			if d := int(n.Attrs.GatherDim()); !outerSplit(n.Type.Shape, d) {
				return Support{Reason: fmt.Sprintf("reduce_scatter along dim %d under a dim of size above 1: HCCL scatters whole buffers", d)}
			}
		}
		return Support{OK: true, Kernel: kernel}
	}
}
