package ir

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Dim is one dimension of a shape: a constant, or a symbol scaled by a
// constant factor and optionally rounded up to a multiple of Align.
//
//	64                  constant
//	n_tokens            symbol
//	n_tokens*64         symbol times a factor (a flattened view)
//	pad(n_tokens,64)    symbol rounded up (llama.cpp pads the KQ mask rows to 64)
//
// That small algebra covers every shape of a decoder-only transformer step
// while keeping equality and element counts decidable.
type Dim struct {
	Sym   string // "" for a constant
	Val   int64  // the constant, when Sym == ""
	Scale int64  // factor applied to the symbol (0 means 1)
	Align int64  // round the scaled symbol up to a multiple of Align (0 or 1: none)
}

// C returns a constant dimension.
func C(v int64) Dim { return Dim{Val: v} }

// S returns a symbolic dimension.
func S(sym string) Dim { return Dim{Sym: sym, Scale: 1} }

// Scaled returns sym*k.
func Scaled(sym string, k int64) Dim { return Dim{Sym: sym, Scale: k} }

// Padded returns sym rounded up to a multiple of align.
func Padded(sym string, align int64) Dim { return Dim{Sym: sym, Scale: 1, Align: align} }

// IsConst reports whether d has no symbol.
func (d Dim) IsConst() bool { return d.Sym == "" }

func (d Dim) scale() int64 {
	if d.Scale == 0 {
		return 1
	}
	return d.Scale
}

func (d Dim) norm() Dim {
	if d.Sym == "" {
		return Dim{Val: d.Val}
	}
	d.Val = 0
	d.Scale = d.scale()
	if d.Align <= 1 {
		d.Align = 0
	}
	return d
}

// Equal reports whether two dims are the same expression.
func (d Dim) Equal(e Dim) bool {
	if d.Sym == "" || e.Sym == "" { // a constant equals only the same constant
		return d.Sym == e.Sym && d.Val == e.Val
	}
	return d.norm() == e.norm()
}

// Eval returns the value of d under the bindings.
func (d Dim) Eval(b Bindings) (int64, error) {
	if d.Sym == "" {
		return d.Val, nil
	}
	v, ok := b[d.Sym]
	if !ok {
		return 0, fmt.Errorf("symbol %q is not bound", d.Sym)
	}
	if v < 0 {
		return 0, fmt.Errorf("symbol %q is bound to %d, want >= 0", d.Sym, v)
	}
	const limit = 1 << 62
	k := d.scale()
	if k < 1 || v > limit/k {
		return 0, fmt.Errorf("dimension %s with %s=%d is out of range", d, d.Sym, v)
	}
	v *= k
	if d.Align > 1 {
		if d.Align > limit-v {
			return 0, fmt.Errorf("dimension %s with %s=%d is out of range", d, d.Sym, v)
		}
		v = (v + d.Align - 1) / d.Align * d.Align
	}
	return v, nil
}

// String prints d as the text format writes it.
func (d Dim) String() string {
	if d.Sym == "" {
		return strconv.FormatInt(d.Val, 10)
	}
	s := d.Sym
	if k := d.scale(); k != 1 {
		s += "*" + strconv.FormatInt(k, 10)
	}
	if d.Align > 1 {
		s = "pad(" + s + "," + strconv.FormatInt(d.Align, 10) + ")"
	}
	return s
}

// ParseDim parses a dim as String prints it.
func ParseDim(s string) (Dim, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Dim{}, fmt.Errorf("empty dimension")
	}
	if strings.HasPrefix(s, "pad(") && strings.HasSuffix(s, ")") {
		inner := s[4 : len(s)-1]
		i := strings.LastIndexByte(inner, ',')
		if i < 0 {
			return Dim{}, fmt.Errorf("dimension %q: pad needs two arguments", s)
		}
		d, err := ParseDim(inner[:i])
		if err != nil {
			return Dim{}, err
		}
		if d.Sym == "" || d.Align > 1 {
			return Dim{}, fmt.Errorf("dimension %q: pad of a constant or nested pad", s)
		}
		a, err := strconv.ParseInt(strings.TrimSpace(inner[i+1:]), 10, 64)
		if err != nil || a < 1 || a > 1<<30 {
			return Dim{}, fmt.Errorf("dimension %q: bad alignment", s)
		}
		d.Align = a
		return d.norm(), nil
	}
	if c := s[0]; c >= '0' && c <= '9' || c == '-' {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return Dim{}, fmt.Errorf("dimension %q: not a non-negative integer", s)
		}
		return C(v), nil
	}
	sym, k := s, int64(1)
	if i := strings.IndexByte(s, '*'); i >= 0 {
		sym = s[:i]
		v, err := strconv.ParseInt(s[i+1:], 10, 64)
		if err != nil || v < 1 || v > 1<<40 {
			return Dim{}, fmt.Errorf("dimension %q: bad factor", s)
		}
		k = v
	}
	if !isIdent(sym) {
		return Dim{}, fmt.Errorf("dimension %q: %q is not a symbol name", s, sym)
	}
	return Dim{Sym: sym, Scale: k}.norm(), nil
}

