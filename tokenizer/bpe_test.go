package tokenizer

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var bpePres = []string{"qwen2", "llama-bpe", "default", "gpt-2", "starcoder", "falcon"}

func TestBPERoundTrip(t *testing.T) {
	for _, pre := range bpePres {
		tk := testBPE(t, pre)
		for _, text := range roundTripTexts {
			ids, err := tk.Encode(text, EncodeOptions{})
			if err != nil {
				t.Fatalf("%s: Encode(%q): %v", pre, text, err)
			}
			if got := tk.Decode(ids); string(got) != text {
				t.Errorf("%s: Decode(Encode(%q)) = %q", pre, text, got)
			}
			if streamed := streamAll(t, tk, pre, ids); string(streamed) != text {
				t.Errorf("%s: streamed %q, want %q", pre, streamed, text)
			}
		}
	}
}

// TestBPEInvalidUTF8 shows that bytes that are not UTF-8 are refused by
// default and, when allowed, come back exactly.
func TestBPEInvalidUTF8(t *testing.T) {
	texts := []string{
		"\xff",
		"abc\x80def",
		"\xe6\x88",            // truncated 3-byte sequence
		"\xf0\x9f\x9a",        // truncated emoji
		"ok \xc3\x28 bad",     // invalid continuation
		"\xed\xa0\x80 surr",   // surrogate
		"\xc0\xaf overlong",   // overlong '/'
		"mix 🚀\xfe\xfe 我\xe6", // valid and invalid
	}
	for _, pre := range bpePres {
		tk := testBPE(t, pre)
		for _, text := range texts {
			if _, err := tk.Encode(text, EncodeOptions{}); err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
				t.Errorf("%s: Encode(%q) error = %v, want invalid UTF-8", pre, text, err)
			}
			ids, err := tk.Encode(text, EncodeOptions{AllowInvalidUTF8: true})
			if err != nil {
				t.Fatalf("%s: Encode(%q, AllowInvalidUTF8): %v", pre, text, err)
			}
			if got := tk.Decode(ids); !bytes.Equal(got, []byte(text)) {
				t.Errorf("%s: Decode(Encode(%q)) = %q", pre, text, got)
			}
			if streamed := streamAll(t, tk, pre, ids); !bytes.Equal(streamed, []byte(text)) {
				t.Errorf("%s: streamed %q, want %q", pre, streamed, text)
			}
		}
	}
}

// TestBPEMergeOrder compares the priority-queue merge with a direct,
// quadratic statement of the rule (leftmost pair of lowest rank first).
func TestBPEMergeOrder(t *testing.T) {
	for _, pre := range bpePres {
		v := testBPEVocab(t, pre)
		tk, err := New(v)
		if err != nil {
			t.Fatal(err)
		}
		texts := append(append([]string{}, trainCorpus...), roundTripTexts...)
		for _, text := range texts {
			ids, err := tk.Encode(text, EncodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			frags := tk.partition(text, false)
			var want []int32
			for _, f := range frags {
				if f.tok >= 0 {
					want = append(want, f.tok)
				} else {
					want = append(want, naiveBPE(v, tk.pk, text[f.lo:f.hi])...)
				}
			}
			if d := cmp.Diff(want, ids, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("%s %q: (-naive +got)\n%s", pre, text, d)
			}
		}
		// The merges must do something: the corpus compresses.
		ids, _ := tk.Encode(trainCorpus[0], EncodeOptions{})
		if len(ids)*3 > len(trainCorpus[0])*2 {
			t.Errorf("%s: %d tokens for %d bytes; merges not applied?", pre, len(ids), len(trainCorpus[0]))
		}
	}
}

// TestBPESpecial covers add_bos / add_eos and the splitting of special
// tokens out of the text.
func TestBPESpecial(t *testing.T) {
	tk := testBPE(t, "qwen2")
	bos, eos := tk.BOS(), tk.EOS()
	start, _ := tk.index["<|im_start|>"], 0
	end := tk.index["<|im_end|>"]
	tool := tk.index["<tool>"]
	tok := func(s string) []int32 {
		ids, err := tk.Encode(s, EncodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	cat := func(parts ...[]int32) []int32 {
		var out []int32
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	one := func(id int32) []int32 { return []int32{id} }
	addEOS := *testBPEVocab(t, "qwen2")
	addEOS.AddBOS, addEOS.AddEOS = Flag(true), Flag(true)
	tkEOS, err := New(&addEOS)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		tk   *Tokenizer
		text string
		opts EncodeOptions
		want []int32
	}{
		{"parse control", tk, "<|im_start|>user\nhi<|im_end|>", EncodeOptions{ParseSpecial: true}, cat(one(start), tok("user\nhi"), one(end))},
		{"control as text", tk, "<|im_start|>x", EncodeOptions{}, tok("<|im_start|>x")},
		{"user-defined always parsed", tk, "a<tool>b", EncodeOptions{}, cat(tok("a"), one(tool), tok("b"))},
		{"adjacent specials", tk, "<|im_end|><|im_end|><tool>", EncodeOptions{ParseSpecial: true}, []int32{end, end, tool}},
		{"qwen2 adds no bos", tk, "hi", EncodeOptions{AddSpecial: true}, tok("hi")},
		{"add bos and eos", tkEOS, "hi", EncodeOptions{AddSpecial: true}, cat(one(bos), tok("hi"), one(eos))},
		{"empty with bos and eos", tkEOS, "", EncodeOptions{AddSpecial: true}, []int32{bos, eos}},
	} {
		got, err := c.tk.Encode(c.text, c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s: (-want +got)\n%s", c.name, d)
		}
	}
	// llama-bpe adds BOS by default and matches whole words first.
	l3 := testBPE(t, "llama-bpe")
	ids, _ := l3.Encode("hi", EncodeOptions{AddSpecial: true})
	if len(ids) == 0 || ids[0] != l3.BOS() {
		t.Errorf("llama-bpe: %v does not start with BOS %d", ids, l3.BOS())
	}
	if !tk.IsEOG(eos) || !tk.IsEOG(end) || tk.IsEOG(start) {
		t.Errorf("EOG set %v: want eos %d and <|im_end|> %d, not <|im_start|> %d", tk.EOG(), eos, end, start)
	}
}

// TestBPEDetokenize checks llama_detokenize's clean-up of spaces, which
// qwen2 turns off and the other pre-tokenizers turn on.
func TestBPEDetokenize(t *testing.T) {
	text := "Hello , world ! It ' s ' quoted ' and they 're here ?"
	for _, c := range []struct {
		pre, want string
	}{
		{"qwen2", text},
		{"default", "Hello, world! It's'quoted'and they're here?"},
	} {
		tk := testBPE(t, c.pre)
		ids, err := tk.Encode(text, EncodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := tk.Detokenize(ids, DetokenizeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("%s: Detokenize = %q, want %q", c.pre, got, c.want)
		}
	}
}
