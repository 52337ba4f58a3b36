package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/gguf"
)

// command is one irtool subcommand. Each lives in its own file and
// registers itself from init.
type command struct {
	Name    string // what follows "irtool"
	Summary string // one line for the command list
	Usage   string // full help: synopsis line, then a description
	// Run executes the command with the arguments after its name and
	// returns the exit status (0 ok, 1 failure, 2 usage error). It must
	// declare all its flags and call parseArgs before doing anything else:
	// "irtool help", -h and docs/CLI.md's flag tables take the flags from
	// that FlagSet (flagSetOf, flags_doc.go).
	//
	// ctx holds the registries the command resolves names in: ops,
	// kernels, passes, target rules and planner strategies
	// (irtool.DefaultContext() for the irtool binary).
	Run func(ctx *irtool.Context, args []string, stdout, stderr io.Writer) int
	// Flags, if set, declares the command's flags on fs so that
	// "irtool help NAME" can list them. Optional.
	Flags func(fs *flag.FlagSet)
}

// commands holds every registered command by name.
var commands = map[string]*command{}

// canonicalOrder is the order of "irtool help"; commands not listed follow
// alphabetically.
var canonicalOrder = []string{"inspect", "tokenize", "compile", "run", "plan", "viz", "passes"}

// register adds a command; it panics on a duplicate or incomplete entry,
// which is a programming error caught by any test run.
func register(c *command) {
	if c.Name == "" || c.Run == nil {
		panic("irtool: register: command without a name or Run")
	}
	if _, dup := commands[c.Name]; dup {
		panic("irtool: register: duplicate command " + c.Name)
	}
	commands[c.Name] = c
}

// sortedCommands returns the registered commands in help order.
func sortedCommands() []*command {
	rank := func(name string) int {
		if i := slices.Index(canonicalOrder, name); i >= 0 {
			return i
		}
		return len(canonicalOrder)
	}
	out := make([]*command, 0, len(commands))
	for _, c := range commands {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *command) int {
		if ra, rb := rank(a.Name), rank(b.Name); ra != rb {
			return ra - rb
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

func printUsage(w io.Writer) {
	fmt.Fprint(w, `irtool turns GGUF models into compiled, replayable programs and shows each stage.

Usage:
  irtool COMMAND [ARGS]
  irtool help [COMMAND]

Commands:
`)
	width := 0
	for _, c := range sortedCommands() {
		width = max(width, len(c.Name))
	}
	for _, c := range sortedCommands() {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.Name, c.Summary)
	}
	fmt.Fprint(w, `
Flags and the model path may come in any order. MODEL defaults to the
stories260K model embedded in the binary. "irtool help COMMAND" describes a
command.
`)
}

// printCommandHelp writes a command's usage and its flags with their
// defaults; fs is the command's FlagSet, or nil to obtain it (flagSetOf).
func printCommandHelp(w io.Writer, c *command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: %s\n", strings.TrimSpace(c.Usage))
	if fs == nil {
		fs = flagSetOf(c)
	}
	if fs != nil {
		printFlags(w, fs)
	}
}

func cmdHelp(_ *irtool.Context, args []string, stdout, stderr io.Writer) int {
	switch len(args) {
	case 0:
		printUsage(stdout)
		return 0
	case 1:
		c, ok := commands[args[0]]
		if !ok {
			fmt.Fprintf(stderr, "irtool help: unknown command %q\n\n", args[0])
			printUsage(stderr)
			return 2
		}
		printCommandHelp(stdout, c, nil)
		return 0
	}
	fmt.Fprintln(stderr, "usage: irtool help [COMMAND]")
	return 2
}

// parseArgs parses args with fs, accepting flags and positional arguments
// in any order (the flag package alone stops at the first positional), and
// returns the positionals in order. Everything after "--" is positional.
// With -h or --help it prints the command's help to fs.Output() and returns
// flag.ErrHelp.
//
// It also declares llama.cpp's spellings where the meaning is the same:
// -m/--model for the MODEL argument of the commands that take one (given,
// it comes before the positionals), -c/--ctx-size for --ctx and -t for
// --threads.
//
// A flag error prints one line and the hint "irtool help CMD", not the
// whole help; -h prints the help.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	model := declareCommonFlags(fs)
	if probed(fs, args) {
		return nil, errProbe
	}
	out := fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard) // the error is printed below, in one line
	defer fs.SetOutput(out)
	pos, err := parseAll(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		if c, ok := commands[fs.Name()]; ok {
			printCommandHelp(out, c, fs)
		}
		return nil, err
	case err != nil:
		fmt.Fprintf(out, "irtool %s: %v\nrun \"irtool help %s\" for the flags\n", fs.Name(), err, fs.Name())
		return nil, err
	}
	if model != nil && *model != "" {
		pos = append([]string{*model}, pos...)
	}
	return pos, nil
}

