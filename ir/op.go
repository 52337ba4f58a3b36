package ir

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
)

// Kind classifies ops by how they treat memory.
type Kind int

const (
	// KindCompute ops produce a new tensor.
	KindCompute Kind = iota
	// KindView ops alias (a part of) an operand's storage; they compute nothing
	// unless they also write (SideEffect).
	KindView
	// KindLeaf ops take no operands: their data exists before the step.
	KindLeaf
)

// String names the kind as the docs spell it.
func (k Kind) String() string {
	switch k {
	case KindView:
		return "view"
	case KindLeaf:
		return "leaf"
	}
	return "compute"
}

// OpInfo describes an op to the rest of the compiler.
type OpInfo struct {
	Name    Op
	Kind    Kind
	MinArgs int
	MaxArgs int
	// Infer computes the result type from operands and attributes. Ops whose
	// type is declared by the builder (leaves, reshape, view, cast) leave it
	// nil and provide Check instead.
	Infer func(n *Node) (Type, error)
	// Check validates a node with a declared type (optional extra checks for
	// inferred ops too).
	Check func(n *Node) error
	// AliasArg is the operand whose storage a view (or an in-place writer)
	// aliases; meaningful for KindView.
	AliasArg int
	// Inplace: the result may overwrite operand 0 when that operand dies here
	// (ggml_op_can_inplace). The planner's policy tables refine it per target.
	Inplace bool
	// ElementWise: out[i] depends only on operands' element i (after broadcast).
	ElementWise bool
	// SideEffect: the node writes persistent state and must never be removed.
	SideEffect bool
	// Commutative: operands 0 and 1 may be swapped (used by CSE).
	Commutative bool
	// Fused marks ops made by fusion passes.
	Fused bool
	// Doc is one line for `irtool passes` and docs/IR.md.
	Doc string
	// Attrs lists the attribute names the op takes. The IR text parser
	// refuses any other name, suggesting the closest one for a
	// misspelling; nil leaves the names unchecked (an op registered
	// without a list), an empty list allows none.
	Attrs []string
}

// noAttrs is the Attrs of an op that takes no attributes.
var noAttrs = []string{}

// ropeAttrNames are the attributes of the rope family (CheckRopeAttrs).
var ropeAttrNames = []string{"n_dims", "mode", "freq_base", "freq_scale", "ext_factor",
	"attn_factor", "beta_fast", "beta_slow", "n_ctx_orig"}

// OpSet is a registry of op definitions. The package's default set
// (DefaultOps) holds the built-in ops and is what the package-level
// Register, Lookup and Ops use; NewOpSet makes a set layered over it, whose
// registrations no other set sees, so that two experiments in one process
// can define different ops. A graph resolves op names in its OpSet (nil:
// the default) and every node keeps the definition it was made with
// (Node.Info). An OpSet is safe for concurrent use.
type OpSet struct {
	parent *OpSet
	mu     sync.RWMutex
	m      map[Op]*OpInfo
}

var defaultOps = &OpSet{m: map[Op]*OpInfo{}}

// DefaultOps returns the package's default op set.
func DefaultOps() *OpSet { return defaultOps }

// NewOpSet returns an empty set layered over DefaultOps: lookups fall back
// to the defaults, registrations stay in the new set.
func NewOpSet() *OpSet { return &OpSet{parent: defaultOps, m: map[Op]*OpInfo{}} }

// Register adds an op to the set. It fails if the name is taken here or in
// a parent set.
func (s *OpSet) Register(info OpInfo) error {
	if info.Name == "" {
		return fmt.Errorf("ir: register: empty op name")
	}
	if _, dup := s.Lookup(info.Name); dup {
		return fmt.Errorf("ir: register: op %q already registered", info.Name)
	}
	if info.MaxArgs < info.MinArgs {
		info.MaxArgs = info.MinArgs
	}
	c := info
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.m[info.Name]; dup {
		return fmt.Errorf("ir: register: op %q already registered", info.Name)
	}
	s.m[info.Name] = &c
	return nil
}

// Lookup returns an op's description from the set or its parents.
func (s *OpSet) Lookup(op Op) (*OpInfo, bool) {
	for x := s; x != nil; x = x.parent {
		x.mu.RLock()
		info, ok := x.m[op]
		x.mu.RUnlock()
		if ok {
			return info, true
		}
	}
	return nil, false
}

