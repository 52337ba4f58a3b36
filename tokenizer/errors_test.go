package tokenizer

import (
	"strings"
	"testing"
)

func TestBadVocab(t *testing.T) {
	byteTokens := func() []string {
		var s []string
		for b := 0; b < 256; b++ {
			s = append(s, string(byteToRune[b]))
		}
		return s
	}
	withMerges := func(m ...string) *Vocab {
		return &Vocab{Model: "gpt2", Pre: "qwen2", Tokens: append(byteTokens(), "ab"), Merges: m}
	}
	for _, c := range []struct {
		name string
		v    *Vocab
		want string
	}{
		{"nil", nil, "nil vocabulary"},
		{"empty vocabulary", &Vocab{Model: "llama"}, "empty vocabulary"},
		{"empty bpe vocabulary", &Vocab{Model: "gpt2", Merges: []string{}}, "empty vocabulary"},
		{"no model", &Vocab{Tokens: []string{"a"}}, "tokenizer.ggml.model is missing"},
		{"unknown model", &Vocab{Model: "bert", Tokens: []string{"a"}}, `unsupported tokenizer model "bert"`},
		{"no vocab model", &Vocab{Model: "none"}, "no vocabulary"},
		{"unknown pre", &Vocab{Model: "gpt2", Pre: "klingon", Tokens: []string{"a"}}, `unsupported pre-tokenizer "klingon"`},
		{"short scores", &Vocab{Model: "llama", Tokens: []string{"a", "b"}, Scores: []float32{0}}, "1 scores for 2 tokens"},
		{"short types", &Vocab{Model: "llama", Tokens: []string{"a", "b"}, Types: []TokenType{1}}, "1 token types for 2 tokens"},
		{"duplicate token", &Vocab{Model: "llama", Tokens: []string{"a", "b", "a"}}, `duplicate token "a" has ids 0 and 2`},
		{"add bos without bos", &Vocab{Model: "gpt2", Tokens: []string{"a", "b", "c"}, Merges: []string{}, AddBOS: Flag(true), BOS: ID(9999)}, "bos_token_id is not set"},
		{"missing merges", &Vocab{Model: "gpt2", Tokens: byteTokens()}, "without merges"},
		{"merge of unknown token", withMerges("a zz"), `merge 0 ("a zz") refers to unknown token "zz"`},
		{"merge without space", withMerges("ab", "b c"), `merge 0 ("ab") is not of the form`},
		{"merge without result", withMerges("a b", "b c"), `merge 1 ("b c") produces "bc", which is not a token`},
	} {
		_, err := New(c.v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestBadInput(t *testing.T) {
	tk := smallSPM(t, map[string]float32{}, []string{"▁a"})
	_, err := tk.Encode("ok \xff bad", EncodeOptions{})
	if err == nil || !strings.Contains(err.Error(), "not valid UTF-8 (byte 0xFF at offset 3)") {
		t.Errorf("invalid UTF-8: error %v", err)
	}
	if _, err := tk.Detokenize([]int32{1, -5}, DetokenizeOptions{}); err == nil || !strings.Contains(err.Error(), "token -5 (position 1)") {
		t.Errorf("bad id: error %v", err)
	}
	if p := tk.Piece(int32(tk.NVocab())); p != nil {
		t.Errorf("Piece(out of range) = %q", p)
	}
	// An SPM vocabulary without byte tokens cannot encode unknown characters.
	v := &Vocab{Model: "llama", Tokens: []string{"<unk>", "<s>", "</s>", "▁"}}
	nb, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nb.Encode("x", EncodeOptions{}); err == nil || !strings.Contains(err.Error(), "no token for byte 0x78") {
		t.Errorf("missing byte token: error %v", err)
	}
}

// TestSpecialIDWarnings: a special token id outside the vocabulary falls
// back to the default as in llama.cpp, but is reported.
func TestSpecialIDWarnings(t *testing.T) {
	bos, eos := int32(900), int32(2)
	tk, err := New(&Vocab{Model: "llama", Tokens: []string{"<unk>", "<s>", "</s>", "a"}, BOS: &bos, EOS: &eos})
	if err != nil {
		t.Fatal(err)
	}
	if tk.BOS() != 1 {
		t.Errorf("BOS %d, want the default 1", tk.BOS())
	}
	w := tk.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "tokenizer.ggml.bos_token_id = 900 is outside the vocabulary of 4 tokens; using the default 1") {
		t.Errorf("warnings %q", w)
	}
	if tk, _ := New(&Vocab{Model: "llama", Tokens: []string{"<unk>", "<s>", "</s>"}, EOS: &eos}); len(tk.Warnings()) != 0 {
		t.Errorf("warnings for a valid vocabulary: %q", tk.Warnings())
	}
}
