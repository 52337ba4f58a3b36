package viz

import (
	"strconv"
	"strings"

	"github.com/irtool/irtool/ir"
)

// The HTML report highlights "the same value" in every column, but node IDs
// are not stable across passes: Compact renumbers, and a pass may return a
// rebuilt graph. keyer therefore gives every node a report key by matching
// each graph against the one before it: first structurally (same op,
// attributes, type, name, layer and operands with the same keys), then, for
// what is left, by op, name and layer in execution order, which follows a
// value through rewrites of its operands and through Specialize (which
// changes types). A node that matches nothing gets a fresh key.
type keyer struct {
	next int
}

// first keys a graph that has no predecessor.
func (k *keyer) first(g *ir.Graph) []int {
	return k.match(nil, nil, g)
}

// match keys g against prev, whose nodes have keys prevKeys.
func (k *keyer) match(prev *ir.Graph, prevKeys []int, g *ir.Graph) []int {
	strong := map[string][]int{}
	weak := map[string][]int{}
	var used []bool
	if prev != nil {
		pos := indexOf(prev)
		used = make([]bool, len(prev.Nodes))
		for i, n := range prev.Nodes {
			strong[strongSig(n, pos, prevKeys)] = append(strong[strongSig(n, pos, prevKeys)], i)
			weak[weakSig(n)] = append(weak[weakSig(n)], i)
		}
	}
	take := func(m map[string][]int, sig string) int {
		q := m[sig]
		for len(q) > 0 && used[q[0]] {
			q = q[1:]
		}
		m[sig] = q
		if len(q) == 0 {
			return -1
		}
		used[q[0]] = true
		m[sig] = q[1:]
		return q[0]
	}
	pos := indexOf(g)
	keys := make([]int, len(g.Nodes))
	for i := range keys {
		keys[i] = -1
	}
	for i, n := range g.Nodes {
		j := -1
		if prev != nil {
			if j = take(strong, strongSig(n, pos, keys)); j < 0 {
				j = take(weak, weakSig(n))
			}
		}
		if j >= 0 && j < len(prevKeys) {
			keys[i] = prevKeys[j]
			continue
		}
		keys[i] = k.next
		k.next++
	}
	return keys
}

// indexOf maps each node to its position in g.Nodes.
func indexOf(g *ir.Graph) map[*ir.Node]int {
	pos := make(map[*ir.Node]int, len(g.Nodes))
	for i, n := range g.Nodes {
		pos[n] = i
	}
	return pos
}

func weakSig(n *ir.Node) string {
	return string(n.Op) + "\x00" + n.Name + "\x00" + strconv.Itoa(n.Layer)
}

func strongSig(n *ir.Node, pos map[*ir.Node]int, keys []int) string {
	var b strings.Builder
	b.WriteString(weakSig(n))
	b.WriteByte(0)
	b.WriteString(n.Type.String())
	b.WriteByte(0)
	b.WriteString(n.Attrs.String())
	for _, a := range n.Args {
		b.WriteByte(0)
		i, ok := pos[a]
		if !ok || i >= len(keys) || keys[i] < 0 {
			b.WriteString("?")
			continue
		}
		b.WriteString(strconv.Itoa(keys[i]))
	}
	return b.String()
}