// check reports whether d can be written and read back by the text format:
// a non-negative constant, or a symbol name with a factor and alignment in
// the ranges ParseDim accepts.
func (d Dim) check() error {
	if d.Sym == "" {
		if d.Val < 0 {
			return fmt.Errorf("negative dimension %d", d.Val)
		}
		return nil
	}
	if !isIdent(d.Sym) {
		return fmt.Errorf("dimension symbol %q is not an identifier", d.Sym)
	}
	if d.Scale < 0 || d.Scale > 1<<40 {
		return fmt.Errorf("dimension %s: factor %d out of range", d.Sym, d.Scale)
	}
	if d.Align < 0 || d.Align > 1<<30 {
		return fmt.Errorf("dimension %s: alignment %d out of range", d.Sym, d.Align)
	}
	return nil
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// Bindings give values to shape symbols.
type Bindings map[string]int64

// String prints bindings sorted by name ("n_kv=32,n_tokens=5").
func (b Bindings) String() string {
	keys := make([]string, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strconv.FormatInt(b[k], 10)
	}
	return strings.Join(parts, ",")
}

// For keeps the bindings of the symbols g uses (its shapes and its
// symbolic attributes), the step shape g specialises to: extra symbols are
// dropped (a set_rows graph has no kv_head, so every position of a bucket
// is one binding), and a symbol g uses that b does not bind is an error
// naming it.
func (b Bindings) For(g *Graph) (Bindings, error) {
	out := Bindings{}
	for _, s := range g.Symbols() {
		v, ok := b[s]
		if !ok {
			return nil, fmt.Errorf("graph %q: symbol %q is not bound (have %s)", g.Name, s, b)
		}
		out[s] = v
	}
	return out, nil
}

// ParseBindings reads the String form back ("n_kv=32,n_tokens=5"). Spaces
// around entries are ignored; a symbol given twice is an error.
func ParseBindings(s string) (Bindings, error) {
	b := Bindings{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		name = strings.TrimSpace(name)
		if !ok || !isIdent(name) {
			return nil, fmt.Errorf("ir: binding %q: want symbol=value", part)
		}
		v, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("ir: binding %q: value must be a non-negative integer", part)
		}
		if _, dup := b[name]; dup {
			return nil, fmt.Errorf("ir: binding %q: symbol %s given twice", part, name)
		}
		b[name] = v
	}
	return b, nil
}

// MaxDims is the rank of every shape (as in ggml).
const MaxDims = 4

// Shape is four dims in ggml order: Shape[0] is the innermost (contiguous)
// dimension. Unused outer dims are 1.
type Shape [MaxDims]Dim

// Sh builds a shape from constants and dims: ints become constants, strings
// symbols, Dims are kept. Missing outer dims are 1.
func Sh(dims ...any) Shape {
	var s Shape
	for i := range s {
		s[i] = C(1)
	}
	for i, d := range dims {
		if i >= MaxDims {
			break
		}
		switch v := d.(type) {
		case int:
			s[i] = C(int64(v))
		case int64:
			s[i] = C(v)
		case string:
			s[i] = S(v)
		case Dim:
			s[i] = v.norm()
		default:
			panic(fmt.Sprintf("ir.Sh: unsupported dim %T", d))
		}
	}
	return s
}

// Rank is the number of dims up to the last one that is not the constant 1
// (at least 1).
func (s Shape) Rank() int {
	r := MaxDims
	for r > 1 && s[r-1].IsConst() && s[r-1].Val == 1 {
		r--
	}
	return r
}

// Equal compares two shapes dim by dim.
func (s Shape) Equal(t Shape) bool {
	for i := range s {
		if !s[i].Equal(t[i]) {
			return false
		}
	}
	return true
}

// IsStatic reports whether every dim is constant.
func (s Shape) IsStatic() bool {
	for _, d := range s {
		if !d.IsConst() {
			return false
		}
	}
	return true
}

