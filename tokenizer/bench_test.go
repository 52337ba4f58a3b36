package tokenizer

import (
	"strings"
	"testing"

	"github.com/irtool/irtool/internal/testref"
)

// benchText is 1 MiB of text, mostly English prose with some code,
// punctuation and non-Latin scripts.
func benchText() string {
	var sb strings.Builder
	for sb.Len() < 1<<20 {
		for _, s := range trainCorpus {
			sb.WriteString(s)
			sb.WriteByte('\n')
		}
		for _, s := range roundTripTexts[:6] {
			sb.WriteString(s)
			sb.WriteByte(' ')
		}
	}
	s := sb.String()[:1<<20]
	return strings.ToValidUTF8(s, "")
}

// BenchmarkEncodeSPM tokenises 1 MiB with the 32000-token LLaMA
// SentencePiece vocabulary when the external reference data is present, else stories260K's.
func BenchmarkEncodeSPM(b *testing.B) {
	path := testref.Testdata("stories260K.gguf")
	if p := sharedVocab(); p != "" {
		path = p
	}
	tk := openTokenizer(b, path)
	text := benchText()
	b.Logf("vocabulary %s (%d tokens)", path, tk.NVocab())
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := tk.Encode(text, EncodeOptions{AddSpecial: true}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeBPE tokenises 1 MiB with a trained byte-level BPE
// vocabulary (qwen2 pre-tokenizer).
func BenchmarkEncodeBPE(b *testing.B) {
	tk, err := New(testBPEVocab(b, "qwen2"))
	if err != nil {
		b.Fatal(err)
	}
	text := benchText()
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := tk.Encode(text, EncodeOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode streams the tokens of 1 MiB of text back to bytes.
func BenchmarkDecode(b *testing.B) {
	tk := openTokenizer(b, testref.Testdata("stories260K.gguf"))
	text := benchText()
	ids, err := tk.Encode(text, EncodeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		d := tk.NewStreamDecoder()
		for _, id := range ids {
			d.Push(id)
		}
		d.Flush()
	}
}
