package target

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/irtool/irtool/ir"
)

// File is a profile as data: what irtool targets --json prints for every
// target and what --target-file (ParseFile) reads back under the file's
// own name. Rules names the family of op rules, 310-class gate and call
// limits the profile decides with; NPUOps lists the ops it claims for the
// NPU (a file may drop some: those stay on the CPU); CallLimits and the
// sources are informative.
type File struct {
	Name         string        `json:"name"`
	Description  string        `json:"description"`
	Rules        string        `json:"rules"`
	NPU          *Chip         `json:"npu,omitempty"`
	Host         Chip          `json:"host"`
	LinkBW       float64       `json:"link_bw"`
	LinkSource   string        `json:"link_source,omitempty"`
	Interconnect *Interconnect `json:"interconnect,omitempty"`
	GraphCapture bool          `json:"graph_capture"`
	Align        int64         `json:"align"`
	Overheads    Overheads     `json:"overheads"`
	Costs        Costs         `json:"costs"`
	NPUOps       []string      `json:"npu_ops"`
	CallLimits   []string      `json:"call_limits,omitempty"`
}

// families are the rule families a file may name.
var families = map[string]struct {
	gate   func(n *ir.Node, s Support) Support
	limits []CallLimit
	npu    bool
}{
	"a2":          {limits: a2Limits, npu: true},
	"310p":        {gate: gate310P, npu: true},
	"310b":        {gate: gate310B, npu: true},
	"310b-strict": {gate: gate310BStrict, npu: true},
	"cpu":         {},
}

// File returns the profile as data.
func (p *Profile) File() File {
	f := File{Name: p.Name, Description: p.Description, Rules: p.Family, Host: p.Host, LinkBW: p.LinkBW, LinkSource: p.LinkSource,
		GraphCapture: p.GraphCapture, Align: p.Align, Overheads: p.Overheads, Costs: p.Costs, NPUOps: []string{}}
	if p.NPU != nil {
		c := *p.NPU
		f.NPU = &c
	}
	if p.Interconnect != nil {
		ic := *p.Interconnect
		f.Interconnect = &ic
	}
	for _, op := range p.Ops() {
		f.NPUOps = append(f.NPUOps, string(op))
	}
	for _, l := range p.limits {
		f.CallLimits = append(f.CallLimits, l.Op+" "+l.Arg+": "+l.Source)
	}
	return f
}

// LoadFile parses a profile written as File JSON (ParseFile) into a
// fresh rule set (NewRules: the built-in rules, its own additions) and
// registers it there under its own name, so that a compile with those
// rules finds it.
func LoadFile(data []byte) (*Rules, *Profile, error) {
	rules := NewRules()
	p, err := ParseFile(data, rules)
	if err != nil {
		return nil, nil, err
	}
	if err := rules.RegisterTarget(p); err != nil {
		return nil, nil, err
	}
	return rules, p, nil
}

