package target

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/irtool/irtool/internal/registry"
	"github.com/irtool/irtool/ir"
)

// OpRule is everything the target package knows about one op: whether and
// how the NPU runs a node of it, what a node costs, and the device scratch
// its aclnn calls need. With the op's typing (ir.OpInfo, which also carries
// the in-place flags the planner's policies read) and its CPU kernel
// (package eval), it makes the op's one record; TestOpRecords (root
// package) walks every op against every profile.
type OpRule struct {
	// NPU decides whether and how the NPU runs one node of the op. Nil
	// means the NPU never does (CPUOnly says why).
	NPU func(n *ir.Node) Support
	// CPUOnly is the reason an op without an NPU rule stays on the host.
	CPUOnly string
	// Traffic returns the FLOPs and the bytes read and written of one node
	// under bindings b (nil when static). Required for every op that
	// computes: the cost model prices both devices with it.
	Traffic func(n *ir.Node, b ir.Bindings) (flops, bytes float64, err error)
	// Workspace is the device scratch, in bytes, the aclnn calls s of one
	// static node need beyond its operands and result. Required with NPU
	// (NoWorkspace when the calls need none).
	Workspace func(n *ir.Node, s Support) int64
}

// NoWorkspace is the Workspace of ops whose aclnn calls need no scratch.
func NoWorkspace(*ir.Node, Support) int64 { return 0 }

// Rules is a set of op rules. DefaultRules holds the built-in ops; NewRules
// makes a set that sees them and adds its own, so two experiments in one
// process can register different rules without seeing each other's. A
// Rules is safe for concurrent use.
type Rules struct {
	m       *registry.Layered[ir.Op, OpRule]
	targets *registry.Layered[string, *Profile]
}

var defaultRules = &Rules{registry.New[ir.Op, OpRule](nil), registry.New[string, *Profile](nil)}

// mustRule registers a built-in rule into the default set. Each op
// family's file (copy.go, elementwise.go, norm.go, matmul.go, rope.go,
// attention.go, moe.go: the families of package ir's files) registers the
// records of its ops. The NPU rules are the ops llama.cpp's CANN backend
// runs and the aclnn calls it makes for them
// (ggml_backend_cann_supports_op and ggml_cann_compute_forward), each
// checking the dtype and shape limits listed there; the fused ops lower to
// the calls ggml-cann makes for the ops they fuse, or to the fused aclnn
// operator where CANN has one.
func mustRule(op ir.Op, rule OpRule) {
	if err := defaultRules.Register(op, rule); err != nil {
		panic(err)
	}
}

// DefaultRules returns the package's rule set: the built-in ops and
// whatever was registered into it. Get uses it.
func DefaultRules() *Rules { return defaultRules }

// NewRules returns an empty set layered over DefaultRules: lookups fall
// back to the defaults, registrations stay in the new set.
func NewRules() *Rules {
	return &Rules{registry.New(defaultRules.m), registry.New(defaultRules.targets)}
}

// Register adds the rule of an op. It fails when the op already has one
// (here or in a parent set), when Traffic is missing, or when an NPU rule
// comes without a Workspace rule.
func (r *Rules) Register(op ir.Op, rule OpRule) error {
	if op == "" {
		return fmt.Errorf("target: register: empty op name")
	}
	if rule.Traffic == nil {
		return fmt.Errorf("target: register %q: no Traffic rule", op)
	}
	if rule.NPU != nil && rule.Workspace == nil {
		return fmt.Errorf("target: register %q: an NPU rule needs a Workspace rule (NoWorkspace for none)", op)
	}
	if !r.m.Add(op, rule) {
		return fmt.Errorf("target: register: op %q already has a rule", op)
	}
	return nil
}

// Override replaces, in this set only, the rule of an op that has one
// (here or in a parent set): a variant of the default rules, e.g. a
// target limited to ggml-cann's quantised types. The checks are
// Register's.
func (r *Rules) Override(op ir.Op, rule OpRule) error {
	if _, ok := r.Lookup(op); !ok {
		return fmt.Errorf("target: override: op %q has no rule", op)
	}
	if rule.Traffic == nil || rule.NPU != nil && rule.Workspace == nil {
		return fmt.Errorf("target: override %q: Traffic, and Workspace with NPU, are required", op)
	}
	r.m.Set(op, rule)
	return nil
}

// Lookup returns the rule of op.
func (r *Rules) Lookup(op ir.Op) (OpRule, bool) { return r.m.Lookup(op) }

// Ops lists the ops with a rule, sorted.
func (r *Rules) Ops() []ir.Op { return r.m.Keys() }

// Profile returns a fresh copy of the named profile that decides support,
// cost and workspace with these rules: a target registered here (or in a
// parent set) first, else a built-in one (Get).
func (r *Rules) Profile(name string) (*Profile, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	if p, ok := r.targets.Lookup(key); ok {
		c := p.clone()
		c.rules = r
		return c, nil
	}
	p, err := Get(name)
	if err != nil {
		if names := r.TargetNames(); len(names) != len(Names()) {
			return nil, fmt.Errorf("target: unknown target %q (have %s)", name, strings.Join(names, ", "))
		}
		return nil, err
	}
	p.rules = r
	return p, nil
}

// RegisterTarget adds a profile under its own name (a copy: later changes
// to p are not seen). The name must not be a built-in target's or one
// already registered here.
func (r *Rules) RegisterTarget(p *Profile) error {
	if p == nil {
		return fmt.Errorf("target: register target: nil profile")
	}
	key := strings.ToLower(strings.TrimSpace(p.Name))
	if key == "" {
		return fmt.Errorf("target: register target: empty name")
	}
	if _, builtin := profiles[key]; builtin {
		return fmt.Errorf("target: register target %q: a built-in target has that name", p.Name)
	}
	c := p.clone()
	c.Name = key
	if !r.targets.Add(key, c) {
		return fmt.Errorf("target: register target %q: already registered", p.Name)
	}
	return nil
}

// TargetNames lists the built-in targets and those registered here (or in
// a parent set), sorted.
func (r *Rules) TargetNames() []string {
	out := Names()
	for _, n := range r.targets.Keys() {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}
