package cli

import (
	"flag"
	"fmt"
	"github.com/irtool/irtool/internal/jsonout"
	"io"
	"strconv"

	"github.com/irtool/irtool"
	"github.com/irtool/irtool/internal/safeio"
	"github.com/irtool/irtool/tokenizer"
)

func init() {
	register(&command{
		Name:    "tokenize",
		Summary: "tokenise text with a model's vocabulary, exactly as llama.cpp does",
		Usage: `irtool tokenize [MODEL.gguf] (TEXT | --file F) [--no-special] [--json]

Tokenises TEXT (or the exact bytes of file F) with the vocabulary stored in
MODEL's metadata (tokenizer.ggml.*); vocabulary-only GGUF files work too.
Without MODEL the embedded stories260K model is used. With one positional
argument and no --file, that argument is the TEXT.

By default BOS/EOS are added as the vocabulary asks and special tokens in
the text (such as <s>) are parsed (llama.cpp's add_special = true,
parse_special = true); --no-special turns both off.

Output: one line per token, its id and its piece quoted; with --json,
{"tokens": [ids], "pieces": [strings]}.`,
		Run:   cmdTokenize,
		Flags: func(fs *flag.FlagSet) { declareTokenizeFlags(fs) },
	})
}

// maxTextBytes bounds a text input read from a file (tokenize --file): far
// more than any model's context holds, small enough to read into memory.
const maxTextBytes = 8 << 20

type tokenizeFlags struct {
	file              *string
	noSpecial, asJSON *bool
}

func declareTokenizeFlags(fs *flag.FlagSet) tokenizeFlags {
	return tokenizeFlags{
		file:      fs.String("file", "", "tokenise the bytes of file `F` (exactly; a trailing newline is kept)"),
		noSpecial: fs.Bool("no-special", false, "do not add BOS/EOS and do not parse special tokens such as <s> in the text (llama.cpp's add_special = parse_special = false)"),
		asJSON:    fs.Bool("json", false, "print one JSON object"),
	}
}

// tokenizeOutput is the --json output; the field order is fixed.
type tokenizeOutput struct {
	Tokens []int32  `json:"tokens"`
	Pieces []string `json:"pieces"`
}

func cmdTokenize(_ *irtool.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fl := declareTokenizeFlags(fs)
	file, noSpecial, asJSON := fl.file, fl.noSpecial, fl.asJSON
	pos, err := parseArgs(fs, args)
	if err != nil {
		return flagError(err)
	}

	var model, text string
	switch {
	case *file != "" && len(pos) == 0:
	case *file != "" && len(pos) == 1:
		model = pos[0]
	case *file != "":
		fmt.Fprintf(stderr, "irtool tokenize: with --file, give at most a MODEL argument (got %d arguments)\n", len(pos))
		return 2
	case len(pos) == 1:
		text = pos[0]
	case len(pos) == 2:
		model, text = pos[0], pos[1]
	default:
		fmt.Fprintln(stderr, "irtool tokenize: usage: irtool tokenize [MODEL.gguf] (TEXT | --file F) [--no-special] [--json]")
		return 2
	}
	if *file != "" {
		data, err := safeio.ReadFile(*file, maxTextBytes)
		if err != nil {
			fmt.Fprintf(stderr, "irtool tokenize: %v\n", err)
			return 1
		}
		text = string(data)
	}

	f, err := openModel(model)
	if err != nil {
		fmt.Fprintf(stderr, "irtool tokenize: %v\n", err)
		return 1
	}
	defer f.Close()
	tk, err := tokenizer.FromGGUF(f)
	if err != nil {
		fmt.Fprintf(stderr, "irtool tokenize: %s: %v\n", modelName(model), err)
		return 1
	}
	for _, w := range tk.Warnings() {
		fmt.Fprintf(stderr, "irtool tokenize: %s: warning: %s\n", modelName(model), w)
	}
	special := !*noSpecial
	ids, err := tk.Encode(text, tokenizer.EncodeOptions{AddSpecial: special, ParseSpecial: special})
	if err != nil {
		what := "TEXT"
		if *file != "" {
			what = *file
		}
		fmt.Fprintf(stderr, "irtool tokenize: %s: %v\n", what, err)
		return 1
	}

	out := tokenizeOutput{Tokens: ids, Pieces: make([]string, len(ids))}
	for i, id := range ids {
		out.Pieces[i] = string(tk.Piece(id))
	}
	if *asJSON {
		if err := jsonout.Write(stdout, out); err != nil {
			fmt.Fprintf(stderr, "irtool tokenize: %v\n", err)
			return 1
		}
		return 0
	}
	for i, id := range ids {
		if _, err := fmt.Fprintf(stdout, "%6d %s\n", id, strconv.Quote(out.Pieces[i])); err != nil {
			fmt.Fprintf(stderr, "irtool tokenize: %v\n", err)
			return 1
		}
	}
	return 0
}