// ParseFile reads a profile written as File JSON (one object, no unknown
// fields). The profile decides with rules (nil: DefaultRules). Every error
// names the field at fault.
func ParseFile(data []byte, rules *Rules) (*Profile, error) {
	if rules == nil {
		rules = defaultRules
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("target file: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("target file: more than one JSON value")
	}
	name := strings.TrimSpace(f.Name)
	if name == "" || strings.ContainsAny(name, " \t\n,") || name != strings.ToLower(name) {
		return nil, fmt.Errorf("target file: name %q: want a non-empty lower-case name without spaces or commas", f.Name)
	}
	fam, ok := families[f.Rules]
	if !ok {
		return nil, fmt.Errorf("target file %s: rules %q: want one of %s", name, f.Rules, strings.Join(familyNames(), ", "))
	}
	if fam.npu != (f.NPU != nil) {
		return nil, fmt.Errorf("target file %s: rules %q %s an npu object", name, f.Rules, map[bool]string{true: "needs", false: "takes no"}[fam.npu])
	}
	pos := func(what string, v float64) error {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("target file %s: %s %v: want a positive number", name, what, v)
		}
		return nil
	}
	nonneg := func(what string, v float64) error {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("target file %s: %s %v: want a number ≥ 0", name, what, v)
		}
		return nil
	}
	checks := []error{pos("host.matmul_flops", f.Host.MatmulFLOPS), pos("host.mem_bw", f.Host.MemBW)}
	if f.NPU != nil {
		checks = append(checks, pos("npu.matmul_flops", f.NPU.MatmulFLOPS), pos("npu.mem_bw", f.NPU.MemBW), pos("link_bw", f.LinkBW),
			nonneg("npu.mem_bytes", float64(f.NPU.MemBytes)))
	}
	o, c := f.Overheads, f.Costs
	type field struct {
		what string
		v    float64
	}
	for _, x := range []field{{"overheads.launch_us", o.LaunchUS}, {"overheads.wq_launch_us", o.WQLaunchUS}, {"overheads.task_us", o.TaskUS},
		{"overheads.graph_launch_us", o.GraphLaunchUS}, {"overheads.copy_us", o.CopyUS}, {"overheads.cpu_op_us", o.CPUOpUS},
		{"costs.stream_eff", c.StreamEff}, {"costs.vector_eff", c.VectorEff}, {"costs.cube_eff", c.CubeEff}, {"costs.cube_half_gflop", c.CubeHalfGFLOP},
		{"costs.wq_cube_eff", c.WQCubeEff}, {"costs.antiquant_gelem_s", c.AntiquantGElemS}, {"costs.wq_matmul_gelem_s", c.WQMatmulGElemS}} {
		checks = append(checks, nonneg(x.what, x.v))
	}
	for _, x := range []field{{"costs.stream_eff", c.StreamEff}, {"costs.vector_eff", c.VectorEff}, {"costs.cube_eff", c.CubeEff}, {"costs.wq_cube_eff", c.WQCubeEff}} {
		if x.v > 1 {
			checks = append(checks, fmt.Errorf("target file %s: %s %v: an efficiency is at most 1", name, x.what, x.v))
		}
	}
	if f.Align <= 0 || f.Align > 1<<30 || f.Align&(f.Align-1) != 0 {
		checks = append(checks, fmt.Errorf("target file %s: align %d: want a power of two up to 2^30", name, f.Align))
	}
	if ic := f.Interconnect; ic != nil {
		checks = append(checks, pos("interconnect.link_bw", ic.LinkBW), pos("interconnect.reduce_bw", ic.ReduceBW), nonneg("interconnect.step_us", ic.StepUS))
		if ic.Algorithm != Mesh && ic.Algorithm != Ring {
			checks = append(checks, fmt.Errorf("target file %s: interconnect.algorithm %q: want mesh or ring", name, ic.Algorithm))
		}
		if ic.MaxRanks < 1 || ic.MaxRanks > 1<<16 {
			checks = append(checks, fmt.Errorf("target file %s: interconnect.max_ranks %d: want 1..65536", name, ic.MaxRanks))
		}
	}
	for _, err := range checks {
		if err != nil {
			return nil, err
		}
	}
	p := &Profile{Name: name, Description: f.Description, Host: f.Host, LinkBW: f.LinkBW, LinkSource: f.LinkSource, GraphCapture: f.GraphCapture,
		Align: f.Align, Overheads: f.Overheads, Costs: f.Costs, Family: f.Rules, rules: rules, gate: fam.gate, limits: fam.limits}
	if f.NPU != nil {
		chip := *f.NPU
		p.NPU = &chip
		p.only = map[ir.Op]bool{}
		for _, op := range f.NPUOps {
			r, ok := rules.Lookup(ir.Op(op))
			if !ok || r.NPU == nil {
				return nil, fmt.Errorf("target file %s: npu_ops: op %q has no NPU rule", name, op)
			}
			p.only[ir.Op(op)] = true
		}
	}
	if f.Interconnect != nil {
		ic := *f.Interconnect
		p.Interconnect = &ic
	}
	return p, nil
}

func familyNames() []string {
	out := make([]string, 0, len(families))
	for n := range families {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// clone is a copy of p that shares nothing mutable with it.
func (p *Profile) clone() *Profile {
	c := *p
	if p.NPU != nil {
		chip := *p.NPU
		c.NPU = &chip
	}
	if p.Interconnect != nil {
		ic := *p.Interconnect
		c.Interconnect = &ic
	}
	return &c
}
