package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/irtool/irtool"
)

// A command's flags are declared once, in its Run function, on the FlagSet
// it hands to parseArgs. "irtool help COMMAND", "irtool COMMAND -h" and the
// flag tables of docs/CLI.md (TestCLIDocFlags) are all made from that one
// FlagSet, so they cannot drift apart: flagSetOf obtains it by running the
// command with a probe argument that parseArgs recognises and answers by
// handing the FlagSet back instead of parsing.

// probeArg is the argument that makes parseArgs return the FlagSet. It
// contains a NUL byte, so no command line can spell it.
const probeArg = "\x00irtool:flags"

// errProbe is what parseArgs returns to a command run by flagSetOf.
var errProbe = errors.New("irtool: flag probe")

var probe struct {
	sync.Mutex
	fs *flag.FlagSet
}

// probed reports whether args is the probe; if so it records fs.
func probed(fs *flag.FlagSet, args []string) bool {
	if len(args) != 1 || args[0] != probeArg {
		return false
	}
	probe.fs = fs
	return true
}

// flagSetOf returns the flags command c declares: those its Run function
// hands to parseArgs, or, for a command that never calls parseArgs, those
// of its Flags field (nil when it has neither).
func flagSetOf(c *command) *flag.FlagSet {
	probe.Lock()
	defer probe.Unlock()
	probe.fs = nil
	func() {
		defer func() { _ = recover() }()
		c.Run(irtool.DefaultContext(), []string{probeArg}, io.Discard, io.Discard)
	}()
	if fs := probe.fs; fs != nil {
		probe.fs = nil
		return fs
	}
	if c.Flags != nil {
		fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
		c.Flags(fs)
		return fs
	}
	return nil
}

// flagRow is one flag as help and docs show it.
type flagRow struct {
	Name    string // without dashes
	Arg     string // the value's placeholder ("N", "FILE"); "" for a bool flag
	Default string // "" when none, "off"/"on" for bools
	Usage   string // the meaning, without a "(default: ...)" suffix
}

// defaultSuffix matches a usage string's trailing "(default: TEXT)", which
// documents a default computed at run time (the flag's zero value then
// means "not set").
var defaultSuffix = regexp.MustCompile(`\s*\(default: ([^()]*(?:\([^()]*\)[^()]*)*)\)$`)

// flagRows lists fs's flags in lexical order (the flag package's).
func flagRows(fs *flag.FlagSet) []flagRow {
	var rows []flagRow
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		r := flagRow{Name: f.Name, Usage: usage}
		isBool := false
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			isBool = true
		}
		switch {
		case isBool:
		case strings.Contains(f.Usage, "`"):
			r.Arg = name
		case name == "int" || name == "uint":
			r.Arg = "N"
		case name == "duration":
			r.Arg = "D"
		case name == "float":
			r.Arg = "X"
		default:
			r.Arg = strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		}
		if m := defaultSuffix.FindStringSubmatch(r.Usage); m != nil {
			r.Default = m[1]
			r.Usage = strings.TrimSpace(r.Usage[:len(r.Usage)-len(m[0])])
		} else {
			switch {
			case isBool && f.DefValue == "false":
				r.Default = "off"
			case isBool && f.DefValue == "true":
				r.Default = "on"
			default:
				r.Default = f.DefValue
			}
		}
		rows = append(rows, r)
	})
	return rows
}

// printFlags writes the flags of fs for "irtool help": one line per flag,
// its placeholder, its meaning and its default.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	rows := flagRows(fs)
	if len(rows) == 0 {
		return
	}
	fmt.Fprint(w, "\nFlags:\n")
	width := 0
	heads := make([]string, len(rows))
	for i, r := range rows {
		heads[i] = "-" + r.Name
		if len(r.Name) > 1 {
			heads[i] = "--" + r.Name
		}
		if r.Arg != "" {
			heads[i] += " " + r.Arg
		}
		width = max(width, len(heads[i]))
	}
	for i, r := range rows {
		line := r.Usage
		if r.Default != "" {
			line += " (default " + r.Default + ")"
		}
		fmt.Fprintf(w, "  %-*s  %s\n", width, heads[i], line)
	}
}

// markdownFlagTable renders fs's flags as the table docs/CLI.md shows for
// each command.
func markdownFlagTable(fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString("| flag | default | meaning |\n| --- | --- | --- |\n")
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, r := range flagRows(fs) {
		head := "-" + r.Name
		if len(r.Name) > 1 {
			head = "--" + r.Name
		}
		if r.Arg != "" {
			head += " " + r.Arg
		}
		def := r.Default
		if def != "" && def != "off" && def != "on" && !strings.Contains(def, " ") {
			def = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", esc(head), esc(def), esc(r.Usage))
	}
	return b.String()
}