// modelCommands are the commands whose first positional argument is a
// model file: -m/--model gives it too.
var modelCommands = []string{"inspect", "tokenize", "ir", "compile", "run", "bench", "viz", "passes", "plan"}

// defaultCtx is the KV cache size (--ctx) of every command that builds a
// model's graph (run, compile, viz and ir) when --ctx is not given:
// llama.cpp's default n_ctx (common/common.h), capped by the model's
// training context (resolveCtx; docs/CLI.md).
const defaultCtx = 4096

// ctxGiven reports whether --ctx (or -c, --ctx-size) is on fs's command
// line.
func ctxGiven(fs *flag.FlagSet) bool {
	given := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "ctx" || f.Name == "c" || f.Name == "ctx-size" {
			given = true
		}
	})
	return given
}

// resolveCtx returns the KV cache size of --ctx value ctx for a model
// trained on nCtxTrain positions (its context_length): 0 means nCtxTrain;
// the default (given false) is defaultCtx, capped by nCtxTrain; a given
// value is taken as it is, past nCtxTrain too (ctxWarning says so).
func resolveCtx(ctx int64, given bool, nCtxTrain int64) int64 {
	switch {
	case ctx == 0:
		return nCtxTrain
	case !given && nCtxTrain > 0:
		return min(ctx, nCtxTrain)
	}
	return ctx
}

// ctxWarning is the warning for a KV cache of ctx cells on a model trained
// on nCtxTrain positions, "" when ctx fits; llama.cpp warns the same way
// (llama-context.cpp: "n_ctx_seq > n_ctx_train -- possible training
// context overflow"). It is a warning, not an error, as there.
func ctxWarning(ctx, nCtxTrain int64) string {
	if nCtxTrain <= 0 || ctx <= nCtxTrain {
		return ""
	}
	return fmt.Sprintf("warning: -c %d exceeds the model's training context %d (context_length): positions past it were never trained, so output there may degrade", ctx, nCtxTrain)
}

// declareCommonFlags adds llama.cpp's spellings to fs (see parseArgs) and
// returns --model's value, or nil for a command without a model argument.
func declareCommonFlags(fs *flag.FlagSet) *string {
	alias := func(name string, alts ...string) {
		f := fs.Lookup(name)
		if f == nil {
			return
		}
		for _, a := range alts {
			if fs.Lookup(a) == nil {
				fs.Var(f.Value, a, "the same as --"+name)
			}
		}
	}
	alias("ctx", "ctx-size", "c")
	alias("threads", "t")
	if !slices.Contains(modelCommands, fs.Name()) || fs.Lookup("model") != nil {
		return nil
	}
	model := fs.String("model", "", "the model `FILE` (GGUF or IR text), as the positional MODEL")
	alias("model", "m")
	return model
}

// parseAll parses flags and positionals in any order (see parseArgs).
func parseAll(fs *flag.FlagSet, args []string) ([]string, error) {
	pos := []string{}
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" && !takesValue(fs, args, used-1) {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// takesValue reports whether args[i] is the value of the flag before it
// ("-p --" gives -p the value "--", which must not end flag parsing).
func takesValue(fs *flag.FlagSet, args []string, i int) bool {
	if i == 0 {
		return false
	}
	prev := args[i-1]
	if !strings.HasPrefix(prev, "-") || prev == "-" || prev == "--" || strings.Contains(prev, "=") {
		return false
	}
	f := fs.Lookup(strings.TrimLeft(prev, "-"))
	if f == nil {
		return false
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return false
	}
	return true
}

// openModel opens the GGUF file at path, or parses the embedded stories260K
// model when path is "". The caller closes the file.
func openModel(path string) (*gguf.File, error) {
	if path == "" {
		return gguf.Parse(irtool.EmbeddedModel, irtool.EmbeddedModelName)
	}
	return gguf.Open(path)
}

// usageError reports a command-line mistake: the command prints it with
// its usage line and exits 2.
func usageError(stderr io.Writer, c string, format string, args ...any) int {
	fmt.Fprintf(stderr, "irtool %s: %s\n", c, fmt.Sprintf(format, args...))
	if cmd, ok := commands[c]; ok {
		synopsis, _, _ := strings.Cut(strings.TrimSpace(cmd.Usage), "\n")
		fmt.Fprintf(stderr, "usage: %s\n", synopsis)
	}
	return 2
}

// flagError handles an error from parseArgs: 0 for -h (help was printed),
// otherwise 2 (the flag package has already printed the problem).
func flagError(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}
