package tokenizer

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/irtool/irtool/gguf"
)

// writeVocabGGUF stores a vocabulary in an in-memory GGUF file (no tensors)
// with the project's GGUF writer, as a converter would.
func writeVocabGGUF(t testing.TB, v *Vocab) []byte {
	t.Helper()
	w := gguf.NewWriter()
	w.SetKV("general.architecture", gguf.Str("llama"))
	w.SetKV(keyModel, gguf.Str(v.Model))
	if v.Pre != "" {
		w.SetKV(keyPre, gguf.Str(v.Pre))
	}
	w.SetKV(keyTokens, gguf.Strs(v.Tokens))
	if v.Scores != nil {
		w.SetKV(keyScores, gguf.F32s(v.Scores))
	}
	if v.Types != nil {
		ts := make([]int32, len(v.Types))
		for i, x := range v.Types {
			ts[i] = int32(x)
		}
		w.SetKV(keyTypes, gguf.I32s(ts))
	}
	if v.Merges != nil {
		w.SetKV(keyMerges, gguf.Strs(v.Merges))
	}
	for _, s := range []struct {
		key string
		id  *int32
	}{{keyBOS, v.BOS}, {keyEOS, v.EOS}, {keyUNK, v.UNK}, {keyPAD, v.PAD}} {
		if s.id != nil {
			w.SetKV(s.key, gguf.U32(uint32(*s.id)))
		}
	}
	for _, s := range []struct {
		key string
		b   *bool
	}{{keyAddBOS, v.AddBOS}, {keyAddEOS, v.AddEOS}} {
		if s.b != nil {
			w.SetKV(s.key, gguf.Bool(*s.b))
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// testBPE builds the trained vocabulary for pre, round-tripped through a
// GGUF file.
func testBPE(t testing.TB, pre string) *Tokenizer {
	t.Helper()
	data := writeVocabGGUF(t, testBPEVocab(t, pre))
	f, err := gguf.Parse(data, "bpe-"+pre+".gguf")
	if err != nil {
		t.Fatal(err)
	}
	tk, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func writeKVs(t *testing.T, kvs map[string]gguf.Value) *gguf.File {
	t.Helper()
	w := gguf.NewWriter()
	w.SetKV("general.architecture", gguf.Str("llama"))
	for _, k := range []string{keyModel, keyPre, keyTokens, keyScores, keyTypes, keyMerges, keyBOS, keyEOS, keyUNK, keyPAD, keyAddBOS, keyAddEOS, keyAddPrefix} {
		if v, ok := kvs[k]; ok {
			w.SetKV(k, v)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes(), "test.gguf")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFromGGUFErrors(t *testing.T) {
	base := func(extra map[string]gguf.Value) map[string]gguf.Value {
		m := map[string]gguf.Value{
			keyModel:  gguf.Str("llama"),
			keyTokens: gguf.Strs([]string{"<unk>", "<s>", "</s>", "a"}),
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, c := range []struct {
		name string
		kvs  map[string]gguf.Value
		want string
	}{
		{"no tokenizer", map[string]gguf.Value{}, "has no tokenizer"},
		{"no tokens", map[string]gguf.Value{keyModel: gguf.Str("llama")}, "tokenizer.ggml.tokens is missing"},
		{"model not a string", base(map[string]gguf.Value{keyModel: gguf.U32(1)}), "tokenizer.ggml.model is not a string"},
		{"pre not a string", base(map[string]gguf.Value{keyPre: gguf.U32(1)}), "tokenizer.ggml.pre is not a string"},
		{"tokens not strings", base(map[string]gguf.Value{keyTokens: gguf.I32s([]int32{1})}), "tokenizer.ggml.tokens is not an array of strings"},
		{"scores not numbers", base(map[string]gguf.Value{keyScores: gguf.Strs([]string{"a"})}), "tokenizer.ggml.scores is not an array of f32 or i32"},
		{"types not integers", base(map[string]gguf.Value{keyTypes: gguf.F32s([]float32{1})}), "tokenizer.ggml.token_type is not an array of integers"},
		{"merges not strings", base(map[string]gguf.Value{keyMerges: gguf.U32(3)}), "tokenizer.ggml.merges is not an array of strings"},
		{"bos not an integer", base(map[string]gguf.Value{keyBOS: gguf.Str("1")}), "tokenizer.ggml.bos_token_id is not a non-negative integer"},
		{"add_bos not a bool", base(map[string]gguf.Value{keyAddBOS: gguf.U8(1)}), "tokenizer.ggml.add_bos_token is not a bool"},
		{"empty vocabulary", base(map[string]gguf.Value{keyTokens: gguf.Strs([]string{})}), "empty vocabulary"},
		{"short scores", base(map[string]gguf.Value{keyScores: gguf.F32s([]float32{0})}), "1 scores for 4 tokens"},
	} {
		_, err := FromGGUF(writeKVs(t, c.kvs))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := FromGGUF(nil); err == nil {
		t.Error("FromGGUF(nil) succeeded")
	}
}

// TestFromGGUFKeys: integer scores, out-of-range ids (stories260K stores
// 0xFFFFFFFF for its padding id) and the add_* flags.
func TestFromGGUFKeys(t *testing.T) {
	tk, err := FromGGUF(writeKVs(t, map[string]gguf.Value{
		keyModel:     gguf.Str("llama"),
		keyTokens:    gguf.Strs([]string{"<unk>", "<s>", "</s>", "▁", "a", "▁a"}),
		keyScores:    gguf.I32s([]int32{0, 0, 0, -3, -2, -1}),
		keyTypes:     gguf.I32s([]int32{2, 3, 3, 1, 1, 1}),
		keyPAD:       gguf.U32(0xFFFFFFFF),
		keyEOS:       gguf.U32(99),
		keyAddBOS:    gguf.Bool(false),
		keyAddEOS:    gguf.Bool(true),
		keyAddPrefix: gguf.Bool(false),
	}))
	if err != nil {
		t.Fatal(err)
	}
	if tk.PAD() != NoToken || tk.EOS() != 2 || tk.AddBOS() || !tk.AddEOS() || tk.Model() != "llama" || tk.Pre() != "" {
		t.Errorf("pad %d eos %d add_bos %v add_eos %v model %q pre %q", tk.PAD(), tk.EOS(), tk.AddBOS(), tk.AddEOS(), tk.Model(), tk.Pre())
	}
	ids, err := tk.Encode("a a", EncodeOptions{AddSpecial: true})
	if err != nil {
		t.Fatal(err)
	}
	// No space prefix: "a" "▁a", then EOS.
	if d := cmp.Diff([]int32{4, 5, 2}, ids); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
	if !tk.IsControl(1) || tk.IsControl(4) {
		t.Error("IsControl")
	}
	if s, ok := tk.Text(5); !ok || s != "▁a" {
		t.Errorf("Text(5) = %q, %v", s, ok)
	}
	if _, ok := tk.Text(6); ok {
		t.Error("Text(6) ok")
	}
}

// TestBPEPieces: byte-level text that falls outside the byte table is
// shown as llama.cpp shows it; byte-type tokens give their byte.
func TestBPEPieces(t *testing.T) {
	v := testBPEVocab(t, "gpt-2")
	v.Tokens = append(v.Tokens, "a€", "<0x41>")
	v.Types = append(v.Types, TypeNormal, TypeByte)
	tk, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	n := int32(len(v.Tokens))
	if got := string(tk.Piece(n - 2)); got != "a[UNK_BYTE_0xe282aca€]" {
		t.Errorf("Piece = %q", got)
	}
	if got := string(tk.Piece(n - 1)); got != "A" {
		t.Errorf("Piece = %q", got)
	}
	if got := string(tk.Piece(tk.index["Ġthe"])); got != " the" {
		t.Errorf("Piece(Ġthe) = %q", got)
	}
}
