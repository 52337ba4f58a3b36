package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testref"
)

func runTokenize(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(append([]string{"tokenize"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestTokenizeCommand(t *testing.T) {
	model := testref.Testdata("stories260K.gguf")
	dir := t.TempDir()
	withNL := filepath.Join(dir, "prompt.txt")
	if err := os.WriteFile(withNL, []byte("Hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("ok \xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		out  string
	}{
		// llama.cpp's prompt tokens for every reference run.
		{"embedded model", []string{"Once upon a time"},
			"     1 \"<s>\"\n   403 \" Once\"\n   407 \" upon\"\n   261 \" a\"\n   378 \" time\"\n"},
		{"model file, flags after", []string{model, "Once upon a time", "--no-special"},
			"   403 \" Once\"\n   407 \" upon\"\n   261 \" a\"\n   378 \" time\"\n"},
		{"json", []string{"--json", model, "Once upon a time"},
			"{\n  \"tokens\": [\n    1,\n    403,\n    407,\n    261,\n    378\n  ],\n  \"pieces\": [\n    \"<s>\",\n    \" Once\",\n    \" upon\",\n    \" a\",\n    \" time\"\n  ]\n}\n"},
		// "Hello" is 346 306 414 and "\n" is <0x0A> = 13 (llama.cpp's
		// stories260K.tokenize.json); the trailing newline is kept.
		{"file keeps trailing newline", []string{"--file", withNL, "--no-special"},
			"   346 \" He\"\n   306 \"ll\"\n   414 \"o\"\n    13 \"\\n\"\n"},
		{"special tokens parsed", []string{model, "<s>x</s>"},
			"     1 \"<s>\"\n     1 \"<s>\"\n   410 \" \"\n   444 \"x\"\n     2 \"</s>\"\n"},
		{"empty text", []string{model, ""}, "     1 \"<s>\"\n"},
	} {
		code, out, errs := runTokenize(t, c.args...)
		if code != 0 {
			t.Errorf("%s: exit %d, stderr %q", c.name, code, errs)
			continue
		}
		if d := cmp.Diff(c.out, out); d != "" {
			t.Errorf("%s: (-want +got)\n%s", c.name, d)
		}
	}

	for _, c := range []struct {
		name string
		args []string
		code int
		err  string
	}{
		{"no text", nil, 2, "usage"},
		{"too many", []string{"a", "b", "c"}, 2, "usage"},
		{"file and text", []string{"--file", withNL, model, "text"}, 2, "at most a MODEL"},
		{"missing file", []string{"--file", filepath.Join(dir, "nope.txt")}, 1, "nope.txt"},
		{"invalid UTF-8", []string{"--file", bad}, 1, "not valid UTF-8 (byte 0xFF at offset 3)"},
		{"missing model", []string{filepath.Join(dir, "nope.gguf"), "hi"}, 1, "nope.gguf"},
	} {
		code, _, errs := runTokenize(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.err) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q", c.name, code, errs, c.code, c.err)
		}
	}
}

// TestTokenizeVocabOnly: a vocabulary-only GGUF file (no tensors), as
// llama.cpp ships for its tokenizer tests.
func TestTokenizeVocabOnly(t *testing.T) {
	path := testref.Shared(t, "vocab/ggml-vocab-llama-spm.gguf")
	code, out, errs := runTokenize(t, "--json", path, "Hello world")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var got struct {
		Tokens []int32
		Pieces []string
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	// BOS, then llama.cpp's ids for "Hello world" (ggml-vocab-llama-spm.gguf.out).
	if d := cmp.Diff([]int32{1, 15043, 3186}, got.Tokens); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
	if d := cmp.Diff([]string{"<s>", " Hello", " world"}, got.Pieces); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
}

// TestTokenizeBadVocab: a file whose vocabulary is empty is refused with a
// clear error.
func TestTokenizeBadVocab(t *testing.T) {
	w := gguf.NewWriter()
	w.SetKV("general.architecture", gguf.Str("llama"))
	w.SetKV("tokenizer.ggml.model", gguf.Str("llama"))
	w.SetKV("tokenizer.ggml.tokens", gguf.Strs([]string{}))
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "empty.gguf")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runTokenize(t, path, "hi")
	if code != 1 || !strings.Contains(errs, "empty vocabulary") || !strings.Contains(errs, path) {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
}
