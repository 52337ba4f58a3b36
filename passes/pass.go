package passes

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/irtool/irtool/internal/registry"
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

// Registry holds passes and the ordering constraints between them. The
// package's default registry (DefaultRegistry) holds the built-in passes
// and is what the package-level Register, Lookup, All, Constraints,
// AddConstraint and Parse use; NewRegistry makes one layered over it, whose
// registrations no other registry sees. A Registry is safe for concurrent
// use.
type Registry struct {
	passes *registry.Layered[string, Pass]
	// constraints are keyed by "before<after": a constraint recorded
	// twice is kept once.
	constraints *registry.Layered[string, Constraint]
}

var defaultRegistry = &Registry{registry.New[string, Pass](nil), registry.New[string, Constraint](nil)}

// DefaultRegistry returns the package's default registry.
func DefaultRegistry() *Registry { return defaultRegistry }

// NewRegistry returns an empty registry layered over DefaultRegistry: it
// sees the built-in passes and constraints, and keeps its own additions.
func NewRegistry() *Registry {
	return &Registry{registry.New(defaultRegistry.passes), registry.New(defaultRegistry.constraints)}
}

// Register adds a pass to the default registry, so Parse and irtool passes
// know it. The name must be new and made of lower-case letters, digits and
// '-'.
func Register(p Pass) error { return defaultRegistry.Register(p) }

// Register adds a pass to r (see the package-level Register).
func (r *Registry) Register(p Pass) error {
	if !validName(p.Name) || p.Name == "default" || p.Name == "none" {
		return fmt.Errorf("passes: register: bad pass name %q", p.Name)
	}
	if p.Run == nil {
		return fmt.Errorf("passes: register %q: no Run function", p.Name)
	}
	seen := map[string]bool{}
	for _, rule := range p.Rules {
		if rule == nil || rule.Name == "" || seen[rule.Name] {
			return fmt.Errorf("passes: register %q: rules need unique names", p.Name)
		}
		seen[rule.Name] = true
	}
	if !r.passes.Add(p.Name, p) {
		return fmt.Errorf("passes: register: pass %q already registered", p.Name)
	}
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

// AddConstraint records an ordering constraint between two passes of the
// default registry. It fails when a pass is unknown or the constraint
// contradicts another.
func AddConstraint(c Constraint) error { return defaultRegistry.AddConstraint(c) }

// AddConstraint records an ordering constraint in r (see the package-level
// AddConstraint).
func (r *Registry) AddConstraint(c Constraint) error {
	for _, n := range []string{c.Before, c.After} {
		if _, ok := r.Lookup(n); !ok {
			return fmt.Errorf("passes: constraint %s < %s: unknown pass %q", c.Before, c.After, n)
		}
	}
	if c.Before == c.After {
		return fmt.Errorf("passes: constraint %s < %s orders a pass before itself", c.Before, c.After)
	}
	if reachable(r.Constraints(), c.After, c.Before) {
		return fmt.Errorf("passes: constraint %s < %s contradicts the existing order", c.Before, c.After)
	}
	r.constraints.Set(c.Before+"<"+c.After, c)
	return nil
}

// reachable reports whether the constraints order a before b (transitively).
func reachable(constraints []Constraint, a, b string) bool {
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

// Lookup returns a pass of the default registry.
func Lookup(name string) (Pass, bool) { return defaultRegistry.Lookup(name) }

// Lookup returns a pass of r or of the registry it is layered over.
func (r *Registry) Lookup(name string) (Pass, bool) { return r.passes.Lookup(name) }

// All returns every pass of the default registry in registration order.
func All() []Pass { return defaultRegistry.All() }

// All returns every pass r sees: the parent's first, in registration order.
func (r *Registry) All() []Pass { return r.passes.Values() }

// Constraints returns the ordering constraints of the default registry.
func Constraints() []Constraint { return defaultRegistry.Constraints() }

// Constraints returns the ordering constraints r sees.
func (r *Registry) Constraints() []Constraint { return r.constraints.Values() }

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

// Check verifies the ordering constraints of the default registry that
// apply to p.
func (p Pipeline) Check() error { return p.check(Constraints()) }

func (p Pipeline) check(constraints []Constraint) error {
	first := map[string]int{}
	for i, x := range p {
		if x.Run == nil {
			return fmt.Errorf("passes: pipeline: pass %q has no Run function", x.Name)
		}
		if _, ok := first[x.Name]; !ok {
			first[x.Name] = i
		}
	}
	for _, c := range constraints {
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

func pipelineOf(names []string) (Pipeline, error) { return defaultRegistry.pipelineOf(names) }

func (r *Registry) pipelineOf(names []string) (Pipeline, error) {
	var p Pipeline
	for _, n := range names {
		x, ok := r.Lookup(n)
		if !ok {
			return nil, fmt.Errorf("passes: unknown pass %q (known: %s)", n, strings.Join(r.knownNames(), ", "))
		}
		p = append(p, x)
	}
	return p, nil
}

func (r *Registry) knownNames() []string {
	var out []string
	for _, p := range r.All() {
		out = append(out, p.Name)
	}
	sort.Strings(out)
	return out
}

// Parse reads a pipeline: "default", "none" (only required passes), or a
// comma-separated list of pass names in which "default" stands for the
// default pipeline ("default,merge-qkv"). It checks the ordering
// constraints. It resolves names in the default registry.
func Parse(s string) (Pipeline, error) { return defaultRegistry.Parse(s) }

// Parse reads a pipeline as the package-level Parse does, resolving names
// in r and checking r's constraints.
func (r *Registry) Parse(s string) (Pipeline, error) {
	s = strings.TrimSpace(s)
	var p Pipeline
	switch s {
	case "none":
		for _, x := range r.All() {
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
		x, err := r.pipelineOf([]string{part})
		if err != nil {
			return nil, err
		}
		p = append(p, x...)
	}
	for _, x := range r.All() {
		if x.Required && !p.Contains(x.Name) {
			p = append(p, x)
		}
	}
	if err := p.check(r.Constraints()); err != nil {
		return nil, err
	}
	return p, nil
}
