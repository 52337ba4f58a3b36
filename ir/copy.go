package ir

import "fmt"

// The ops that move data: gathers and scatters of rows, contiguous copies
// and casts, writes into views, joins and the device transfer.
const (
	OpGetRows Op = "get_rows"
	OpSetRows Op = "set_rows"
	OpCont    Op = "cont"
	OpCast    Op = "cast"
	OpCpy     Op = "cpy"
	// OpConcat joins tensors along one dim (used to merge weights).
	OpConcat Op = "concat"
)

// OpTransfer is the op the partition pass inserts at a device boundary: a
// contiguous copy of its operand on the device named by attribute to
// (AttrTo); the source device is in from (AttrFrom), "cpu" or "npu" as
// package target names them.
const OpTransfer Op = "transfer"

// The attributes of the ops that move data.
const (
	// AttrDim is the dim concat joins its operands along.
	AttrDim = "dim"
	// AttrFrom and AttrTo are transfer's source and destination devices,
	// "cpu" or "npu".
	AttrFrom = "from"
	AttrTo   = "to"
)

// ConcatDim returns attribute dim, 0 when absent.
func (a Attrs) ConcatDim() int64 { return a.intOr(AttrDim, 0) }

// From returns attribute from, "" when absent.
func (a Attrs) From() string { v, _ := a.Str(AttrFrom); return v }

// To returns attribute to, "" when absent.
func (a Attrs) To() string { v, _ := a.Str(AttrTo); return v }

func init() {
	MustRegister(OpInfo{Name: OpGetRows, Attrs: noAttrs, MinArgs: 2, Doc: "get_rows(table, idx): rows of table picked by idx (embedding lookup); result f32",
		Infer: func(n *Node) (Type, error) {
			src, idx := n.Args[0].Type, n.Args[1].Type
			if idx.DType != I32 && idx.DType != I64 {
				return Type{}, fmt.Errorf("index must be i32 or i64, got %s", idx.DType)
			}
			if !src.Shape[2].Equal(idx.Shape[1]) {
				return Type{}, fmt.Errorf("dim 2 of %s differs from dim 1 of the index %s", src, idx)
			}
			dt := F32
			if src.DType == I32 {
				dt = I32
			}
			return Type{DType: dt, Shape: Shape{src.Shape[0], idx.Shape[0], idx.Shape[1], idx.Shape[2]}}, nil
		}})
	MustRegister(OpInfo{Name: OpSetRows, Attrs: noAttrs, Kind: KindView, AliasArg: 0, MinArgs: 3, SideEffect: true,
		Doc: "set_rows(dst, src, idx): dst row idx[i] = src row i (converting dtype); the result aliases dst; dst's address never moves",
		Infer: func(n *Node) (Type, error) {
			dst, src, idx := n.Args[0].Type, n.Args[1].Type, n.Args[2].Type
			if idx.DType != I32 && idx.DType != I64 {
				return Type{}, fmt.Errorf("index must be i32 or i64, got %s", idx.DType)
			}
			if !dst.Shape[0].Equal(src.Shape[0]) {
				return Type{}, fmt.Errorf("row lengths differ: %s vs %s", dst, src)
			}
			if !idx.Shape[0].Equal(src.Shape[1]) {
				return Type{}, fmt.Errorf("%s indices for %s rows", idx.Shape[0], src.Shape[1])
			}
			return dst, nil
		}})
	MustRegister(OpInfo{Name: OpCont, Attrs: noAttrs, MinArgs: 1, Doc: "cont(x): a contiguous copy of a (possibly strided) view, optionally with a new shape of the same size (ggml_cont_2d)",
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
	MustRegister(OpInfo{Name: OpCast, Attrs: noAttrs, MinArgs: 1, Doc: "cast(x): convert to the declared dtype, same shape",
		Check: func(n *Node) error {
			if !n.Args[0].Type.Shape.Equal(n.Type.Shape) {
				return fmt.Errorf("shape changes from %s to %s", n.Args[0].Type.Shape, n.Type.Shape)
			}
			return nil
		}})
	MustRegister(OpInfo{Name: OpCpy, Attrs: noAttrs, Kind: KindView, AliasArg: 1, MinArgs: 2, SideEffect: true,
		Doc: "cpy(src, dst): write src into the view dst (converting dtype); the result aliases dst",
		Infer: func(n *Node) (Type, error) {
			src, dst := n.Args[0].Type, n.Args[1].Type
			if !src.Shape.Numel().Equal(dst.Shape.Numel()) {
				return Type{}, fmt.Errorf("element counts differ: %s vs %s", src, dst)
			}
			return dst, nil
		}})
	MustRegister(OpInfo{Name: OpConcat, Attrs: []string{"dim"}, MinArgs: 1, MaxArgs: 64,
		Doc: "concat(a, b, ...){dim}: the operands joined along dim (same dtype, other dims equal); used to merge weights, whose rows it copies unchanged",
		Infer: func(n *Node) (Type, error) {
			d, ok := n.Attrs.Int(AttrDim)
			if !ok || d < 0 || d >= MaxDims {
				return Type{}, fmt.Errorf("needs attribute dim in [0, %d)", MaxDims)
			}
			t := n.Args[0].Type
			if t.DType.Quantized() && d == 0 {
				return Type{}, fmt.Errorf("cannot join %s along dim 0", t.DType)
			}
			sum := int64(0)
			for i, a := range n.Args {
				if a.Type.DType != t.DType {
					return Type{}, fmt.Errorf("operand %d is %s, operand 0 %s", i, a.Type.DType, t.DType)
				}
				for j := range MaxDims {
					if int64(j) != d && !a.Type.Shape[j].Equal(t.Shape[j]) {
						return Type{}, fmt.Errorf("operand %d %s differs from %s outside dim %d", i, a.Type, t, d)
					}
				}
				if !a.Type.Shape[d].IsConst() {
					return Type{}, fmt.Errorf("operand %d %s: dim %d must be static", i, a.Type, d)
				}
				sum += a.Type.Shape[d].Val
			}
			t.Shape[d] = C(sum)
			return t, nil
		},
	})
	MustRegister(OpInfo{Name: OpTransfer, Attrs: []string{"from", "to"}, MinArgs: 1,
		Doc:   "transfer(x){from, to}: a contiguous copy of x on device `to` (inserted by the partition pass at device boundaries)",
		Infer: func(n *Node) (Type, error) { return n.Args[0].Type, nil },
		Check: func(n *Node) error {
			for _, k := range []string{AttrFrom, AttrTo} {
				d, ok := n.Attrs.Str(k)
				if !ok || d != "cpu" && d != "npu" {
					return fmt.Errorf("attribute %s must be \"cpu\" or \"npu\", got %v", k, n.Attrs[k])
				}
			}
			return nil
		}})
}
