package tokenizer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/irtool/irtool/internal/testref"
)

// smallSPM builds a SentencePiece vocabulary: <unk> <s> </s>, the 256 byte
// tokens, then the given pieces with their scores.
func smallSPM(t testing.TB, pieces map[string]float32, order []string) *Tokenizer {
	t.Helper()
	v := &Vocab{Model: "llama"}
	add := func(s string, score float32, typ TokenType) {
		v.Tokens = append(v.Tokens, s)
		v.Scores = append(v.Scores, score)
		v.Types = append(v.Types, typ)
	}
	add("<unk>", 0, TypeUnknown)
	add("<s>", 0, TypeControl)
	add("</s>", 0, TypeControl)
	for b := 0; b < 256; b++ {
		add(fmt.Sprintf("<0x%02X>", b), 0, TypeByte)
	}
	for _, s := range order {
		add(s, pieces[s], TypeNormal)
	}
	tk, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestSPMMergePriority(t *testing.T) {
	order := []string{"▁", "a", "b", "c", "ab", "bc", "▁a", "abc", "▁<s>"}
	for _, c := range []struct {
		name   string
		scores map[string]float32
		text   string
		want   []string
	}{
		// ab and bc tie: the leftmost pair merges first, then abc.
		{"tie leftmost", map[string]float32{"ab": -1, "bc": -1, "▁a": -2, "abc": -3}, "abc", []string{"▁", "abc"}},
		// bc scores higher: it merges first, then ▁a beats abc.
		{"higher score first", map[string]float32{"ab": -1, "bc": -0.5, "▁a": -2, "abc": -3}, "abc", []string{"▁a", "bc"}},
		// characters without a token fall back to their bytes.
		{"byte fallback", map[string]float32{"ab": -1}, "aé", []string{"▁a", "<0xC3>", "<0xA9>"}},
		{"spaces", map[string]float32{"ab": -1}, " a  b", []string{"▁", "▁a", "▁", "▁", "b"}},
	} {
		tk := smallSPM(t, c.scores, order)
		ids, err := tk.Encode(c.text, EncodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, id := range ids {
			s, _ := tk.Text(id)
			got = append(got, s)
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s: (-want +got)\n%s", c.name, d)
		}
	}
}

// TestSPMSpecial: with parse_special the text of <s> becomes the token, and
// the text after a special token gets its own space prefix; without it, <s>
// is ordinary text.
func TestSPMSpecial(t *testing.T) {
	tk := smallSPM(t, map[string]float32{"▁a": -1, "▁<s>": -1}, []string{"▁", "a", "b", "<", ">", "s", "▁a", "▁<s>"})
	id := func(s string) int32 { return tk.index[s] }
	for _, c := range []struct {
		name string
		text string
		opts EncodeOptions
		want []int32
	}{
		{"bos", "a", EncodeOptions{AddSpecial: true}, []int32{1, id("▁a")}},
		{"empty with bos", "", EncodeOptions{AddSpecial: true}, []int32{1}},
		{"empty", "", EncodeOptions{}, nil},
		{"parsed", "a<s>a", EncodeOptions{ParseSpecial: true}, []int32{id("▁a"), 1, id("▁a")}},
		{"parsed at start", "<s>a", EncodeOptions{ParseSpecial: true}, []int32{1, id("▁a")}},
		{"not parsed", "<s>a", EncodeOptions{}, []int32{id("▁"), id("<"), id("s"), id(">"), id("a")}},
	} {
		got, err := tk.Encode(c.text, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if c.want == nil {
			c.want = []int32{}
		}
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s: (-want +got)\n%s", c.name, d)
		}
	}
}

func TestStreamDecoder(t *testing.T) {
	tk := smallSPM(t, map[string]float32{}, []string{"▁a"})
	b := func(x byte) int32 { return int32(3 + int(x)) }
	for _, c := range []struct {
		name string
		ids  []int32
		want []string // Push results, then Flush
	}{
		{"emoji over four tokens", []int32{b(0xF0), b(0x9F), b(0x9A), b(0x80)}, []string{"", "", "", "🚀", ""}},
		{"text then partial", []int32{tk.index["▁a"], b(0xE6), b(0x88), b(0x91), tk.index["▁a"]}, []string{" a", "", "", "我", " a", ""}},
		{"invalid byte passes through", []int32{b(0xFF), b(0x80)}, []string{"\xff", "\x80", ""}},
		{"truncated at end", []int32{b(0xE6), b(0x88)}, []string{"", "", "\xe6\x88"}},
		{"bad continuation", []int32{b(0xE6), b('a')}, []string{"", "\xe6a", ""}},
		{"control token text", []int32{2}, []string{"</s>", ""}},
		{"out of range id", []int32{-1, 99999}, []string{"", "", ""}},
	} {
		d := tk.NewStreamDecoder()
		var got []string
		for _, id := range c.ids {
			got = append(got, string(d.Push(id)))
		}
		got = append(got, string(d.Flush()))
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", c.name, diff)
		}
	}
}

// TestSPMIsolation: cutting the text at characters that no multi-character
// token contains (to keep the merge queues small) gives the same ids as
// llama.cpp's single queue over the whole text.
func TestSPMIsolation(t *testing.T) {
	texts := append(append([]string{}, trainCorpus...), roundTripTexts...)
	texts = append(texts, strings.Repeat("Hello world! \n", 50), "\xff\xfe a\xe6\x88 b")
	paths := []string{testref.Testdata("stories260K.gguf")}
	if p := sharedVocab(); p != "" {
		paths = append(paths, p)
	}
	for _, p := range paths {
		tk := openTokenizer(t, p)
		for _, text := range texts {
			got, err := tk.Encode(text, EncodeOptions{AllowInvalidUTF8: true})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(spmSingleQueue(t, tk, text), got, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("%s %q: (-single queue +got)\n%s", filepath.Base(p), text, d)
			}
		}
	}
}

// spmSingleQueue encodes text (no special tokens) with one merge queue over
// the whole escaped text, as llama.cpp does.
func spmSingleQueue(t testing.TB, tk *Tokenizer, text string) []int32 {
	if text == "" {
		return nil
	}
	var st spmState
	ids, err := tk.spmRun(&st, appendEscaped([]byte(spaceEsc), text), nil)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// sharedVocab returns the path of llama.cpp's 32000-token SentencePiece
// vocabulary (the external reference data or its testdata copy), or ""
// when it is absent.
func sharedVocab() string {
	p := filepath.Join(testref.Dir(), "vocab", "ggml-vocab-llama-spm.gguf")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}
