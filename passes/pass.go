package passes

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/irtool/irtool/ir"
)

// Pass is one named step of a pipeline.
type Pass struct {
	Name string
	Doc  string // one line for irtool passes
	// Required passes run even in the pipeline "none" (as in Go's SSA
	// backend, where only required passes run without optimisation). No
	// built-in pass is required: the graph models build is executable as
	// is. A target that must legalise a graph registers a required pass.
	Required bool
	// Rules are the rewrite rules the pass applies, listed by irtool
	// passes (nil for passes written as plain functions).
	Rules []*Rule
	// Run transforms g in place and reports whether it changed anything.
	Run func(g *ir.Graph, c *Context) (changed bool, err error)
}

// Context is what a running pass sees: the options of the run and sinks
// for its statistics.
type Context struct {
	Options Options
	hits    map[string]int
	stats   map[string]int
}

// Hit adds n to the hit count of rule.
func (c *Context) Hit(rule string, n int) {
	if n != 0 {
		c.hits[rule] += n
	}
}

// Count adds n to the statistic key (nodes removed, groups merged, ...).
func (c *Context) Count(key string, n int) {
	if n != 0 {
		c.stats[key] += n
	}
}

// RulePass returns a pass that applies rules with the worklist driver
// (Rewrite) under the run's RewriteOptions, counting hits per rule.
func RulePass(name, doc string, rules ...*Rule) Pass {
	return Pass{Name: name, Doc: doc, Rules: rules, Run: func(g *ir.Graph, c *Context) (bool, error) {
		st, err := Rewrite(g, rules, c.Options.Rewrite)
		for k, v := range st.Hits {
			c.Hit(k, v)
		}
		c.Count("removed", st.Removed)
		if st.Rewrites > 0 {
			c.Count("sweeps", st.Iterations)
		}
		return st.Rewrites > 0, err
	}}
}

// Constraint orders two passes: when both are in a pipeline, the first run
// of Before must come before the first run of After.
type Constraint struct {
	Before, After string
	Why           string
}

var (
	regMu       sync.RWMutex
	registry    = map[string]Pass{}
	regOrder    []string
	constraints []Constraint
)

// Register adds a pass to the registry, so Parse and irtool passes know it.
// The name must be new and made of lower-case letters, digits and '-'.
func Register(p Pass) error {
	regMu.Lock()
	defer regMu.Unlock()
	if !validName(p.Name) || p.Name == "default" || p.Name == "none" {
		return fmt.Errorf("passes: register: bad pass name %q", p.Name)
	}
	if p.Run == nil {
		return fmt.Errorf("passes: register %q: no Run function", p.Name)
	}
	if _, dup := registry[p.Name]; dup {
		return fmt.Errorf("passes: register: pass %q already registered", p.Name)
	}
	seen := map[string]bool{}
	for _, r := range p.Rules {
		if r == nil || r.Name == "" || seen[r.Name] {
			return fmt.Errorf("passes: register %q: rules need unique names", p.Name)
		}
		seen[r.Name] = true
	}
	registry[p.Name] = p
	regOrder = append(regOrder, p.Name)
	return nil
}

func mustRegisterPass(p Pass) {
	if err := Register(p); err != nil {
		panic(err)
	}
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// AddConstraint records an ordering constraint between two registered
// passes. It fails when a pass is unknown or the constraint contradicts
// another.
func AddConstraint(c Constraint) error {
	regMu.Lock()
	defer regMu.Unlock()
	for _, n := range []string{c.Before, c.After} {
		if _, ok := registry[n]; !ok {
			return fmt.Errorf("passes: constraint %s < %s: unknown pass %q", c.Before, c.After, n)
		}
	}
	if c.Before == c.After {
		return fmt.Errorf("passes: constraint %s < %s orders a pass before itself", c.Before, c.After)
	}
	if reachable(c.After, c.Before) {
		return fmt.Errorf("passes: constraint %s < %s contradicts the existing order", c.Before, c.After)
	}
	constraints = append(constraints, c)
	return nil
}

// reachable reports whether the constraints order a before b (transitively).
func reachable(a, b string) bool {
	seen := map[string]bool{a: true}
	stack := []string{a}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if x == b {
			return true
		}
		for _, c := range constraints {
			if c.Before == x && !seen[c.After] {
				seen[c.After] = true
				stack = append(stack, c.After)
			}
		}
	}
	return false
}

