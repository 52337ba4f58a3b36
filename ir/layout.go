package ir

import (
	"fmt"
	"math"
)

// Layout is where a node's elements live once shapes are static: byte
// strides, the node that owns the storage (itself unless the node is a view),
// and the byte offset into that storage.
type Layout struct {
	Ne     [MaxDims]int64
	Nb     [MaxDims]int64
	Root   *Node // the node whose buffer holds the data
	Offset int64 // bytes from the start of Root's buffer
}

// Contiguous reports whether the elements are densely packed in ggml order,
// as ggml_is_contiguous decides: dims of size 1 may have any stride, and so
// may dim 0 when it holds exactly one block.
func (l Layout) Contiguous(dt DType) bool {
	next := dt.TypeSize()
	if l.Ne[0] != dt.BlockSize() && l.Nb[0] != next {
		return false
	}
	if bs := dt.BlockSize(); bs > 0 {
		next *= l.Ne[0] / bs
	}
	for i := 1; i < MaxDims; i++ {
		if l.Ne[i] == 1 {
			continue
		}
		if l.Nb[i] != next {
			return false
		}
		next *= l.Ne[i]
	}
	return true
}

// Extent is the number of bytes from the first element to one past the last
// (ggml_nbytes), or 0 when a dim is 0. It saturates at math.MaxInt64 rather
// than overflow.
func (l Layout) Extent(dt DType) int64 {
	for _, d := range l.Ne {
		if d <= 0 {
			return 0
		}
	}
	var ext int64
	if bs := dt.BlockSize(); bs > 1 {
		ext = satMul(l.Ne[0]/bs, l.Nb[0])
	} else {
		ext = satAdd(dt.TypeSize(), satMul(l.Ne[0]-1, l.Nb[0]))
	}
	for i := 1; i < MaxDims; i++ {
		ext = satAdd(ext, satMul(l.Ne[i]-1, l.Nb[i]))
	}
	return ext
}

// satMul and satAdd work on non-negative operands and saturate.
func satMul(a, b int64) int64 {
	if a < 0 || b < 0 {
		return math.MaxInt64
	}
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

func satAdd(a, b int64) int64 {
	if a < 0 || b < 0 || a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// ContiguousStrides returns ggml's strides for a dense tensor.
func ContiguousStrides(dt DType, ne [MaxDims]int64) [MaxDims]int64 {
	var nb [MaxDims]int64
	nb[0] = dt.TypeSize()
	row, _ := dt.RowBytes(ne[0])
	nb[1] = row
	for i := 2; i < MaxDims; i++ {
		nb[i] = nb[i-1] * ne[i-1]
	}
	if dt.Quantized() {
		nb[0] = dt.TypeSize()
	}
	return nb
}

// Layouts computes every node's layout in a static graph, indexed by node
// id. Views inherit their source's storage; set_rows and cpy alias the
// tensor they write. It fails when a view reaches outside its storage or a
// reshape is applied to a strided tensor.
func Layouts(g *Graph) ([]Layout, error) {
	out, _, err := layouts(g)
	return out, err
}

// layouts is Layouts that also returns the position of the node at fault.
func layouts(g *Graph) (out []Layout, bad int, err error) {
	out = make([]Layout, len(g.Nodes))
	for i, n := range g.Nodes {
		if err := layoutNode(g, out, i, n); err != nil {
			return nil, i, err
		}
	}
	return out, -1, nil
}

// layoutNode computes out[i] from the layouts of earlier nodes.
func layoutNode(g *Graph, out []Layout, i int, n *Node) error {
	if n == nil {
		return fmt.Errorf("ir: layout: node %d is nil", i)
	}
	if n.ID != i {
		return fmt.Errorf("ir: layout: node at %d has id %d (call Compact)", i, n.ID)
	}
	ne, err := n.Type.Shape.Ne()
	if err != nil {
		return fmt.Errorf("ir: layout %s (%s %q): %w", n, n.Op, n.Name, err)
	}
	// Every tensor must have a representable size, even one that is never
	// materialised: its strides are derived from it.
	if _, err := n.Type.Bytes(); err != nil {
		return fmt.Errorf("ir: layout %s (%s %q): %w", n, n.Op, n.Name, err)
	}
	l := Layout{Ne: ne, Nb: ContiguousStrides(n.Type.DType, ne), Root: n}
	info, _ := n.Info()
	if info != nil && info.Kind == KindView {
		if info.AliasArg >= len(n.Args) {
			return fmt.Errorf("ir: layout %s (%s %q): missing operand %d", n, n.Op, n.Name, info.AliasArg)
		}
		a := n.Args[info.AliasArg]
		if a == nil || a.ID < 0 || a.ID >= i || g.Nodes[a.ID] != a {
			return fmt.Errorf("ir: layout %s (%s %q): operand %d is not an earlier node of the graph", n, n.Op, n.Name, info.AliasArg)
		}
		src := out[a.ID]
		l.Root, l.Offset = src.Root, src.Offset
		switch n.Op {
		case OpReshape:
			if !src.Contiguous(n.Args[0].Type.DType) {
				return fmt.Errorf("ir: layout %s (reshape %q): source is not contiguous", n, n.Name)
			}
		case OpView:
			nb, _ := n.Attrs.Ints(AttrNB)
			if len(nb) != MaxDims {
				return fmt.Errorf("ir: layout %s (view %q): nb=%v needs %d strides", n, n.Name, nb, MaxDims)
			}
			copy(l.Nb[:], nb)
			off, _ := n.Attrs.Dim(AttrOffset)
			if !off.IsConst() {
				return fmt.Errorf("ir: layout %s (view %q): offset %s is not static", n, n.Name, off)
			}
			l.Offset += off.Val
		case OpPermute, OpTransp:
			ax := []int64{1, 0, 2, 3}
			if n.Op == OpPermute {
				ax, _ = n.Attrs.Ints(AttrAxes)
			}
			if !isPermutation(ax) {
				return fmt.Errorf("ir: layout %s (%s %q): axes %v is not a permutation", n, n.Op, n.Name, ax)
			}
			for j, a := range ax {
				l.Nb[a] = src.Nb[j]
			}
		default: // cpy, set_rows and fused writers alias their destination as is
			l.Nb = src.Nb
		}
	}
	if l.Root != n {
		rootBytes, err := l.Root.Type.Bytes()
		if err != nil {
			return fmt.Errorf("ir: layout %s: %w", n, err)
		}
		ext := l.Extent(n.Type.DType)
		if l.Offset < 0 || ext > rootBytes || l.Offset > rootBytes-ext {
			return fmt.Errorf("ir: layout %s (%s %q): bytes [%d, %d) fall outside %s's %d bytes",
				n, n.Op, n.Name, l.Offset, satAdd(l.Offset, ext), l.Root, rootBytes)
		}
	}
	out[i] = l
	return nil
}

func isPermutation(ax []int64) bool {
	if len(ax) != MaxDims {
		return false
	}
	var seen [MaxDims]bool
	for _, a := range ax {
		if a < 0 || a >= MaxDims || seen[a] {
			return false
		}
		seen[a] = true
	}
	return true
}
