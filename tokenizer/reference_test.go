package tokenizer

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/irtool/irtool/gguf"
	"github.com/irtool/irtool/internal/testref"
)

func openTokenizer(t testing.TB, path string) *Tokenizer {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tk, err := FromGGUF(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return tk
}

// splitVocabTests splits a llama.cpp .inp file as test-tokenizer-0 does.
func splitVocabTests(data string) []string {
	parts := strings.Split(data, "\n__ggml_vocab_test__\n")
	return parts[:len(parts)-1] // the file ends with the separator
}

// TestReferenceSPMVocab: every case of llama.cpp's own tokenizer test for
// the LLaMA SentencePiece vocabulary (32000 tokens, vocab-only GGUF) gives
// exactly llama.cpp's ids.
func TestReferenceSPMVocab(t *testing.T) {
	tk := openTokenizer(t, testref.Shared(t, "vocab/ggml-vocab-llama-spm.gguf"))
	if tk.NVocab() != 32000 {
		t.Fatalf("n_vocab %d", tk.NVocab())
	}
	inp, err := os.ReadFile(testref.Shared(t, "vocab/ggml-vocab-llama-spm.gguf.inp"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(testref.Shared(t, "vocab/ggml-vocab-llama-spm.gguf.out"))
	if err != nil {
		t.Fatal(err)
	}
	cases := splitVocabTests(string(inp))
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(cases) != 46 || len(lines) != len(cases) {
		t.Fatalf("%d inputs, %d outputs", len(cases), len(lines))
	}
	for i, text := range cases {
		want := []int32{}
		for _, f := range strings.Fields(lines[i]) {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, int32(n))
		}
		got, err := tk.Encode(text, EncodeOptions{})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("case %d %q: (-llama.cpp +got)\n%s", i, text, d)
		}
		// Detokenize undoes the space prefix: a byte-exact round trip.
		back, err := tk.Detokenize(got, DetokenizeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(back) != text {
			t.Errorf("case %d: Detokenize = %q, want %q", i, back, text)
		}
	}
}

type tokenizeJSON struct {
	AddSpecial   bool `json:"add_special"`
	ParseSpecial bool `json:"parse_special"`
	Cases        []struct {
		Text    string  `json:"text"`
		TextHex string  `json:"text_hex"`
		Tokens  []int32 `json:"tokens"`
	} `json:"cases"`
}

// TestReferenceStories260K: llama.cpp's tokenisation of the same inputs
// with stories260K's 512-token vocabulary.
func TestReferenceStories260K(t *testing.T) {
	tk := openTokenizer(t, testref.Testdata("stories260K.gguf"))
	data, err := os.ReadFile(testref.Shared(t, "llamacpp/stories260K.tokenize.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref tokenizeJSON
	if err := json.Unmarshal(data, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) != 46 {
		t.Fatalf("%d cases", len(ref.Cases))
	}
	for i, c := range ref.Cases {
		text, err := hex.DecodeString(c.TextHex)
		if err != nil || string(text) != c.Text {
			t.Fatalf("case %d: text_hex does not match text", i)
		}
		got, err := tk.Encode(string(text), EncodeOptions{AddSpecial: ref.AddSpecial, ParseSpecial: ref.ParseSpecial})
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		want := c.Tokens
		if want == nil {
			want = []int32{}
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("case %d %q: (-llama.cpp +got)\n%s", i, c.Text, d)
		}
	}
}

// TestStories260KPrompt: the prompt of every llama.cpp run in the reference
// data, with add_special and parse_special as llama-simple uses them.
func TestStories260KPrompt(t *testing.T) {
	tk := openTokenizer(t, testref.Testdata("stories260K.gguf"))
	got, err := tk.Encode("Once upon a time", EncodeOptions{AddSpecial: true, ParseSpecial: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]int32{1, 403, 407, 261, 378}, got); d != "" {
		t.Errorf("(-llama.cpp +got)\n%s", d)
	}
	if tk.BOS() != 1 || tk.EOS() != 2 || tk.UNK() != 0 || tk.PAD() != NoToken || !tk.AddBOS() || tk.AddEOS() || !tk.IsEOG(2) || tk.IsEOG(1) {
		t.Errorf("specials: bos %d eos %d unk %d pad %d add_bos %v add_eos %v eog %v", tk.BOS(), tk.EOS(), tk.UNK(), tk.PAD(), tk.AddBOS(), tk.AddEOS(), tk.EOG())
	}
}

type runJSON struct {
	Prompt struct {
		Text         string   `json:"text"`
		AddSpecial   bool     `json:"add_special"`
		ParseSpecial bool     `json:"parse_special"`
		Tokens       []int32  `json:"tokens"`
		Pieces       []string `json:"pieces"`
		PiecesHex    []string `json:"pieces_hex"`
	} `json:"prompt"`
	Generation struct {
		Tokens    []int32  `json:"tokens"`
		Pieces    []string `json:"pieces"`
		PiecesHex []string `json:"pieces_hex"`
		Text      string   `json:"text"`
		TextHex   string   `json:"text_hex"`
		Detok     string   `json:"detokenized_prompt_plus_generation"`
	} `json:"generation"`
}

// TestReferenceGeneration: the pieces and text of llama.cpp's greedy
// generations decode byte for byte, streamed or not, for every reference
// model that shares stories260K's vocabulary.
func TestReferenceGeneration(t *testing.T) {
	tk := openTokenizer(t, testref.Testdata("stories260K.gguf"))
	for _, name := range []string{"stories260K", "synth-llama-F32", "synth-llama-Q4_0", "synth-llama256-Q6_K"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(testref.Shared(t, "llamacpp/"+name+".llamacpp.json"))
			if err != nil {
				t.Fatal(err)
			}
			var run runJSON
			if err := json.Unmarshal(data, &run); err != nil {
				t.Fatal(err)
			}
			p := run.Prompt
			got, err := tk.Encode(p.Text, EncodeOptions{AddSpecial: p.AddSpecial, ParseSpecial: p.ParseSpecial})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(p.Tokens, got); d != "" {
				t.Errorf("%s prompt: (-llama.cpp +got)\n%s", name, d)
			}
			checkPieces(t, tk, name+" prompt", p.Tokens, p.Pieces, p.PiecesHex)
			g := run.Generation
			checkPieces(t, tk, name+" generation", g.Tokens, g.Pieces, g.PiecesHex)
			text := tk.Decode(g.Tokens)
			if hex.EncodeToString(text) != g.TextHex || jsonText(text) != g.Text {
				t.Errorf("%s: Decode = %q, want %q", name, text, g.Text)
			}
			if streamed := streamAll(t, tk, name, g.Tokens); hex.EncodeToString(streamed) != g.TextHex {
				t.Errorf("%s: streamed %q, want %q", name, streamed, g.Text)
			}
			all := append(append([]int32{}, p.Tokens...), g.Tokens...)
			detok, err := tk.Detokenize(all, DetokenizeOptions{UnparseSpecial: true})
			if err != nil {
				t.Fatal(err)
			}
			if jsonText(detok) != g.Detok {
				t.Errorf("%s: Detokenize = %q, want llama_detokenize's %q", name, detok, g.Detok)
			}
		})
	}
}

func checkPieces(t *testing.T, tk *Tokenizer, what string, ids []int32, pieces, piecesHex []string) {
	t.Helper()
	if len(pieces) != len(ids) || len(piecesHex) != len(ids) {
		t.Fatalf("%s: %d ids, %d pieces, %d hex", what, len(ids), len(pieces), len(piecesHex))
	}
	for i, id := range ids {
		p := tk.Piece(id)
		if hex.EncodeToString(p) != piecesHex[i] {
			t.Errorf("%s: piece %d of token %d = %x, want %s", what, i, id, p, piecesHex[i])
		}
		if jsonText(p) != pieces[i] {
			t.Errorf("%s: piece %d of token %d = %q, want %q", what, i, id, p, pieces[i])
		}
	}
}

// jsonText is how the reference JSON spells bytes: each byte that does not
// start a valid UTF-8 character becomes U+FFFD.
func jsonText(b []byte) string {
	var sb strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			sb.WriteRune(utf8.RuneError)
			b = b[1:]
			continue
		}
		sb.Write(b[:n])
		b = b[n:]
	}
	return sb.String()
}

