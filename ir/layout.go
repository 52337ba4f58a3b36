package ir

import "fmt"

// Layout is where a node's elements live once shapes are static: byte
// strides, the node that owns the storage (itself unless the node is a view),
// and the byte offset into that storage.
type Layout struct {
	Ne     [MaxDims]int64
	Nb     [MaxDims]int64
	Root   *Node // the node whose buffer holds the data
	Offset int64 // bytes from the start of Root's buffer
}

// Contiguous reports whether the strides are the dense row-major ones.
func (l Layout) Contiguous(dt DType) bool {
	return l.Nb == ContiguousStrides(dt, l.Ne)
}

// Extent is the number of bytes from the first to one past the last element.
func (l Layout) Extent(dt DType) int64 {
	for _, d := range l.Ne {
		if d == 0 {
			return 0
		}
	}
	row, _ := dt.RowBytes(l.Ne[0])
	ext := row
	for i := 1; i < MaxDims; i++ {
		ext += (l.Ne[i] - 1) * l.Nb[i]
	}
	return ext
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
	out := make([]Layout, len(g.Nodes))
	for i, n := range g.Nodes {
		if n.ID != i {
			return nil, fmt.Errorf("ir: layout: node at %d has id %d (call Compact)", i, n.ID)
		}
		ne, err := n.Type.Shape.Ne()
		if err != nil {
			return nil, fmt.Errorf("ir: layout %s (%s %q): %w", n, n.Op, n.Name, err)
		}
		l := Layout{Ne: ne, Nb: ContiguousStrides(n.Type.DType, ne), Root: n}
		info, _ := Lookup(n.Op)
		if info != nil && info.Kind == KindView {
			src := out[n.Args[info.AliasArg].ID]
			l.Root, l.Offset = src.Root, src.Offset
			switch n.Op {
			case OpReshape:
				if !src.Contiguous(n.Args[0].Type.DType) {
					return nil, fmt.Errorf("ir: layout %s (reshape %q): source is not contiguous", n, n.Name)
				}
			case OpView:
				nb, _ := n.Attrs.Ints("nb")
				copy(l.Nb[:], nb)
				off, _ := n.Attrs.Dim("offset")
				if !off.IsConst() {
					return nil, fmt.Errorf("ir: layout %s (view %q): offset %s is not static", n, n.Name, off)
				}
				l.Offset += off.Val
			case OpPermute, OpTransp:
				ax := []int64{1, 0, 2, 3}
				if n.Op == OpPermute {
					ax, _ = n.Attrs.Ints("axes")
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
				return nil, fmt.Errorf("ir: layout %s: %w", n, err)
			}
			if l.Offset < 0 || l.Offset+l.Extent(n.Type.DType) > rootBytes {
				return nil, fmt.Errorf("ir: layout %s (%s %q): bytes [%d, %d) fall outside %s's %d bytes",
					n, n.Op, n.Name, l.Offset, l.Offset+l.Extent(n.Type.DType), l.Root, rootBytes)
			}
		}
		out[i] = l
	}
	return out, nil
}
