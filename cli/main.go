// Command irtool compiles GGUF models into replayable programs and shows
// every stage on the way: the file (inspect), the tokenizer (tokenize), the
// IR and its passes (compile, passes, viz), the memory plan (plan) and the
// result of running it (run).
//
// Usage:
//
//	irtool COMMAND [ARGS]
//	irtool help [COMMAND]
//
// Flags and the model path may come in any order; the model defaults to
// stories260K, embedded in the binary. "irtool help" lists the commands.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/irtool/irtool"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

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
	// command that succeeded but whose output was lost fails.
	out := &checkedWriter{w: stdout}
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
