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

// graphIndex holds the use information the matcher needs, for the graph
// as it was when indexGraph ran (node IDs are positions then). It is
// rebuilt after every rewrite, so it is flat: per-position counts and one
// array of users, with no map to fill.
type graphIndex struct {
	nodes   []*ir.Node // g.Nodes when indexed (the slice header, not a copy)
	uses    []int32    // operand slots and outputs using each position
	userOff []int32    // users of position i: users[userOff[i]:userOff[i+1]]
	users   []*ir.Node // distinct users in graph order
	outs    []bool     // each position is a graph output
	scratch []int32    // reused fill counters
	userBuf []*ir.Node // storage reused by the next indexGraph
	usesBuf []int32
	offBuf  []int32
	outsBuf []bool
}

// indexGraph numbers g's nodes by position and indexes their uses, reusing
// the storage of prev (nil for none).
func indexGraph(g *ir.Graph, prev *graphIndex) *graphIndex {
	x := &graphIndex{}
	if prev != nil {
		x.usesBuf, x.offBuf, x.outsBuf, x.userBuf, x.scratch = prev.usesBuf, prev.offBuf, prev.outsBuf, prev.userBuf, prev.scratch
	}
	n := len(g.Nodes)
	x.nodes = g.Nodes
	for i, v := range g.Nodes {
		v.ID = i
	}
	x.uses = resize(x.usesBuf, n)
	x.outs = resizeBool(x.outsBuf, n)
	x.userOff = resize(x.offBuf, n+1)
	x.usesBuf, x.outsBuf, x.offBuf = x.uses, x.outs, x.userOff
	// Count the distinct users of each position: a node using a value
	// twice is one user (its operands' last user is itself).
	last := resize(x.scratch, n)
	for i := range last {
		last[i] = -1
	}
	total := 0
	for i, v := range g.Nodes {
		for _, a := range v.Args {
			j, ok := x.at(a)
			if !ok {
				continue
			}
			x.uses[j]++
			if last[j] != int32(i) {
				last[j] = int32(i)
				x.userOff[j+1]++
				total++
			}
		}
	}
	for j := 0; j < n; j++ {
		x.userOff[j+1] += x.userOff[j]
	}
	if cap(x.userBuf) < total {
		x.userBuf = make([]*ir.Node, total)
	}
	x.users = x.userBuf[:total]
	fill := last // reused: the next free slot of each position
	copy(fill, x.userOff[:n])
	for _, v := range g.Nodes {
		for _, a := range v.Args {
			j, ok := x.at(a)
			if !ok {
				continue
			}
			if f := fill[j]; f == x.userOff[j] || x.users[f-1] != v {
				x.users[f] = v
				fill[j]++
			}
		}
	}
	x.scratch = last
	for _, o := range g.Outputs {
		if j, ok := x.at(o); ok {
			x.uses[j]++
			x.outs[j] = true
		}
	}
	return x
}

func resize(b []int32, n int) []int32 {
	if cap(b) < n {
		return make([]int32, n)
	}
	b = b[:n]
	clear(b)
	return b
}

func resizeBool(b []bool, n int) []bool {
	if cap(b) < n {
		return make([]bool, n)
	}
	b = b[:n]
	clear(b)
	return b
}

// at returns n's position when n is a node of the indexed graph.
func (x *graphIndex) at(n *ir.Node) (int, bool) {
	if n == nil || n.ID < 0 || n.ID >= len(x.nodes) || x.nodes[n.ID] != n {
		return 0, false
	}
	return n.ID, true
}

// has reports whether n is a node of the indexed graph.
func (x *graphIndex) has(n *ir.Node) bool { _, ok := x.at(n); return ok }

// pos returns n's position (0 when n is not a node of the graph).
func (x *graphIndex) pos(n *ir.Node) int { i, _ := x.at(n); return i }

// useCount returns how many operand slots and outputs use n.
func (x *graphIndex) useCount(n *ir.Node) int {
	if i, ok := x.at(n); ok {
		return int(x.uses[i])
	}
	return 0
}

// usersOf returns the distinct users of n in graph order.
func (x *graphIndex) usersOf(n *ir.Node) []*ir.Node {
	i, ok := x.at(n)
	if !ok {
		return nil
	}
	a, b := x.userOff[i], x.userOff[i+1]
	if a == b {
		return nil
	}
	return x.users[a:b:b]
}

// isOut reports whether n is a graph output.
func (x *graphIndex) isOut(n *ir.Node) bool {
	i, ok := x.at(n)
	return ok && x.outs[i]
}

// dead reports whether nothing needs n any more.
func (x *graphIndex) dead(n *ir.Node) bool {
	if x.useCount(n) > 0 {
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
	var x *graphIndex
	for st.Iterations < maxIter {
		st.Iterations++
		changed := false
		x = indexGraph(g, x)
		work := slices.Clone(g.Nodes)
		for i := 0; i < len(work); i++ {
			n := work[i]
			// A replaced root has left the graph.
			if x.dead(n) || !x.has(n) {
				continue
			}
			for _, r := range rules {
				if len(r.Pattern.Ops) > 0 && !slices.Contains(r.Pattern.Ops, n.Op) {
					continue
				}
				m := &Match{Root: n, x: x}
				if !m.match(r.Pattern, n) || r.Cond != nil && !r.Cond(m) {
					continue
				}
				b := newBuilder(g, n, x)
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
				// Drop what the rewrite left dead now, so that use counts
				// seen by the next match are those of live nodes.
				st.Removed += g.Compact()
				x = indexGraph(g, x)
				work = append(work, b.created...)
				work = append(work, x.usersOf(repl)...)
				for _, e := range b.extra {
					work = append(work, x.usersOf(e[1])...)
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
	if !x.has(repl) && !slices.Contains(b.created, repl) {
		return fmt.Errorf("replacement %s %q is neither a node of the graph nor made by the builder", repl.Op, repl.Name)
	}
	if p, ok := x.at(repl); ok && p > x.pos(root) {
		return fmt.Errorf("replacement %s %q comes after the node it replaces", repl.Op, repl.Name)
	}
	for _, e := range b.extra {
		old := e[0]
		if !x.has(old) || old == root {
			return fmt.Errorf("extra replacement of %s %q: not a node of the graph other than the root", old.Op, old.Name)
		}
		for _, u := range x.usersOf(old) {
			if x.pos(u) < x.pos(root) {
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
