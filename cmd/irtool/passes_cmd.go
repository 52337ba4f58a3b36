package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/passes"
)

func init() {
	register(&command{
		Name:    "passes",
		Summary: "list the optimisation passes, their rewrite rules and the fused ops",
		Usage: `irtool passes [--json]

Lists every registered pass in registration order: whether it is in the
default pipeline, whether it is required, what it does and the rewrite rules
it applies (name, pattern, description); then the ordering constraints
between passes and the ops the passes introduce (fused ops, concat). --passes of compile
and run takes a comma-separated list of these names, "default" or "none".`,
		Run: cmdPasses,
		Flags: func(fs *flag.FlagSet) {
			fs.Bool("json", false, "print one JSON object (docs/CLI.md)")
		},
	})
}

type passesListJSON struct {
	Default     []string         `json:"default"`
	Passes      []passInfoJSON   `json:"passes"`
	Constraints []constraintJSON `json:"constraints"`
	FusedOps    []fusedOpJSON    `json:"fused_ops"`
}

type passInfoJSON struct {
	Name      string     `json:"name"`
	InDefault bool       `json:"in_default"`
	Required  bool       `json:"required"`
	Doc       string     `json:"doc"`
	Rules     []ruleJSON `json:"rules"`
}

type ruleJSON struct {
	Name    string `json:"name"`
	Pattern string `json:"pattern"`
	Doc     string `json:"doc"`
}

type constraintJSON struct {
	Before string `json:"before"`
	After  string `json:"after"`
	Why    string `json:"why"`
}

type fusedOpJSON struct {
	Op  string `json:"op"`
	Doc string `json:"doc"`
}

func passesList() passesListJSON {
	def := passes.Default()
	out := passesListJSON{Default: def.Names(), Passes: []passInfoJSON{}, Constraints: []constraintJSON{}, FusedOps: []fusedOpJSON{}}
	for _, p := range passes.All() {
		pi := passInfoJSON{Name: p.Name, InDefault: def.Contains(p.Name), Required: p.Required, Doc: p.Doc, Rules: []ruleJSON{}}
		for _, r := range p.Rules {
			pi.Rules = append(pi.Rules, ruleJSON{Name: r.Name, Pattern: r.Pattern.String(), Doc: r.Doc})
		}
		out.Passes = append(out.Passes, pi)
	}
	for _, c := range passes.Constraints() {
		out.Constraints = append(out.Constraints, constraintJSON{Before: c.Before, After: c.After, Why: c.Why})
	}
	for _, op := range passes.Ops() {
		if info, ok := ir.Lookup(op); ok {
			out.FusedOps = append(out.FusedOps, fusedOpJSON{Op: string(op), Doc: info.Doc})
		}
	}
	return out
}

func cmdPasses(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("passes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print one JSON object (docs/CLI.md)")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagError(err)
	}
	if len(pos) > 0 {
		return usageError(stderr, "passes", "takes no arguments, got %q", pos)
	}
	list := passesList()
	if *asJSON {
		if err := writeJSON(stdout, list); err != nil {
			fmt.Fprintf(stderr, "irtool passes: %v\n", err)
			return 1
		}
		return 0
	}
	fmt.Fprintf(stdout, "default pipeline: %s\n\n", strings.Join(list.Default, ","))
	for _, p := range list.Passes {
		var tags []string
		if p.InDefault {
			tags = append(tags, "default")
		}
		if p.Required {
			tags = append(tags, "required")
		}
		tag := ""
		if len(tags) > 0 {
			tag = " [" + strings.Join(tags, ", ") + "]"
		}
		fmt.Fprintf(stdout, "%s%s\n    %s\n", p.Name, tag, p.Doc)
		for _, r := range p.Rules {
			fmt.Fprintf(stdout, "    rule %s: %s\n        pattern %s\n", r.Name, r.Doc, r.Pattern)
		}
	}
	fmt.Fprintln(stdout, "\nordering constraints:")
	for _, c := range list.Constraints {
		fmt.Fprintf(stdout, "    %s before %s: %s\n", c.Before, c.After, c.Why)
	}
	fmt.Fprintln(stdout, "\nops the passes introduce:")
	for _, o := range list.FusedOps {
		fmt.Fprintf(stdout, "    %s\n", o.Doc)
	}
	return 0
}
