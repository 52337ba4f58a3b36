package ir

import (
	"fmt"
	"math"
	"slices"

	"github.com/irtool/irtool/internal/registry"
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
	// Inplace: the result may overwrite operand 0 when that operand dies
	// here. The planner's per-target policies read it (planner.CPUPolicy).
	Inplace bool
	// InplaceAny: the op is one ggml lets run in place
	// (ggml_op_can_inplace, llama.cpp c392e50 ggml-alloc.c), so on the CPU
	// its result may overwrite any operand that dies here, tried in operand
	// order as ggml_gallocr_allocate_node tries every source. It implies
	// Inplace; the CPU in-place policy, hence the "gallocr" strategy's
	// reproduction of llama.cpp's compute buffer, rests on it.
	InplaceAny bool
	// ElementWise: out[i] depends only on operands' element i (after broadcast).
	ElementWise bool
	// SideEffect: the node writes persistent state and must never be removed.
	SideEffect bool
	// Collective: the op communicates between the ranks of a group
	// (IsCollective, CollectiveOps).
	Collective bool
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
	r *registry.Layered[Op, *OpInfo]
}

var defaultOps = &OpSet{registry.New[Op, *OpInfo](nil)}

// DefaultOps returns the package's default op set.
func DefaultOps() *OpSet { return defaultOps }

// NewOpSet returns an empty set layered over DefaultOps: lookups fall back
// to the defaults, registrations stay in the new set.
func NewOpSet() *OpSet { return &OpSet{registry.New(defaultOps.r)} }

// Register adds an op to the set. It fails if the name is taken here or in
// a parent set.
func (s *OpSet) Register(info OpInfo) error {
	if info.Name == "" {
		return fmt.Errorf("ir: register: empty op name")
	}
	if info.MaxArgs < info.MinArgs {
		info.MaxArgs = info.MinArgs
	}
	c := info
	if !s.r.Add(info.Name, &c) {
		return fmt.Errorf("ir: register: op %q already registered", info.Name)
	}
	return nil
}

// Lookup returns an op's description from the set or its parents.
func (s *OpSet) Lookup(op Op) (*OpInfo, bool) { return s.r.Lookup(op) }

// Ops lists every op the set sees, sorted by name.
func (s *OpSet) Ops() []*OpInfo {
	keys := s.r.Keys()
	out := make([]*OpInfo, len(keys))
	for i, k := range keys {
		out[i], _ = s.r.Lookup(k)
	}
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

// The built-in ops are registered in one file per op family, each file
// holding the family's op names, typing and attribute accessors (names and
// defaults): leaf.go, view.go, copy.go, elementwise.go, norm.go,
// matmul.go, rope.go, attention.go and moe.go. Their semantics are ggml's
// (docs/IR.md).

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
	if !attrsClean(n, info) { // then report the first problem in key order
		if err := checkAttrs(n, info); err != nil {
			return err
		}
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

// checkAttrs checks n's attribute names and values in key order.
func checkAttrs(n *Node, info *OpInfo) error {
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
	return nil
}

// attrsClean reports whether checkAttrs finds nothing, without sorting the
// keys.
func attrsClean(n *Node, info *OpInfo) bool {
	for k, v := range n.Attrs {
		if !isIdent(k) || info.Attrs != nil && !slices.Contains(info.Attrs, k) {
			return false
		}
		switch v := v.(type) {
		case int64, bool, string:
		case float64:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return false
			}
		case []int64:
			if len(v) > MaxAttrList {
				return false
			}
		case []float64:
			if len(v) > MaxAttrList {
				return false
			}
			for _, x := range v {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					return false
				}
			}
		case Dim:
			if v.check() != nil {
				return false
			}
		default:
			return false
		}
	}
	return true
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

func isFloat(dt DType) bool { return dt == F32 || dt == F16 }

func wantF32(n *Node, idx ...int) error {
	for _, i := range idx {
		if dt := n.Args[i].Type.DType; dt != F32 {
			return fmt.Errorf("operand %d must be f32, got %s", i, dt)
		}
	}
	return nil
}
