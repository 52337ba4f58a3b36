package cli

import (
	"flag"
	"fmt"
	"github.com/irtool/irtool/internal/jsonout"
	"io"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/gguf"
)

func init() {
	register(&command{
		Name:    "inspect",
		Summary: "show a GGUF file's header, metadata and tensors",
		Usage: `irtool inspect [MODEL.gguf] [--json]

Reads MODEL (default: the embedded stories260K) and prints its GGUF version,
data layout, architecture, hyper-parameters, tokenizer and a table of every
tensor with its type, shape and size. Tensor data is not read.

--json prints one object, in file order:
  {"version", "alignment", "data_offset", "n_kv", "n_tensors",
   "kv": [{"key", "type", "value"}                      scalars
        | {"key", "type": "arr", "arr_type", "arr_n", "value"?}],   arrays
   "tensors": [{"name", "type", "ne", "offset", "size"}]}
Types are spelled as llama.cpp's gguf.cpp spells them ("u32", "f32", "str",
"bool", "arr", ...); "value" is given for arrays of at most 16 elements.
Tensor types are ggml names ("f32", "q4_0", "q4_K"), ne has 4 dimensions in
ggml order and offset is relative to data_offset. Non-finite floats are the
strings "NaN", "+Inf" and "-Inf".`,
		Run:   cmdInspect,
		Flags: inspectFlags,
	})
}

type inspectOptions struct{ json bool }

func inspectFlags(fs *flag.FlagSet) { inspectFlagsInto(fs, &inspectOptions{}) }

func inspectFlagsInto(fs *flag.FlagSet, o *inspectOptions) {
	fs.BoolVar(&o.json, "json", false, "print the structure as JSON")
}

func cmdInspect(_ *irtool.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o inspectOptions
	inspectFlagsInto(fs, &o)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagError(err)
	}
	if len(pos) > 1 {
		return usageError(stderr, "inspect", "want at most one MODEL argument, got %d", len(pos))
	}
	path := ""
	if len(pos) == 1 {
		path = pos[0]
	}
	f, err := openModel(path)
	if err != nil {
		fmt.Fprintf(stderr, "irtool inspect: %v\n", err)
		return 1
	}
	defer f.Close()
	if o.json {
		err = jsonout.Write(stdout, gguf.Describe(f))
	} else {
		err = gguf.WriteSummary(stdout, f)
	}
	if err != nil {
		fmt.Fprintf(stderr, "irtool inspect: %v\n", err)
		return 1
	}
	return 0
}
