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
	"os"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/cli"
)

func main() { os.Exit(cli.Main(irtool.DefaultContext(), os.Args[1:])) }