// streamAll feeds ids to a StreamDecoder and checks that no chunk boundary
// falls inside a character of the whole output (decoding the output as
// UTF-8, an invalid byte counts as a character of its own).
func streamAll(t *testing.T, tk *Tokenizer, what string, ids []int32) []byte {
	t.Helper()
	d := tk.NewStreamDecoder()
	var out []byte
	var cuts []int
	for _, id := range ids {
		out = append(out, d.Push(id)...)
		cuts = append(cuts, len(out))
	}
	out = append(out, d.Flush()...)
	starts := map[int]bool{len(out): true}
	for i := 0; i < len(out); {
		starts[i] = true
		_, n := utf8.DecodeRune(out[i:])
		i += n
	}
	for _, c := range cuts {
		if !starts[c] {
			t.Errorf("%s: stream chunk ends at byte %d, inside a character of %q", what, c, out)
		}
	}
	return out
}

// TestSPMStreamBytes: byte-fallback tokens of the 32000-token vocabulary
// stream out as whole characters.
func TestSPMStreamBytes(t *testing.T) {
	tk := openTokenizer(t, testref.Testdata("stories260K.gguf"))
	text := "I 🦙 Führer 我想 нещо ✅"
	ids, err := tk.Encode(text, EncodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out := streamAll(t, tk, "stream", ids); string(out) != " "+text {
		t.Errorf("streamed %q, want %q", out, " "+text)
	}
}
