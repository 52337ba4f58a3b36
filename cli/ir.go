package cli

import (
	"bytes"
	"flag"
	"fmt"
	"github.com/irtool/irtool/models/modelfile"
	"io"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/internal/safeio"
	"github.com/irtool/irtool/ir"
	"github.com/irtool/irtool/models"
)

func init() {
	register(&command{
		Name:    "ir",
		Summary: "print a model's graph in the IR text format",
		Usage: `irtool ir [MODEL.gguf|FILE.ir] [--ctx N] [--kv-type f16|f32] [--kv-write set_rows|cpy]
          [--bind n_tokens=7,n_kv=32,...] [--emit text|table] [-o FILE.ir]

Builds the graph of one forward step of MODEL (default: the embedded
stories260K) and prints it as IR text, which every irtool command and
ir.Parse read back. The text names the GGUF file that holds the weights
(meta weights, relative to the directory of -o FILE), so "irtool compile",
"run", "plan", "viz" and "passes" accept the file in place of the model
(docs/IR.md, "Model files in IR text"). Given IR text, it prints it again
in canonical form. The graph keeps its symbolic dims (n_tokens, n_kv,
n_outputs) unless --bind specialises them. --emit table prints the
FX-style table instead.`,
		Run: cmdIR,
	})
}

func cmdIR(reg *irtool.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ir", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ctx := fs.Int64("ctx", defaultCtx, "KV cache cells (n_ctx), capped by the model's context_length unless given; 0: the model's context_length")
	kvType := fs.String("kv-type", "f16", "KV cache element `TYPE`: f16 or f32")
	kvWrite := fs.String("kv-write", "set_rows", "how new K/V rows reach the cache (`MODE`): set_rows (scatter by index into the whole cache; addresses never move) or cpy (llama.cpp c392e50's copy into a view at kv_head)")
	bind := fs.String("bind", "", "bind shape symbols (n_tokens, n_kv, n_outputs, kv_head) to values, e.g. `n_tokens=1,n_kv=32`, and print the static graph")
	emit := fs.String("emit", "text", "the output `FORMAT`: text (the IR text format, docs/IR.md) or table (the FX-style table: id, opcode, name, target, args, attrs, type)")
	table := fs.Bool("table", false, "the same as --emit table")
	out := fs.String("o", "", "write to `FILE` (its directory anchors the weights path) instead of stdout")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagError(err)
	}
	if len(pos) > 1 {
		return usageError(stderr, "ir", "want at most one model path, got %q", pos)
	}
	if *table {
		*emit = "table"
	}
	if *emit != "text" && *emit != "table" {
		return usageError(stderr, "ir", "--emit %q: want text or table", *emit)
	}
	path := ""
	if len(pos) == 1 {
		path = pos[0]
	}
	opts, err := models.ParseOptions(*ctx, *kvType, *kvWrite)
	if err != nil {
		return usageError(stderr, "ir", "%v", err)
	}
	src, err := openSource(reg, path)
	if err != nil {
		fmt.Fprintf(stderr, "irtool ir: %v\n", err)
		return 1
	}
	defer src.Close()
	if err := safeio.CheckPaths(src.inputs(), safeio.Outputs(safeio.Path{Flag: "-o", Path: *out})); err != nil {
		fmt.Fprintf(stderr, "irtool ir: %v\n", err)
		return 1
	}
	if !src.IsIR() && *ctx != 0 {
		hp, err := models.ReadHParams(src.File)
		if err != nil {
			fmt.Fprintf(stderr, "irtool ir: %s: %v\n", modelName(path), err)
			return 1
		}
		opts.NCtx = resolveCtx(*ctx, ctxGiven(fs), hp.NCtxTrain)
		if w := ctxWarning(opts.NCtx, hp.NCtxTrain); w != "" && ctxGiven(fs) {
			fmt.Fprintf(stderr, "irtool ir: %s: %s\n", modelName(path), w)
		}
	}
	def, _ := models.ParseOptions(defaultCtx, "f16", "set_rows")
	if opts, err = src.Options(opts, def); err != nil {
		return usageError(stderr, "ir", "%v", err)
	}
	m, err := src.Build(opts)
	if err != nil {
		fmt.Fprintf(stderr, "irtool ir: %s: %v\n", modelName(path), err)
		return 1
	}
	g := m.Graph
	if model, ok := src.WeightsModel(); ok {
		ref, err := modelfile.WeightsRef(model, *out)
		if err != nil {
			fmt.Fprintf(stderr, "irtool ir: %v\n", err)
			return 1
		}
		g.Meta[modelfile.MetaWeights] = ref
	}
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
	return printIR(g, *emit, *out, stdout, stderr)
}

// printIR prints g as IR text or as the table (emit) to out, or to stdout
// when out is "" or "-".
func printIR(g *ir.Graph, emit, out string, stdout, stderr io.Writer) int {
	var buf bytes.Buffer
	var err error
	if emit == "table" {
		err = ir.PrintTable(&buf, g)
	} else {
		err = ir.Print(&buf, g)
	}
	if err == nil {
		if out == "" || out == "-" {
			_, err = stdout.Write(buf.Bytes())
		} else {
			if err = safeio.WriteFile(out, buf.Bytes()); err == nil {
				wroteFile(stderr, "ir", out, buf.Len())
			}
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "irtool ir: %v\n", err)
		return 1
	}
	return 0
}