// Ne returns the constant dims of a static shape; it fails on symbols.
func (s Shape) Ne() ([MaxDims]int64, error) {
	var ne [MaxDims]int64
	for i, d := range s {
		if !d.IsConst() {
			return ne, fmt.Errorf("shape %s is not static (dim %d is %s)", s, i, d)
		}
		ne[i] = d.Val
	}
	return ne, nil
}

// Eval binds every dim.
func (s Shape) Eval(b Bindings) (Shape, error) {
	var out Shape
	for i, d := range s {
		v, err := d.Eval(b)
		if err != nil {
			return out, err
		}
		out[i] = C(v)
	}
	return out, nil
}

// Symbols returns the sorted symbol names used by the shape.
func (s Shape) Symbols() []string {
	var out []string
	for _, d := range s {
		if d.Sym != "" && !contains(out, d.Sym) {
			out = append(out, d.Sym)
		}
	}
	sort.Strings(out)
	return out
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// String prints the shape's first Rank dims: "[64,n_tokens]".
func (s Shape) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < s.Rank(); i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i].String())
	}
	b.WriteByte(']')
	return b.String()
}

// Numel is the element count of a shape as a monomial: a constant factor
// times a sorted list of opaque symbolic factors. Two shapes hold the same
// number of elements for every binding when their Numels are equal.
type Numel struct {
	Coef    int64
	Factors []string
}

// Numel computes the element count of s.
func (s Shape) Numel() Numel {
	n := Numel{Coef: 1}
	for _, d := range s {
		d = d.norm()
		switch {
		case d.Sym == "":
			n.Coef *= d.Val
		case d.Align > 1:
			n.Factors = append(n.Factors, d.String())
		default:
			n.Coef *= d.Scale
			n.Factors = append(n.Factors, d.Sym)
		}
	}
	sort.Strings(n.Factors)
	return n
}

// Equal compares two element counts.
func (n Numel) Equal(m Numel) bool {
	if n.Coef != m.Coef || len(n.Factors) != len(m.Factors) {
		return false
	}
	for i := range n.Factors {
		if n.Factors[i] != m.Factors[i] {
			return false
		}
	}
	return true
}

// String prints the count ("64*n_tokens").
func (n Numel) String() string {
	parts := []string{strconv.FormatInt(n.Coef, 10)}
	parts = append(parts, n.Factors...)
	return strings.Join(parts, "*")
}

// Type is a tensor type: dtype and shape.
type Type struct {
	DType DType
	Shape Shape
}

// T builds a type.
func T(dt DType, dims ...any) Type { return Type{DType: dt, Shape: Sh(dims...)} }

// Equal compares two types.
func (t Type) Equal(u Type) bool { return t.DType == u.DType && t.Shape.Equal(u.Shape) }

// String prints the type as "f32[64,n_tokens]".
func (t Type) String() string { return t.DType.String() + t.Shape.String() }

// Bytes returns the storage size of a static type.
func (t Type) Bytes() (int64, error) {
	ne, err := t.Shape.Ne()
	if err != nil {
		return 0, err
	}
	row, err := t.DType.RowBytes(ne[0])
	if err != nil {
		return 0, fmt.Errorf("type %s: %w", t, err)
	}
	n := row
	for _, d := range ne[1:] {
		if d < 0 {
			return 0, fmt.Errorf("type %s: negative dimension", t)
		}
		if d != 0 && n > (1<<62)/d {
			return 0, fmt.Errorf("type %s: size overflows", t)
		}
		n *= d
	}
	return n, nil
}

// ParseType parses "f32[64,n_tokens]".
func ParseType(s string) (Type, error) {
	i := strings.IndexByte(s, '[')
	if i < 0 || !strings.HasSuffix(s, "]") {
		return Type{}, fmt.Errorf("type %q: want dtype[dims]", s)
	}
	dt, ok := ParseDType(s[:i])
	if !ok {
		return Type{}, fmt.Errorf("type %q: unknown dtype %q", s, s[:i])
	}
	body := s[i+1 : len(s)-1]
	parts := splitTop(body)
	if len(parts) == 0 || len(parts) > MaxDims {
		return Type{}, fmt.Errorf("type %q: want 1 to %d dims", s, MaxDims)
	}
	t := Type{DType: dt, Shape: Sh()}
	for j, p := range parts {
		d, err := ParseDim(p)
		if err != nil {
			return Type{}, fmt.Errorf("type %q: %w", s, err)
		}
		t.Shape[j] = d
	}
	return t, nil
}

// splitTop splits on commas outside parentheses.
func splitTop(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}