// Ops lists every op the set sees, sorted by name.
func (s *OpSet) Ops() []*OpInfo {
	seen := map[Op]bool{}
	var out []*OpInfo
	for x := s; x != nil; x = x.parent {
		x.mu.RLock()
		for name, info := range x.m {
			if !seen[name] {
				seen[name] = true
				out = append(out, info)
			}
		}
		x.mu.RUnlock()
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// New returns an empty graph whose ops are resolved in s.
func (s *OpSet) New(name string) *Graph { return &Graph{Name: name, OpSet: s} }

// Register adds an op to the default set. It fails if the name is taken.
func Register(info OpInfo) error { return defaultOps.Register(info) }

// MustRegister is Register for package initialisation; it panics on a
// duplicate name, which is a programming error.
func MustRegister(info OpInfo) {
	if err := Register(info); err != nil {
		panic(err)
	}
}

// Lookup returns an op's description from the default set.
func Lookup(op Op) (*OpInfo, bool) { return defaultOps.Lookup(op) }

// Ops lists every op of the default set, sorted by name.
func Ops() []*OpInfo { return defaultOps.Ops() }

// The core ops. Their semantics are ggml's (see docs/IR.md).
const (
	OpInput   Op = "input"  // leaf: a per-step input (token ids, positions, mask, indices)
	OpWeight  Op = "weight" // leaf: a model weight, by GGUF tensor name
	OpState   Op = "state"  // leaf: persistent state carried across steps (KV cache)
	OpConst   Op = "const"  // leaf: a compile-time constant held in Node.Data
	OpGetRows Op = "get_rows"
	OpRMSNorm Op = "rms_norm"
	OpMul     Op = "mul"
	OpAdd     Op = "add"
	OpScale   Op = "scale"
	OpSilu    Op = "silu"
	OpMulMat  Op = "mul_mat"
	OpReshape Op = "reshape"
	OpView    Op = "view"
	OpPermute Op = "permute"
	OpTransp  Op = "transpose"
	OpCont    Op = "cont"
	OpCast    Op = "cast"
	OpCpy     Op = "cpy"
	OpSetRows Op = "set_rows"
	OpRope    Op = "rope"
	OpSoftMax Op = "soft_max"
)

// CheckNode validates one node against the registry: known op, arity,
// operand order and the result type.
func CheckNode(n *Node) error {
	info, ok := n.Info()
	if !ok {
		return fmt.Errorf("unknown op %q", n.Op)
	}
	if err := checkOperands(n, info); err != nil {
		return err
	}
	for _, k := range n.Attrs.Keys() {
		if !isIdent(k) {
			return fmt.Errorf("%s: attribute name %q is not an identifier", n.Op, k)
		}
		if info.Attrs != nil && !slices.Contains(info.Attrs, k) {
			return fmt.Errorf("%s: unknown attribute %q (%s)%s", n.Op, k, attrList(info.Attrs), suggest(k, info.Attrs))
		}
		switch v := n.Attrs[k].(type) {
		case int64, float64, bool, string, []int64, []float64:
		case Dim:
			if err := v.check(); err != nil {
				return fmt.Errorf("%s: attribute %s: %w", n.Op, k, err)
			}
		default:
			return fmt.Errorf("%s: attribute %s has unsupported type %T", n.Op, k, n.Attrs[k])
		}
	}
	if err := checkAttrValues(n); err != nil {
		return fmt.Errorf("%s: %w", n.Op, err)
	}
	if !n.Type.DType.Known() {
		return fmt.Errorf("%s: unknown dtype %d", n.Op, uint32(n.Type.DType))
	}
	if n.Data != nil && n.Op != OpConst {
		return fmt.Errorf("%s: only const nodes hold data", n.Op)
	}
	for _, d := range n.Type.Shape {
		if err := d.check(); err != nil {
			return fmt.Errorf("%s: type %s: %w", n.Op, n.Type, err)
		}
	}
	if info.Infer != nil {
		t, err := info.Infer(n)
		if err != nil {
			return fmt.Errorf("%s: %w", n.Op, err)
		}
		if !t.Equal(n.Type) {
			return fmt.Errorf("%s: declared type %s, inferred %s", n.Op, n.Type, t)
		}
	}
	if info.Check != nil {
		if err := info.Check(n); err != nil {
			return fmt.Errorf("%s: %w", n.Op, err)
		}
	}
	return nil
}

// checkOperands checks the operand count and that no operand is nil.
func checkOperands(n *Node, info *OpInfo) error {
	if len(n.Args) < info.MinArgs || len(n.Args) > info.MaxArgs {
		if info.MinArgs == info.MaxArgs {
			return fmt.Errorf("%s takes %d operands, got %d", n.Op, info.MinArgs, len(n.Args))
		}
		return fmt.Errorf("%s takes %d to %d operands, got %d", n.Op, info.MinArgs, info.MaxArgs, len(n.Args))
	}
	for i, a := range n.Args {
		if a == nil {
			return fmt.Errorf("%s: operand %d is nil", n.Op, i)
		}
	}
	return nil
}

// CanRepeat reports whether b broadcasts over a (ggml_can_repeat): each dim
// of b equals a's or is 1, or divides it when both are constant. It is the
// rule of the registry's mul and add, and of every fused op that broadcasts.
func CanRepeat(b, a Shape) bool {
	for i := range a {
		switch {
		case b[i].Equal(a[i]):
		case b[i].IsConst() && b[i].Val == 1:
		case b[i].IsConst() && a[i].IsConst() && b[i].Val > 0 && a[i].Val%b[i].Val == 0:
		default:
			return false
		}
	}
	return true
}

func sameType(n *Node) (Type, error) { return n.Args[0].Type, nil }

func floatArg(n *Node, i int) error {
	if dt := n.Args[i].Type.DType; dt != F32 && dt != F16 {
		return fmt.Errorf("operand %d must be f32 or f16, got %s", i, dt)
	}
	return nil
}

func needAttrs(n *Node, keys ...string) error {
	for _, k := range keys {
		if _, ok := n.Attrs[k]; !ok {
			return fmt.Errorf("missing attribute %q", k)
		}
	}
	return nil
}

func leafCheck(n *Node) error {
	if n.Op == OpConst {
		b, err := n.Type.Bytes()
		if err != nil {
			return err
		}
		if int64(len(n.Data)) != b {
			return fmt.Errorf("constant holds %d bytes, type %s needs %d", len(n.Data), n.Type, b)
		}
	}
	return nil
}

func elementwiseBinary(n *Node) (Type, error) {
	a, b := n.Args[0].Type, n.Args[1].Type
	if err := floatArg(n, 0); err != nil {
		return Type{}, err
	}
	if err := floatArg(n, 1); err != nil {
		return Type{}, err
	}
	if !CanRepeat(b.Shape, a.Shape) {
		return Type{}, fmt.Errorf("cannot broadcast %s over %s", b, a)
	}
	return a, nil
}

func unaryFloat(n *Node) (Type, error) {
	if err := floatArg(n, 0); err != nil {
		return Type{}, err
	}
	return n.Args[0].Type, nil
}

func init() {
	for _, leaf := range []struct {
		op  Op
		doc string
	}{
		{OpInput, "a per-step input: token ids, positions, attention mask, row indices"},
		{OpWeight, "a model weight, named by its GGUF tensor name"},
		{OpState, "persistent state carried across steps (the KV cache); written by set_rows or cpy"},
		{OpConst, "a compile-time constant; its bytes are in the node"},
	} {
		MustRegister(OpInfo{Name: leaf.op, Attrs: noAttrs, Kind: KindLeaf, Check: leafCheck, Doc: leaf.doc})
	}
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
	MustRegister(OpInfo{Name: OpRMSNorm, Attrs: []string{"eps"}, MinArgs: 1, Inplace: true, Infer: unaryFloat,
		Check: func(n *Node) error { return CheckAttrRanges(n, AttrRange{Key: "eps", Min: 0, Max: 1}) },
		Doc:   "rms_norm(x){eps}: x / sqrt(mean(x^2 over dim 0) + eps)"})
	MustRegister(OpInfo{Name: OpMul, Attrs: noAttrs, MinArgs: 2, Inplace: true, ElementWise: true, Commutative: false, Infer: elementwiseBinary,
		Doc: "mul(a, b): a * b, b broadcast over a"})
	MustRegister(OpInfo{Name: OpAdd, Attrs: noAttrs, MinArgs: 2, Inplace: true, ElementWise: true, Infer: elementwiseBinary,
		Doc: "add(a, b): a + b, b broadcast over a"})
	MustRegister(OpInfo{Name: OpScale, Attrs: []string{"scale"}, MinArgs: 1, Inplace: true, ElementWise: true, Infer: unaryFloat,
		Check: func(n *Node) error {
			return CheckAttrRanges(n, AttrRange{Key: "scale", Min: -math.MaxFloat32, Max: math.MaxFloat32})
		},
		Doc: "scale(x){scale}: x * scale"})
	MustRegister(OpInfo{Name: OpSilu, Attrs: noAttrs, MinArgs: 1, Inplace: true, ElementWise: true, Infer: unaryFloat,
		Doc: "silu(x): x * sigmoid(x)"})
	MustRegister(OpInfo{Name: OpMulMat, Attrs: noAttrs, MinArgs: 2, Doc: "mul_mat(a, b): out[i1][i0] = dot(a row i0, b row i1), a broadcast over dims 2,3; result f32[a.ne1, b.ne1, b.ne2, b.ne3]",
		Infer: func(n *Node) (Type, error) {
			a, b := n.Args[0].Type, n.Args[1].Type
			if !a.Shape[0].Equal(b.Shape[0]) {
				return Type{}, fmt.Errorf("inner dims differ: %s vs %s", a, b)
			}
			if b.DType != F32 {
				return Type{}, fmt.Errorf("operand 1 must be f32, got %s", b.DType)
			}
			for _, i := range []int{2, 3} {
				if !a.Shape[i].Equal(b.Shape[i]) && !CanRepeat(Shape{C(1), C(1), a.Shape[i], C(1)}, Shape{C(1), C(1), b.Shape[i], C(1)}) {
					return Type{}, fmt.Errorf("dim %d of %s does not broadcast to %s", i, a, b)
				}
			}
			return Type{DType: F32, Shape: Shape{a.Shape[1], b.Shape[1], b.Shape[2], b.Shape[3]}}, nil
		}})
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
			nb, ok := n.Attrs.Ints("nb")
			if !ok || len(nb) != MaxDims {
				return fmt.Errorf("needs attribute nb with %d byte strides", MaxDims)
			}
			for _, s := range nb {
				if s < 0 {
					return fmt.Errorf("negative stride in nb=%v", nb)
				}
			}
			if _, ok := n.Attrs.Dim("offset"); !ok {
				return fmt.Errorf("needs attribute offset")
			}
			return nil
		}})
	MustRegister(OpInfo{Name: OpPermute, Attrs: []string{"axes"}, Kind: KindView, MinArgs: 1, Doc: "permute(x){axes}: dim i of x becomes dim axes[i] (ggml_permute)",
		Infer: func(n *Node) (Type, error) {
			ax, ok := n.Attrs.Ints("axes")
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
	MustRegister(OpInfo{Name: OpRope, Attrs: ropeAttrNames, MinArgs: 2, MaxArgs: 3, Inplace: true, Infer: unaryFloat,
		Doc: "rope(x, pos, freq_factors?){n_dims, mode, freq_base, freq_scale, ...}: rotary position embedding (ggml_rope_ext)",
		Check: func(n *Node) error {
			if err := CheckRopeAttrs(n, rowLength(n.Args[0].Type), "n_dims", "mode", "freq_base", "freq_scale"); err != nil {
				return err
			}
			p := n.Args[1].Type
			if p.DType != I32 {
				return fmt.Errorf("positions must be i32, got %s", p.DType)
			}
			if !p.Shape[0].Equal(n.Args[0].Type.Shape[2]) {
				return fmt.Errorf("%s positions for %s rows", p.Shape[0], n.Args[0].Type.Shape[2])
			}
			return nil
		}})
	MustRegister(OpInfo{Name: OpSoftMax, Attrs: []string{"scale", "max_bias"}, MinArgs: 1, MaxArgs: 2, Inplace: true, Infer: unaryFloat,
		Doc: "soft_max(x, mask?){scale, max_bias}: softmax over dim 0 of x*scale + mask",
		Check: func(n *Node) error {
			if err := CheckAttrRanges(n, AttrRange{Key: "scale", Min: -math.MaxFloat32, Max: math.MaxFloat32},
				AttrRange{Key: "max_bias", Min: 0, Max: math.MaxFloat32, Optional: true}); err != nil {
				return err
			}
			if len(n.Args) == 2 {
				x, m := n.Args[0].Type.Shape, n.Args[1].Type.Shape
				if !x[0].Equal(m[0]) {
					return fmt.Errorf("mask rows of %s for rows of %s", m[0], x[0])
				}
			}
			return nil
		}})
}
