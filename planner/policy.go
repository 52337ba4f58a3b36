package planner

import (
	"slices"

	"github.com/irtool/irtool/ir"
)

// InPlacePolicy says which operands of a node its result may overwrite,
// the per-target table behind in-place reuse. The planner merges a node
// into an operand's storage only when, in addition, the operand is a
// planned tensor of its own (not a view, not persistent), it has the
// node's dtype and shape, the node reads it exactly once and no other use
// of it or of any view of it remains (ggml-alloc's n_children == 1 and
// n_views == 0). The policy only names the candidates.
//
// The zero value allows no in-place reuse at all.
type InPlacePolicy struct {
	// Name labels the policy in reports ("cpu", "npu"; "" for none).
	Name string
	// Table maps an op to the operand indexes its result may overwrite,
	// in the order they are tried.
	Table map[ir.Op][]int
	// Fallback decides for ops missing from Table (fused ops registered
	// later, say) from their registry entry; nil means no in-place.
	Fallback func(info *ir.OpInfo) []int
}

// Candidates returns the operand indexes n may overwrite, in the order
// they are tried.
func (p InPlacePolicy) Candidates(n *ir.Node) []int {
	if c, ok := p.Table[n.Op]; ok {
		return c
	}
	if p.Fallback == nil {
		return nil
	}
	info, ok := n.Info()
	if !ok {
		return nil
	}
	return p.Fallback(info)
}

// None reports whether the policy allows no in-place reuse for any op.
func (p InPlacePolicy) None() bool { return len(p.Table) == 0 && p.Fallback == nil }

// allOperands lists 0..ggmlMaxSrc-1; the planner ignores indexes beyond a
// node's operands. ggml tries every source of an in-place op in order.
var allOperands = []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}

// CPUPolicy mirrors ggml-alloc (llama.cpp c392e50, ggml_op_can_inplace and
// ggml_gallocr_allocate_node) from the op registry's flags: an op ggml lets
// run in place (ir.OpInfo.InplaceAny: scale, add, mul, silu, rope,
// rms_norm, soft_max among ours) may overwrite any operand, tried in
// operand order, exactly as ggml tries every source. Ops without the flag
// (mul_mat, get_rows, cont, cast, ...) never run in place, except that an
// op with the Inplace flag alone (fused ops, say) may overwrite operand 0,
// which is what that flag promises. Together with the planner's conditions
// this is ggml's rule, so the "gallocr" strategy reproduces llama.cpp's
// compute buffer. The CPU kernels of these ops read each element (or row)
// before writing the same element (or row) of the result, which makes the
// reuse safe; planned execution checks it.
func CPUPolicy() InPlacePolicy {
	return InPlacePolicy{Name: "cpu", Fallback: func(info *ir.OpInfo) []int {
		switch {
		case info.Kind != ir.KindCompute:
			return nil
		case info.InplaceAny:
			return allOperands
		case info.Inplace:
			return []int{0}
		}
		return nil
	}}
}

// NPUPolicy is the Ascend table: only element-wise ops (registry flag
// ElementWise: add, mul, scale, silu and element-wise fused ops) may
// overwrite operand 0, the "selfRef" of the aclnnInplace* kernels
// (aclnnInplaceAdd, aclnnInplaceMul, aclnnInplaceMuls, ...). Row-wise ops
// that ggml runs in place on the CPU (rms_norm, rope, soft_max) lower to
// aclnn kernels that make no promise about an output aliasing an input,
// so they get fresh storage. This costs some memory against CPUPolicy and
// never correctness.
func NPUPolicy() InPlacePolicy {
	return InPlacePolicy{Name: "npu", Fallback: func(info *ir.OpInfo) []int {
		if info.ElementWise && info.Kind == ir.KindCompute {
			return []int{0}
		}
		return nil
	}}
}

// policyOperands returns the candidate operand indexes valid for n.
func policyOperands(p InPlacePolicy, n *ir.Node) []int {
	c := p.Candidates(n)
	if len(c) == 0 {
		return nil
	}
	out := make([]int, 0, len(c))
	for _, i := range c {
		if i >= 0 && i < len(n.Args) && !slices.Contains(out, i) {
			out = append(out, i)
		}
	}
	return out
}
