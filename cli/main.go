// Package cli is the irtool command line: every command (inspect,
// tokenize, ir, compile, passes, run, bench, plan, viz, doctor, version)
// run with the registries of an irtool.Context. cmd/irtool is
// cli.Main(irtool.DefaultContext(), os.Args[1:]); a program of your own
// registers ops, kernels, passes and strategies in a Context of its own and
// calls Main with it (README.md, "Your own irtool"; docs/CLI.md).
package cli

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/internal/safeio"
)

// Main runs one irtool invocation, args as os.Args[1:] ("compile",
// "--passes", "my-pass,default", ...), with the registries of ctx: every
// command resolves pass, op, kernel, strategy and target-rule names in it,
// so what a program registers in its Context is what its irtool runs. It
// writes to os.Stdout and os.Stderr and returns the exit status: 0 on
// success, 1 when the command failed, 2 for a usage error.
func Main(ctx *irtool.Context, args []string) int { return Run(ctx, args, os.Stdout, os.Stderr) }

// Run is Main writing to stdout and stderr.
func Run(ctx *irtool.Context, args []string, stdout, stderr io.Writer) int {
	if ctx == nil {
		ctx = irtool.DefaultContext()
	}
	return runIn(ctx, args, stdout, stderr)
}

// run executes one irtool invocation with the package defaults
// (irtool.DefaultContext).
func run(args []string, stdout, stderr io.Writer) int {
	return runIn(irtool.DefaultContext(), args, stdout, stderr)
}

// runIn executes one irtool invocation with the registries of ctx and
// returns its exit status: 0 on success, 1 when the command failed, 2 for
// a usage error.
func runIn(ctx *irtool.Context, args []string, stdout, stderr io.Writer) (code int) {
	// Every write to stdout is checked here, once for all commands: a
	// command that succeeded but whose output was lost fails. Files are
	// written with internal/safeio (a temporary file renamed into place on
	// success).
	out := &safeio.CheckedWriter{W: stdout}
	defer func() {
		if err := out.Err(); err != nil && code == 0 {
			fmt.Fprintf(stderr, "irtool: writing standard output: %v\n", err)
			code = 1
		}
	}()
	return runChecked(ctx, args, out, stderr)
}

func runChecked(ctx *irtool.Context, args []string, stdout, stderr io.Writer) (code int) {
	if len(args) == 0 {
		printUsage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		return cmdHelp(ctx, args[1:], stdout, stderr)
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "irtool: unknown command %q\n\n", name)
		printUsage(stderr)
		return 2
	}
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "irtool %s: internal error: %v\n%s", name, r, debug.Stack())
			code = 1
		}
	}()
	return c.Run(ctx, args[1:], stdout, stderr)
}
