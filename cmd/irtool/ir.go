package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
)

func init() {
	register(&command{
		Name:    "ir",
		Summary: "print a model's graph in the IR text format",
		Usage: `irtool ir [MODEL.gguf] [--ctx N] [--kv-type f16|f32] [--kv-write set_rows|cpy]
          [--bind n_tokens=7,n_kv=32,...] [--table]

Builds the graph of one forward step of MODEL (default: the embedded
stories260K) and prints it as IR text, which "irtool" and ir.Parse read back.
The graph keeps its symbolic dims (n_tokens, n_kv, n_outputs) unless --bind
specialises them. --table prints the FX-style table instead.`,
		Run: cmdIR,
	})
}

func cmdIR(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ir", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ctx := fs.Int64("ctx", 256, "KV cache cells (n_ctx)")
	kvType := fs.String("kv-type", "f16", "KV cache element type: f16 or f32")
	kvWrite := fs.String("kv-write", "set_rows", "KV cache write: set_rows or cpy")
	bind := fs.String("bind", "", "symbol values, e.g. n_tokens=1,n_kv=32,n_outputs=1")
	table := fs.Bool("table", false, "print the FX-style table")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagError(err)
	}
	if len(pos) > 1 {
		return usageError(stderr, "ir", "want at most one model path, got %q", pos)
	}
	path := ""
	if len(pos) == 1 {
		path = pos[0]
	}
	opts, err := modelOptions(*ctx, *kvType, *kvWrite)
	if err != nil {
		return usageError(stderr, "ir", "%v", err)
	}
	f, err := openModel(path)
	if err != nil {
		fmt.Fprintf(stderr, "irtool ir: %v\n", err)
		return 1
	}
	defer f.Close()
	m, err := models.Build(f, opts)
	if err != nil {
		fmt.Fprintf(stderr, "irtool ir: %s: %v\n", modelName(path), err)
		return 1
	}
	g := m.Graph
	if *bind != "" {
		b, err := ir.ParseBindings(*bind)
		if err != nil {
			return usageError(stderr, "ir", "--bind: %v", err)
		}
		if g, err = g.Specialize(b); err != nil {
			fmt.Fprintf(stderr, "irtool ir: %v\n", err)
			return 1
		}
	}
	if *table {
		err = ir.PrintTable(stdout, g)
	} else {
		err = ir.Print(stdout, g)
	}
	if err != nil {
		fmt.Fprintf(stderr, "irtool ir: %v\n", err)
		return 1
	}
	return 0
}