// Lookup returns a registered pass.
func Lookup(name string) (Pass, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	p, ok := registry[name]
	return p, ok
}

// All returns every registered pass in registration order.
func All() []Pass {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]Pass, len(regOrder))
	for i, n := range regOrder {
		out[i] = registry[n]
	}
	return out
}

// Constraints returns the ordering constraints.
func Constraints() []Constraint {
	regMu.RLock()
	defer regMu.RUnlock()
	return slices.Clone(constraints)
}

// Pipeline is an ordered list of passes: data that can be printed, parsed,
// checked and edited before it runs.
type Pipeline []Pass

// Names returns the pass names in order.
func (p Pipeline) Names() []string {
	out := make([]string, len(p))
	for i, x := range p {
		out[i] = x.Name
	}
	return out
}

// String is the comma-separated list Parse reads back.
func (p Pipeline) String() string {
	if len(p) == 0 {
		return "none"
	}
	return strings.Join(p.Names(), ",")
}

// Check verifies the ordering constraints that apply to p.
func (p Pipeline) Check() error {
	first := map[string]int{}
	for i, x := range p {
		if x.Run == nil {
			return fmt.Errorf("passes: pipeline: pass %q has no Run function", x.Name)
		}
		if _, ok := first[x.Name]; !ok {
			first[x.Name] = i
		}
	}
	for _, c := range Constraints() {
		i, okA := first[c.Before]
		j, okB := first[c.After]
		if okA && okB && i > j {
			why := ""
			if c.Why != "" {
				why = ": " + c.Why
			}
			return fmt.Errorf("passes: pipeline %s: %s must run before %s%s", p, c.Before, c.After, why)
		}
	}
	return nil
}

// Contains reports whether the pipeline runs the named pass.
func (p Pipeline) Contains(name string) bool { return slices.Contains(p.Names(), name) }

// defaultNames is the default pipeline, in order (from the list in
// builtin.go).
var defaultNames []string

// Default returns the default pipeline: clean-ups, the RoPE cache, constant
// folding, CSE (which shares the RoPE cache across layers), the fusions and
// a final DCE. merge-qkv is not in it (it needs --merge-qkv).
func Default() Pipeline {
	p, err := pipelineOf(defaultNames)
	if err != nil {
		panic(err) // the init check guarantees it
	}
	return p
}

func pipelineOf(names []string) (Pipeline, error) {
	var p Pipeline
	for _, n := range names {
		x, ok := Lookup(n)
		if !ok {
			return nil, fmt.Errorf("passes: unknown pass %q (known: %s)", n, strings.Join(knownNames(), ", "))
		}
		p = append(p, x)
	}
	return p, nil
}

func knownNames() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := slices.Clone(regOrder)
	sort.Strings(out)
	return out
}

// Parse reads a pipeline: "default", "none" (only required passes), or a
// comma-separated list of pass names in which "default" stands for the
// default pipeline ("default,merge-qkv"). It checks the ordering
// constraints.
func Parse(s string) (Pipeline, error) {
	s = strings.TrimSpace(s)
	var p Pipeline
	switch s {
	case "none":
		for _, x := range All() {
			if x.Required {
				p = append(p, x)
			}
		}
		return p, nil
	case "", "default":
		s = "default"
	}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		switch part {
		case "":
			return nil, fmt.Errorf("passes: pipeline %q: empty pass name", s)
		case "default":
			p = append(p, Default()...)
			continue
		case "none":
			return nil, fmt.Errorf("passes: pipeline %q: none cannot be combined with passes", s)
		}
		x, err := pipelineOf([]string{part})
		if err != nil {
			return nil, err
		}
		p = append(p, x...)
	}
	for _, x := range All() {
		if x.Required && !p.Contains(x.Name) {
			p = append(p, x)
		}
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	return p, nil
}
