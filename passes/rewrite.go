package passes

import (
	"cmp"
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

// graphIndex holds the use information the matcher needs, by position in
// the graph (node IDs are positions). It is built once per sweep and kept
// up to date by each rewrite (apply), so a rewrite costs its neighbourhood
// plus a move of the node list, not a rebuild.
type graphIndex struct {
	nodes []*ir.Node   // g.Nodes (the same slice)
	uses  []int32      // operand slots and outputs using each position
	users [][]*ir.Node // distinct users of each position, in graph order
	outs  []bool       // each position is a graph output
	// live: no node is dead (every node is an output, has a side effect
	// or has a use), so the graph is what Compact would leave.
	live bool

	flat []*ir.Node // storage of the users lists a build carves
	last []int32
}

// checkIndex, when set (by the package's tests), checks the index after
// every build and every rewrite against a fresh build.
var checkIndex func(x *graphIndex, g *ir.Graph)

// indexGraph numbers g's nodes by position and indexes their uses, reusing
// the storage of prev (nil for none).
func indexGraph(g *ir.Graph, prev *graphIndex) *graphIndex {
	x := &graphIndex{}
	if prev != nil {
		x.flat, x.last = prev.flat, prev.last
	}
	n := len(g.Nodes)
	x.nodes = g.Nodes
	for i, v := range g.Nodes {
		v.ID = i
	}
	x.uses = make([]int32, n)
	x.outs = make([]bool, n)
	x.users = make([][]*ir.Node, n)
	// Count the distinct users of each position: a node using a value
	// twice is one user (its operands' last user is itself).
	last := resize(x.last, n)
	for i := range last {
		last[i] = -1
	}
	counts := make([]int32, n)
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
				counts[j]++
				total++
			}
		}
	}
	if cap(x.flat) < total {
		x.flat = make([]*ir.Node, total)
	}
	flat := x.flat[:total]
	off := 0
	for j, c := range counts {
		x.users[j] = flat[off : off : off+int(c)]
		off += int(c)
	}
	for _, v := range g.Nodes {
		for _, a := range v.Args {
			if j, ok := x.at(a); ok {
				if u := x.users[j]; len(u) == 0 || u[len(u)-1] != v {
					x.users[j] = append(u, v)
				}
			}
		}
	}
	x.last = last
	for _, o := range g.Outputs {
		if j, ok := x.at(o); ok {
			x.uses[j]++
			x.outs[j] = true
		}
	}
	x.live = true
	for _, v := range g.Nodes {
		if x.dead(v) {
			x.live = false
			break
		}
	}
	return x
}

func resize(b []int32, n int) []int32 {
	if cap(b) < n {
		return make([]int32, n)
	}
	return b[:n]
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
	if !ok || len(x.users[i]) == 0 {
		return nil
	}
	u := x.users[i]
	return u[:len(u):len(u)]
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
	return !sideEffect(n)
}

func sideEffect(n *ir.Node) bool {
	info, ok := n.Info()
	return ok && info.SideEffect
}

// byID orders users by position.
func byID(u *ir.Node, id int) int { return cmp.Compare(u.ID, id) }

// addUser records u (placed, its ID its position) as a user of position j.
func (x *graphIndex) addUser(j int, u *ir.Node) {
	l := x.users[j]
	k, found := slices.BinarySearchFunc(l, u.ID, byID)
	if found {
		return
	}
	x.users[j] = slices.Insert(l, k, u)
}

// dropUser removes u from the users of position j.
func (x *graphIndex) dropUser(j int, u *ir.Node) {
	if k := slices.Index(x.users[j], u); k >= 0 {
		x.users[j] = slices.Delete(x.users[j], k, k+1)
	}
}

