package ir

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Verify checks the graph's invariants: ids are dense and match positions,
// every operand comes earlier (so the node order is a topological order and
// the graph is acyclic), every node passes its op's checks, outputs belong to
// the graph, and, for a static graph, every view stays inside its storage.
// It reports up to ten problems, each naming the node.
func Verify(g *Graph) error {
	if g == nil {
		return errors.New("ir: verify: nil graph")
	}
	var errs []error
	add := func(n *Node, format string, args ...any) {
		if len(errs) < 10 {
			errs = append(errs, fmt.Errorf("%s (%s %q): %s", n, n.Op, n.Name, fmt.Sprintf(format, args...)))
		}
	}
	for _, k := range sortedKeys(g.Meta) {
		if !validMetaKey(k) {
			errs = append(errs, fmt.Errorf("meta key %q cannot be printed (empty, padded, or holding '=' or a newline)", k))
		}
	}
	if wellFormed(g) {
		// Nothing below can fail but the nodes' own checks.
		for _, n := range g.Nodes {
			if err := CheckNode(n); err != nil {
				add(n, "%v", err)
			}
		}
	} else {
		verifyStructure(g, &errs, add)
	}
	if len(errs) == 0 && g.IsStatic() {
		if _, err := Layouts(g); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("ir: verify %q: %w", g.Name, errors.Join(errs...))
}

// wellFormed reports whether every node's id is its position, every
// operand is a node at an earlier position and every output a node: what
// Verify's structural checks check, without a map.
func wellFormed(g *Graph) bool {
	at := func(n *Node, before int) bool {
		return n != nil && n.ID >= 0 && n.ID < before && g.Nodes[n.ID] == n
	}
	for i, n := range g.Nodes {
		if n == nil || n.ID != i {
			return false
		}
		for _, a := range n.Args {
			if !at(a, i) {
				return false
			}
		}
	}
	for _, o := range g.Outputs {
		if !at(o, len(g.Nodes)) {
			return false
		}
	}
	return true
}

// verifyStructure checks ids, operand order and outputs node by node,
// with each node's own checks, adding the problems to *errs (add adds a
// node's).
func verifyStructure(g *Graph, errs *[]error, add func(n *Node, format string, args ...any)) {
	pos := make(map[*Node]int, len(g.Nodes))
	for i, n := range g.Nodes {
		if n == nil {
			if len(*errs) < 10 {
				*errs = append(*errs, fmt.Errorf("node %d is nil", i))
			}
			continue
		}
		if _, dup := pos[n]; dup {
			add(n, "appears twice in the node list")
			continue
		}
		if n.ID != i {
			add(n, "id %d at position %d", n.ID, i)
		}
		for j, a := range n.Args {
			p, ok := pos[a]
			switch {
			case a == nil:
				add(n, "operand %d is nil", j)
			case !ok:
				add(n, "operand %d (%s) is not defined before its use", j, a)
			case p >= i:
				add(n, "operand %d comes after its use", j)
			}
		}
		pos[n] = i
		if err := CheckNode(n); err != nil {
			add(n, "%v", err)
		}
	}
	for i, o := range g.Outputs {
		if _, ok := pos[o]; !ok && len(*errs) < 10 {
			*errs = append(*errs, fmt.Errorf("output %d is not a node of the graph", i))
		}
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// validMetaKey reports whether a meta key survives Print and Parse.
func validMetaKey(k string) bool {
	return k != "" && strings.TrimSpace(k) == k && !strings.ContainsAny(k, "=\n\r")
}
