package passes

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/irtool/irtool/ir"
)

// RewriteOptions bound the worklist driver (MLIR's GreedyRewriteConfig).
type RewriteOptions struct {
	// MaxIterations is the number of sweeps over the whole graph before the
	// driver gives up (default 10). A sweep that rewrites nothing ends it.
	MaxIterations int
	// MaxRewrites caps the rewrites of one call (default 10 per node plus
	// 1000), so a pair of rules undoing each other fails loudly.
	MaxRewrites int
}

// RewriteStats report what the driver did.
type RewriteStats struct {
	Hits       map[string]int // rewrites per rule name
	Rewrites   int            // all rewrites
	Iterations int            // sweeps, the last one rewriting nothing
	Removed    int            // nodes that became dead and were removed
}

// graphIndex holds the use information the matcher needs; it is rebuilt
// after every rewrite (graphs are a few thousand nodes at most).
type graphIndex struct {
	pos   map[*ir.Node]int
	uses  map[*ir.Node]int
	users map[*ir.Node][]*ir.Node
	outs  map[*ir.Node]bool
}

func indexGraph(g *ir.Graph) *graphIndex {
	x := &graphIndex{pos: make(map[*ir.Node]int, len(g.Nodes)), uses: make(map[*ir.Node]int, len(g.Nodes)),
		users: make(map[*ir.Node][]*ir.Node, len(g.Nodes)), outs: make(map[*ir.Node]bool, len(g.Outputs))}
	for i, n := range g.Nodes {
		n.ID = i
		x.pos[n] = i
		for _, a := range n.Args {
			x.uses[a]++
			if u := x.users[a]; len(u) == 0 || u[len(u)-1] != n {
				x.users[a] = append(u, n)
			}
		}
	}
	for _, o := range g.Outputs {
		x.uses[o]++
		x.outs[o] = true
	}
	return x
}

// dead reports whether nothing needs n any more.
func (x *graphIndex) dead(n *ir.Node) bool {
	if x.uses[n] > 0 {
		return false
	}
	info, ok := n.Info()
	return !ok || !info.SideEffect
}

// Rewrite applies rules to g until no rule matches (a fixed point): the
// worklist holds every node in graph order; a rewrite pushes the new nodes
// and the users of the replacement, so chains of rules compose within one
// sweep. Rules are tried in the order given; the first that matches and
// builds a replacement wins. Nodes a rewrite leaves dead are removed at once
// (so are nodes that were dead before, once any rule fires). An
// error names the rule and the node; not converging within the caps is an
// error too.
func Rewrite(g *ir.Graph, rules []*Rule, opts RewriteOptions) (RewriteStats, error) {
	st := RewriteStats{Hits: map[string]int{}}
	for i, r := range rules {
		if r == nil || r.Name == "" || r.Pattern == nil || r.Build == nil {
			return st, fmt.Errorf("rule %d: needs a name, a pattern and a builder", i)
		}
	}
	maxIter := opts.MaxIterations
	if maxIter <= 0 {
		maxIter = 10
	}
	maxRewrites := opts.MaxRewrites
	if maxRewrites <= 0 {
		maxRewrites = 10*len(g.Nodes) + 1000
	}
	for st.Iterations < maxIter {
		st.Iterations++
		changed := false
		x := indexGraph(g)
		work := slices.Clone(g.Nodes)
		gone := map[*ir.Node]bool{}
		for i := 0; i < len(work); i++ {
			n := work[i]
			if gone[n] || x.dead(n) {
				continue
			}
			if _, ok := x.pos[n]; !ok {
				continue
			}
			for _, r := range rules {
				if len(r.Pattern.Ops) > 0 && !slices.Contains(r.Pattern.Ops, n.Op) {
					continue
				}
				m := &Match{Root: n, nodes: map[string]*ir.Node{}, uses: x.uses, users: x.users, pos: x.pos, outs: x.outs}
				if !m.match(r.Pattern, n) || r.Cond != nil && !r.Cond(m) {
					continue
				}
				b := newBuilder(g, n, x.pos)
				repl, err := r.Build(b, m)
				if err != nil {
					return st, fmt.Errorf("rule %s at %s (%s %q): %w", r.Name, n, n.Op, n.Name, err)
				}
				if repl == nil || repl == n {
					continue
				}
				if err := commit(g, x, n, repl, b); err != nil {
					return st, fmt.Errorf("rule %s at %s (%s %q): %w", r.Name, n, n.Op, n.Name, err)
				}
				st.Hits[r.Name]++
				st.Rewrites++
				changed = true
				if st.Rewrites > maxRewrites {
					return st, fmt.Errorf("more than %d rewrites (hits %s): do two rules undo each other?", maxRewrites, formatHits(st.Hits))
				}
				gone[n] = true
				// Drop what the rewrite left dead now, so that use counts
				// seen by the next match are those of live nodes.
				st.Removed += g.Compact()
				x = indexGraph(g)
				work = append(work, b.created...)
				work = append(work, x.users[repl]...)
				for _, e := range b.extra {
					work = append(work, x.users[e[1]]...)
				}
				break
			}
		}
		if !changed {
			return st, nil
		}
	}
	return st, fmt.Errorf("no fixed point after %d sweeps (hits %s)", maxIter, formatHits(st.Hits))
}

// commit splices the builder's nodes in before root, forwards root's uses
// to repl (and any extra replacements) and drops root.
func commit(g *ir.Graph, x *graphIndex, root, repl *ir.Node, b *Builder) error {
	if !repl.Type.Equal(root.Type) {
		return fmt.Errorf("replacement %s %q has type %s, the node replaced %s", repl.Op, repl.Name, repl.Type, root.Type)
	}
	if _, ok := x.pos[repl]; !ok && !slices.Contains(b.created, repl) {
		return fmt.Errorf("replacement %s %q is neither a node of the graph nor made by the builder", repl.Op, repl.Name)
	}
	if p, ok := x.pos[repl]; ok && p > x.pos[root] {
		return fmt.Errorf("replacement %s %q comes after the node it replaces", repl.Op, repl.Name)
	}
	for _, e := range b.extra {
		old := e[0]
		if _, ok := x.pos[old]; !ok || old == root {
			return fmt.Errorf("extra replacement of %s %q: not a node of the graph other than the root", old.Op, old.Name)
		}
		for _, u := range x.users[old] {
			if x.pos[u] < x.pos[root] {
				return fmt.Errorf("extra replacement of %s %q: its user %s (%s %q) comes before the root", old.Op, old.Name, u, u.Op, u.Name)
			}
		}
	}
	nodes := make([]*ir.Node, 0, len(g.Nodes)+len(b.created))
	for _, n := range g.Nodes {
		if n == root {
			nodes = append(nodes, b.created...)
			continue
		}
		nodes = append(nodes, n)
	}
	g.Nodes = nodes
	for i, n := range g.Nodes {
		n.ID = i
	}
	g.ReplaceUses(root, repl)
	for _, e := range b.extra {
		g.ReplaceUses(e[0], e[1])
	}
	return nil
}

func formatHits(h map[string]int) string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, h[k])
	}
	return "{" + strings.Join(parts, " ") + "}"
}