// apply makes the committed-to rewrite on g and on the index, which must
// index g and be live: the builder's nodes replace root in the node list,
// root's uses go to repl and each extra replacement's to its new node,
// and the nodes left dead are removed (what Compact would remove, found
// from the nodes that lost a use). It returns how many were removed.
func (x *graphIndex) apply(g *ir.Graph, root, repl *ir.Node, b *Builder) int {
	r := root.ID
	k := len(b.created)
	rootUsers := x.users[r]
	g.Nodes = slices.Replace(g.Nodes, r, r+1, b.created...)
	x.nodes = g.Nodes
	x.uses = slices.Replace(x.uses, r, r+1, make([]int32, k)...)
	x.outs = slices.Replace(x.outs, r, r+1, make([]bool, k)...)
	x.users = slices.Replace(x.users, r, r+1, make([][]*ir.Node, k)...)
	for i := r; i < len(g.Nodes); i++ {
		g.Nodes[i].ID = i
	}
	// root's operands lose a user, the new nodes' operands gain one.
	for _, a := range root.Args {
		if j, ok := x.at(a); ok {
			x.uses[j]--
			x.dropUser(j, root)
		}
	}
	for _, c := range b.created {
		for _, a := range c.Args {
			if j, ok := x.at(a); ok {
				x.uses[j]++
				x.addUser(j, c)
			}
		}
	}
	x.forward(g, root, repl, rootUsers)
	for _, e := range b.extra {
		if j, ok := x.at(e[0]); ok {
			x.forward(g, e[0], e[1], x.users[j])
		}
	}
	// Remove what lost its last use, then what that leaves unused.
	var dead []int
	stack := append([]*ir.Node{repl}, root.Args...)
	stack = append(stack, b.created...)
	for _, e := range b.extra {
		stack = append(stack, e[0])
	}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		j, ok := x.at(n)
		if !ok || x.uses[j] != 0 || sideEffect(n) { // uses -1: removed already
			continue
		}
		x.uses[j] = -1 // removed
		dead = append(dead, j)
		for _, a := range n.Args {
			if i, ok := x.at(a); ok && x.uses[i] > 0 {
				x.uses[i]--
				x.dropUser(i, n)
				stack = append(stack, a)
			}
		}
	}
	if len(dead) > 0 {
		// Close the gaps: move each run of kept positions down at once.
		slices.Sort(dead)
		w := dead[0]
		for d, i := range dead {
			end := len(g.Nodes)
			if d+1 < len(dead) {
				end = dead[d+1]
			}
			copy(g.Nodes[w:], g.Nodes[i+1:end])
			copy(x.uses[w:], x.uses[i+1:end])
			copy(x.outs[w:], x.outs[i+1:end])
			copy(x.users[w:], x.users[i+1:end])
			w += end - (i + 1)
		}
		clear(g.Nodes[w:])
		clear(x.users[w:])
		g.Nodes, x.uses, x.outs, x.users = g.Nodes[:w], x.uses[:w], x.outs[:w], x.users[:w]
		x.nodes = g.Nodes
		for i := dead[0]; i < w; i++ {
			g.Nodes[i].ID = i
		}
	}
	return len(dead)
}

// forward makes every use of old (whose users are given) a use of new, as
// Graph.ReplaceUses does (new keeps its own uses of old), and updates the
// index.
func (x *graphIndex) forward(g *ir.Graph, old, new *ir.Node, users []*ir.Node) {
	if old == new {
		return
	}
	jo, inGraph := x.at(old)
	jn, _ := x.at(new)
	var kept []*ir.Node
	for _, u := range users {
		if u == new {
			kept = append(kept, u)
			continue
		}
		moved := int32(0)
		for i, a := range u.Args {
			if a == old {
				u.Args[i] = new
				moved++
			}
		}
		x.uses[jn] += moved
		if inGraph {
			x.uses[jo] -= moved
		}
		x.addUser(jn, u)
	}
	for i, o := range g.Outputs {
		if o == old {
			g.Outputs[i] = new
			x.uses[jn]++
			x.outs[jn] = true
			if inGraph {
				x.uses[jo]--
				x.outs[jo] = false
			}
		}
	}
	if inGraph {
		x.users[jo] = kept
	}
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
		if checkIndex != nil {
			checkIndex(x, g)
		}
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
				if err := check(x, n, repl, b); err != nil {
					return st, fmt.Errorf("rule %s at %s (%s %q): %w", r.Name, n, n.Op, n.Name, err)
				}
				st.Hits[r.Name]++
				st.Rewrites++
				changed = true
				if st.Rewrites > maxRewrites {
					return st, fmt.Errorf("more than %d rewrites (hits %s): do two rules undo each other?", maxRewrites, formatHits(st.Hits))
				}
				// Drop what the rewrite left dead now, so that use counts
				// seen by the next match are those of live nodes. Once the
				// graph is live, the index follows the rewrite; before,
				// the first rewrite compacts and indexes it all.
				if x.live {
					st.Removed += x.apply(g, n, repl, b)
				} else {
					commit(g, n, repl, b)
					st.Removed += g.Compact()
					x = indexGraph(g, x)
				}
				if checkIndex != nil {
					checkIndex(x, g)
				}
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

// check reports why the replacement of root by repl and the builder's
// extra replacements cannot be committed.
func check(x *graphIndex, root, repl *ir.Node, b *Builder) error {
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
	return nil
}

// commit splices the builder's nodes in before root, forwards root's uses
// to repl (and any extra replacements) and drops root.
func commit(g *ir.Graph, root, repl *ir.Node, b *Builder) {
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
