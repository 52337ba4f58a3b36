package target

import (
	"fmt"

	"github.com/irtool/irtool/ir"
)

// WQBMMMaxDim is the largest k and n one aclnnWeightQuantBatchMatmulV2 call
// takes on Atlas A2/A3: "k, n not in [1, 65535]" is an argument error (the
// operator's page, hiascend.com CANN aclnn API reference,
// aclnnWeightQuantBatchMatmulV2, Atlas A2/A3 constraints; ops-nn's
// op_api/aclnn_weight_quant_batch_matmul_v2.cpp checks it for those SoCs
// only). llama.cpp's CANN backend splits n into chunks of this size
// (ggml/src/ggml-cann/aclnn_ops.cpp, ggml_cann_mul_mat_quant).
const WQBMMMaxDim = 65535

// WQBMMChunks returns the column ranges [N0, N0+N) of the weight-quant
// matmul calls that cover n output columns: one call per WQBMMMaxDim
// columns, the last one shorter. runtime/acl's recipe and the Calls the
// target declares both split by it.
func WQBMMChunks(n int64) []Chunk {
	var out []Chunk
	for n0 := int64(0); n0 < n; n0 += WQBMMMaxDim {
		out = append(out, Chunk{N0: n0, N: min(WQBMMMaxDim, n-n0)})
	}
	return out
}

// Chunk is one column range of a split call.
type Chunk struct{ N0, N int64 }

// WQBMMGroup is the antiquantGroupSize of a call whose reduce dim is k,
// for weights quantised in blocks of block values along k: CANN takes a
// group size only in [32, k-1] (a multiple of 32), so a block that covers
// the whole row is the per-channel case, group 0 with a (1, n) scale
// (aclnnWeightQuantBatchMatmulV2, antiquantGroupSize), as llama.cpp's CANN
// backend passes 0 when k is 32.
func WQBMMGroup(k, block int64) int64 {
	if block >= k {
		return 0
	}
	return block
}

// CallLimit is one documented limit of an aclnn operator that a node's
// shapes can break, checked at compile time: Check returns "" when the
// calls the node's recipe makes keep the limit, else what breaks it. The
// limits a recipe honours by construction (the n split, the group size
// above) are not here: docs/CANN-CONSTRAINTS.md lists every constraint
// and the test that holds the recipe to it.
type CallLimit struct {
	Op     string // the aclnn operator
	Arg    string // the argument the limit is on
	Source string // the public page stating it
	Check  func(n *ir.Node) string
}

// a2Limits are the limits of Atlas A2/A3 (ascend910b) that no recipe can
// split around: Supports refuses a node that breaks one, naming the node,
// the operator and the argument, and the node stays on the host.
var a2Limits = []CallLimit{
	{Op: "aclnnWeightQuantBatchMatmulV2", Arg: "weight (k)", Source: wqbmmSource, Check: func(n *ir.Node) string {
		// The reduce dim is not split: partial products summed in f16
		// would round differently from one call.
		if k := n.Args[0].Type.Shape[0]; k.IsConst() && (k.Val < 1 || k.Val > WQBMMMaxDim) {
			return fmt.Sprintf("k = %d outside [1, %d]", k.Val, WQBMMMaxDim)
		}
		return ""
	}},
	{Op: "aclnnWeightQuantBatchMatmulV2", Arg: "x (m)", Source: wqbmmSource, Check: func(n *ir.Node) string {
		b := n.Args[1].Type.Shape
		if m := b[1]; m.IsConst() && m.Val > 1<<31-1 {
			return fmt.Sprintf("m = %d outside [1, 2^31-1]", m.Val)
		}
		return ""
	}},
}

const wqbmmSource = "hiascend.com CANN aclnn API reference, aclnnWeightQuantBatchMatmulV2 (Atlas A2/A3 constraints)"

// CallLimits returns the compile-time limits the profile checks (none on
// profiles without them).
func (p *Profile) CallLimits() []CallLimit { return p.limits }

// checkLimits refuses s when one of its calls breaks a limit.
func checkLimits(limits []CallLimit, n *ir.Node, s Support) Support {
	for _, l := range limits {
		if !callsInclude(s, l.Op) {
			continue
		}
		if why := l.Check(n); why != "" {
			return Support{Reason: fmt.Sprintf("node %d (%s %s): %s %s: %s (%s)", n.ID, n.Op, n.Name, l.Op, l.Arg, why, l.Source)}
		}
	}
	return s
}

func callsInclude(s Support, op string) bool {
	if s.Kernel == op {
		return true
	}
	for _, c := range s.Calls {
		if c == op {
			return true
		}
	}
	return false
}

// wqbmmCalls are the calls of a weight-quant matmul by weight a: the
// activations cast to f16, one aclnnWeightQuantBatchMatmulV2 per chunk of
// WQBMMChunks, the f16 result cast back.
func wqbmmCalls(a *ir.Node) []string {
	calls := []string{"aclnnCast"}
	for range WQBMMChunks(constOr1(a.Type.Shape[1])) {
		calls = append(calls, "aclnnWeightQuantBatchMatmulV2")
	}
	return append(calls, "aclnnCast")
}

// constOr1 is d's value, 1 when d is symbolic.
func constOr1(d ir.Dim) int64 {
	if d.IsConst() {
		return d.Val
	}
	return 1
}
