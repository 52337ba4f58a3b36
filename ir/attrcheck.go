package ir

import (
	"fmt"
	"math"
)

// Attribute range checks: Verify refuses attribute values no
// kernel can run, so that a hand-written or hostile graph fails at
// verification with the node named rather than later in a kernel (or with
// a silent NaN). CheckNode applies checkAttrValues to every node; the ops
// registered here add their own ranges through AttrRange in their Check.

// checkAttrValues checks what holds for every attribute of every op: floats
// are finite, and an integer list is at most MaxAttrList long.
func checkAttrValues(n *Node) error {
	for _, k := range n.Attrs.Keys() {
		switch v := n.Attrs[k].(type) {
		case float64:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("attribute %s = %v is not finite", k, v)
			}
		case []float64:
			for i, x := range v {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					return fmt.Errorf("attribute %s[%d] = %v is not finite", k, i, x)
				}
			}
			if len(v) > MaxAttrList {
				return fmt.Errorf("attribute %s has %d values, more than %d", k, len(v), MaxAttrList)
			}
		case []int64:
			if len(v) > MaxAttrList {
				return fmt.Errorf("attribute %s has %d values, more than %d", k, len(v), MaxAttrList)
			}
		}
	}
	return nil
}

// MaxAttrList bounds the length of a list attribute.
const MaxAttrList = 1 << 16

// AttrRange is the allowed range of one numeric attribute, for an op's
// Check: the attribute must be present (unless Optional), of the given kind
// (Int: an int64; otherwise an int64 or a float64), and within [Min, Max];
// MinOpen makes the lower bound exclusive.
type AttrRange struct {
	Key      string
	Int      bool
	Min, Max float64
	MinOpen  bool
	Optional bool
}

// CheckAttrRanges checks n's attributes against rs and returns the first
// violation, naming the attribute and its bounds.
func CheckAttrRanges(n *Node, rs ...AttrRange) error {
	for _, r := range rs {
		raw, ok := n.Attrs[r.Key]
		if !ok {
			if r.Optional {
				continue
			}
			return fmt.Errorf("missing attribute %q", r.Key)
		}
		var x float64
		switch v := raw.(type) {
		case int64:
			x = float64(v)
		case float64:
			if r.Int {
				return fmt.Errorf("attribute %s = %v must be an integer", r.Key, v)
			}
			x = v
		default:
			return fmt.Errorf("attribute %s = %s is %s, want a number", r.Key, formatAttr(raw), attrKind(raw))
		}
		if math.IsNaN(x) || x < r.Min || r.MinOpen && x == r.Min || x > r.Max {
			lo := "["
			if r.MinOpen {
				lo = "("
			}
			return fmt.Errorf("attribute %s = %v is outside %s%v, %v]", r.Key, raw, lo, r.Min, r.Max)
		}
	}
	return nil
}

// rowLength is dim 0 of t when constant, else 0.
func rowLength(t Type) int64 {
	if t.Shape[0].IsConst() {
		return t.Shape[0].Val
	}
	return 0
}

// attrKind names the kind of an attribute value as the IR text spells it,
// for errors.
func attrKind(v any) string {
	switch v.(type) {
	case int64:
		return "an integer"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case Dim:
		return "a shape expression (a symbol or an expression of symbols)"
	case []int64:
		return "an integer list"
	case []float64:
		return "a float list"
	}
	return fmt.Sprintf("of type %T", v)
}
