package passes

import (
	"encoding/binary"
	"math"

	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/ir"
)

// The algebraic identities of the noop pass: an element-wise op with a
// constant operand whose every element is the op's identity element is
// its other operand, when that is exactly true in IEEE float (each rule's
// file says why) and the result has the operand's type. "Constant" is an
// ir.OpConst leaf (its bytes in the node, as fold leaves them); a weight
// of ones is data read at run time and is not folded.

// identityRules are the identity rules, one per file.
func identityRules() []*Rule { return []*Rule{mulOneRule(), divOneRule(), addNegZeroRule()} }

// splatBits reports whether n is a float constant (F32, F16 or BF16)
// whose every element has the bits of v in its dtype.
func splatBits(n *ir.Node, v float32) bool {
	if n.Op != ir.OpConst || len(n.Data) == 0 {
		return false
	}
	var want uint32
	size := 0
	switch n.Type.DType {
	case ir.F32:
		want, size = math.Float32bits(v), 4
	case ir.F16:
		want, size = uint32(gguf.F32ToF16(v)), 2
	case ir.BF16:
		want, size = uint32(gguf.F32ToBF16(v)), 2
	default:
		return false
	}
	if len(n.Data)%size != 0 {
		return false
	}
	for i := 0; i < len(n.Data); i += size {
		var got uint32
		if size == 4 {
			got = binary.LittleEndian.Uint32(n.Data[i:])
		} else {
			got = uint32(binary.LittleEndian.Uint16(n.Data[i:]))
		}
		if got != want {
			return false
		}
	}
	return true
}

// splat returns a predicate: a constant of v everywhere.
func splat(v float32) func(*ir.Node) bool {
	return func(n *ir.Node) bool { return splatBits(n, v) }
}

// notState is the operand guard of every identity (as of scale-one):
// replacing an op by persistent state would make the result alias it.
func notState(n *ir.Node) bool { return !aliasesState(n) }

// identityBuild replaces the root by x when their types agree (x is the
// result bit for bit only then: no broadcast, no conversion).
func identityBuild(_ *Builder, m *Match) (*ir.Node, error) { return sameAs(m.Get("x"), m.Root), nil }
