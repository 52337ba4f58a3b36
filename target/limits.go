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
	if l, ok := WQLayout(a.Type.DType); ok && l.HighBits {
		// The fifth bits: per HighBitsChunks range, the bitmask expanded
		// to one byte per weight (aclnnExpand, aclnnRightShift by the
		// bit's position, aclnnBitwiseAndScalar 1), the scales times 16
		// (aclnnMuls), the int8 weight-quant matmul with the offsets of
		// the −0.5 table (HighBitsOffsetTable); its output added to the
		// first.
		for range HighBitsChunks(constOr1(a.Type.Shape[0]), constOr1(a.Type.Shape[1])) {
			calls = append(calls, "aclnnExpand", "aclnnRightShift", "aclnnBitwiseAndScalar", "aclnnMuls",
				"aclnnWeightQuantBatchMatmulV2")
		}
		calls = append(calls, "aclnnInplaceAdd")
	}
	return append(calls, "aclnnCast")
}

// HighBitsElems bounds the weights one expansion of a HighBits layout's
// bitmask unpacks (two bytes each of arena scratch: the expanded and the
// shifted bytes).
const HighBitsElems = 1 << 23

// HighBitsOffsetTable is the number of f16 −0.5 values of the table the
// second matmul of every HighBits weight reads its antiquantOffset from
// (a prefix of it: the offsets of one chunk are all −0.5), uploaded once
// per device with runtime/acl's tables (device_memory.tables_bytes): one
// per group of 32 of the largest chunk.
const HighBitsOffsetTable = HighBitsElems / 32

// HighBitsChunks returns the output-column ranges over which the second
// matmul of a HighBits weight (gguf/wqconv: q5_0's fifth bits) with rows
// of k values and n output columns expands its bitmask: at most
// HighBitsElems weights and WQBMMMaxDim columns each. runtime/acl's recipe,
// the Calls and the workspace the target plans all split by it.
func HighBitsChunks(k, n int64) []Chunk {
	per := min(max(HighBitsElems/max(k, 1), 1), WQBMMMaxDim)
	var out []Chunk
	for n0 := int64(0); n0 < n; n0 += per {
		out = append(out, Chunk{N0: n0, N: min(per, n-n0)})
	}
	return out
}

// HighBitsScratch is the arena scratch of a HighBits weight's second
// matmul (rows of k, n output columns, m activation rows): the expanded
// and the shifted bitmask (k bytes per column of the largest chunk), its
// f16 scales (2·k/32 bytes per column), and its f16 output (2·m·n), each
// 32-byte aligned, and 64 bytes for aligning them after the input and
// output staging. 0 for other layouts.
func HighBitsScratch(dt ir.DType, k, n, m int64) int64 {
	l, ok := WQLayout(dt)
	if !ok || !l.HighBits {
		return 0
	}
	var c int64
	for _, ch := range HighBitsChunks(k, n) {
		c = max(c, ch.N)
	}
	g := k / int64(l.Span)
	return 2*align32(k*c) + align32(2*g*c) + align32(2*m*n) + 64
}

// HighBitsBytesPerWeight is the scratch traffic per weight of a HighBits
// layout's second matmul, beyond its layout's bytes: the bitmask read
// (1/8) and expanded (1 written), shifted and masked (1 read and 1
// written each), the int8 bits read by the matmul (1), and its scales and
// offsets (the scales times 16 made per call: 4 bytes per group of 32,
// both read by the matmul: 4 more).
const HighBitsBytesPerWeight = 1.0/8 + 1 + 2 + 2 + 1 + 8.0/32

// constOr1 is d's value, 1 when d is symbolic.
func constOr1(d ir.Dim) int64 {
	if d.IsConst() {
		return d.Val
	}
	return 1
}
