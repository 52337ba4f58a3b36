package passes

import "github.com/irtool/irtool/ir"

// Catalogue is the pass catalogue irtool passes --json prints.
type Catalogue struct {
	Default     []string         `json:"default"`
	Passes      []PassInfo       `json:"passes"`
	Constraints []ConstraintInfo `json:"constraints"`
	FusedOps    []FusedOpInfo    `json:"fused_ops"`
}

// PassInfo describes one pass.
type PassInfo struct {
	Name      string     `json:"name"`
	InDefault bool       `json:"in_default"`
	Required  bool       `json:"required"`
	Doc       string     `json:"doc"`
	Rules     []RuleInfo `json:"rules"`
}

// RuleInfo describes one rewrite rule of a pass.
type RuleInfo struct {
	Name    string `json:"name"`
	Pattern string `json:"pattern"`
	Doc     string `json:"doc"`
}

// ConstraintInfo is one ordering constraint between two passes.
type ConstraintInfo struct {
	Before string `json:"before"`
	After  string `json:"after"`
	Why    string `json:"why"`
}

// FusedOpInfo is one op the passes fuse into.
type FusedOpInfo struct {
	Op  string `json:"op"`
	Doc string `json:"doc"`
}

// Describe lists what irtool passes prints (--json): the default
// pipeline, every pass of reg with its rewrite rules, the ordering
// constraints, and the fused ops with their documentation from ops.
func Describe(reg *Registry, ops *ir.OpSet) (Catalogue, error) {
	def, err := reg.Parse("default")
	if err != nil {
		return Catalogue{}, err
	}
	out := Catalogue{Default: def.Names(), Passes: []PassInfo{}, Constraints: []ConstraintInfo{}, FusedOps: []FusedOpInfo{}}
	for _, p := range reg.All() {
		pi := PassInfo{Name: p.Name, InDefault: def.Contains(p.Name), Required: p.Required, Doc: p.Doc, Rules: []RuleInfo{}}
		for _, r := range p.Rules {
			pi.Rules = append(pi.Rules, RuleInfo{Name: r.Name, Pattern: r.Pattern.String(), Doc: r.Doc})
		}
		out.Passes = append(out.Passes, pi)
	}
	for _, c := range reg.Constraints() {
		out.Constraints = append(out.Constraints, ConstraintInfo{Before: c.Before, After: c.After, Why: c.Why})
	}
	for _, op := range Ops() {
		if info, ok := ops.Lookup(op); ok {
			out.FusedOps = append(out.FusedOps, FusedOpInfo{Op: string(op), Doc: info.Doc})
		}
	}
	return out, nil
}
