package ir

import "fmt"

// The views: ops that alias (a window of) their operand's storage and
// compute nothing.
const (
	OpReshape Op = "reshape"
	OpView    Op = "view"
	OpPermute Op = "permute"
	OpTransp  Op = "transpose"
)

// The attributes of the views.
const (
	// AttrOffset is view's byte offset into its operand (a Dim: it may be
	// symbolic).
	AttrOffset = "offset"
	// AttrNB is view's byte strides, one per dim.
	AttrNB = "nb"
	// AttrAxes is permute's permutation: dim i of the operand becomes
	// dim axes[i].
	AttrAxes = "axes"
)

func init() {
	MustRegister(OpInfo{Name: OpReshape, Attrs: noAttrs, Kind: KindView, MinArgs: 1, Doc: "reshape(x): the same contiguous data with another shape",
		Check: func(n *Node) error {
			x := n.Args[0].Type
			if x.DType != n.Type.DType {
				return fmt.Errorf("dtype changes from %s to %s", x.DType, n.Type.DType)
			}
			if !x.Shape.Numel().Equal(n.Type.Shape.Numel()) {
				return fmt.Errorf("element count changes from %s to %s", x.Shape.Numel(), n.Type.Shape.Numel())
			}
			return nil
		}})
	MustRegister(OpInfo{Name: OpView, Attrs: []string{"offset", "nb"}, Kind: KindView, MinArgs: 1, MaxArgs: 2, Doc: "view(x, dep?){offset, nb}: a strided window of x's storage (byte offset, byte strides); an optional second operand is an ordering dependency (the write that must happen first)",
		Check: func(n *Node) error {
			if n.Args[0].Type.DType != n.Type.DType {
				return fmt.Errorf("dtype changes from %s to %s", n.Args[0].Type.DType, n.Type.DType)
			}
			nb, ok := n.Attrs.Ints(AttrNB)
			if !ok || len(nb) != MaxDims {
				return fmt.Errorf("needs attribute nb with %d byte strides", MaxDims)
			}
			for _, s := range nb {
				if s < 0 {
					return fmt.Errorf("negative stride in nb=%v", nb)
				}
			}
			off, ok := n.Attrs.Dim(AttrOffset)
			if !ok {
				return fmt.Errorf("needs attribute offset")
			}
			// A constant offset must lie within the operand's storage
			// (its end at most, for an empty window).
			if off.IsConst() {
				if off.Val < 0 || off.Val > 1<<62 {
					return fmt.Errorf("offset %d: want 0..2^62 bytes (the largest tensor)", off.Val)
				}
				if x := n.Args[0].Type; x.Shape.IsStatic() {
					if size, err := x.Bytes(); err == nil && off.Val > size {
						return fmt.Errorf("offset %d is past the end of its operand %s (%d bytes)", off.Val, x, size)
					}
				}
			}
			return nil
		}})
	MustRegister(OpInfo{Name: OpPermute, Attrs: []string{"axes"}, Kind: KindView, MinArgs: 1, Doc: "permute(x){axes}: dim i of x becomes dim axes[i] (ggml_permute)",
		Infer: func(n *Node) (Type, error) {
			ax, ok := n.Attrs.Ints(AttrAxes)
			if !ok || len(ax) != MaxDims {
				return Type{}, fmt.Errorf("needs attribute axes with %d entries", MaxDims)
			}
			seen := [MaxDims]bool{}
			var s Shape
			for i, a := range ax {
				if a < 0 || a >= MaxDims || seen[a] {
					return Type{}, fmt.Errorf("axes %v is not a permutation", ax)
				}
				seen[a] = true
				s[a] = n.Args[0].Type.Shape[i]
			}
			return Type{DType: n.Args[0].Type.DType, Shape: s}, nil
		}})
	MustRegister(OpInfo{Name: OpTransp, Attrs: noAttrs, Kind: KindView, MinArgs: 1, Doc: "transpose(x): swap dims 0 and 1 (a view)",
		Infer: func(n *Node) (Type, error) {
			s := n.Args[0].Type.Shape
			s[0], s[1] = s[1], s[0]
			return Type{DType: n.Args[0].Type.DType, Shape: s}, nil
		}})
}
