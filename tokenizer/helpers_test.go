package tokenizer

import (
	"strings"
	"testing"
)

// trainCorpus is the text the test BPE vocabularies are trained on: English,
// code, CJK, Cyrillic, accents and emoji, so that merges span multi-byte
// characters.
var trainCorpus = []string{
	"Once upon a time, there was a little girl named Lily. She loved to play outside in the park.",
	"One day, she saw a big dog. The dog was very happy and wanted to play with Lily too!",
	"I've been told he's there, you're sure? We'll see. They'd like some tea; I'm not sure it'll work.",
	"func main() { fmt.Println(\"hello, world\") } // 1234567890 3.14159 2024-01-01",
	"我想在apple工作。今天天气很好。我们一起去公园吧！",
	"こんにちは世界。東京は大きい都市です。",
	"нещо на Български, привет мир, как дела?",
	"Café, naïve, façade, Führer, résumé — déjà vu…",
	"🚀 rockets 😀 smiles 🦙 llamas 👨‍👩‍👧 family ❤️ love ✅ done",
	"\t\tindented\n    spaces\n\n\nnew lines\r\n",
}

// trainMerges learns nMerges byte-level BPE merges from the corpus with the
// given pre-tokenizer: repeatedly merge the most frequent adjacent pair
// (ties broken by text). It returns the token list (the 256 byte tokens
// first, in byte order) and the merges.
func trainMerges(pre preKind, corpus []string, nMerges int) (tokens, merges []string) {
	for b := 0; b < 256; b++ {
		tokens = append(tokens, string(byteToRune[b]))
	}
	have := map[string]bool{}
	for _, s := range tokens {
		have[s] = true
	}
	var words [][]string
	for _, text := range corpus {
		for _, w := range pretokenize(pre, text) {
			var syms []string
			for _, c := range []byte(text[w[0]:w[1]]) {
				syms = append(syms, string(byteToRune[c]))
			}
			words = append(words, syms)
		}
	}
	for len(merges) < nMerges {
		count := map[[2]string]int{}
		for _, w := range words {
			for i := 1; i < len(w); i++ {
				count[[2]string{w[i-1], w[i]}]++
			}
		}
		var best [2]string
		bestN := 1
		for p, n := range count {
			if n > bestN || (n == bestN && bestN > 1 && p[0]+" "+p[1] < best[0]+" "+best[1]) {
				best, bestN = p, n
			}
		}
		if bestN < 2 {
			break
		}
		merges = append(merges, best[0]+" "+best[1])
		joined := best[0] + best[1]
		if !have[joined] {
			have[joined] = true
			tokens = append(tokens, joined)
		}
		for wi, w := range words {
			var nw []string
			for i := 0; i < len(w); i++ {
				if i+1 < len(w) && w[i] == best[0] && w[i+1] == best[1] {
					nw = append(nw, joined)
					i++
				} else {
					nw = append(nw, w[i])
				}
			}
			words[wi] = nw
		}
	}
	return tokens, merges
}

// bpeSpecials are appended to the trained vocabularies.
var bpeSpecials = []struct {
	text string
	typ  TokenType
}{
	{"<|begin_of_text|>", TypeControl},
	{"<|endoftext|>", TypeControl},
	{"<|im_start|>", TypeControl},
	{"<|im_end|>", TypeControl},
	{"<tool>", TypeUserDefined},
}

// testBPEVocab returns a trained byte-level BPE vocabulary for pre.
func testBPEVocab(t testing.TB, pre string) *Vocab {
	t.Helper()
	info, ok := preTypes[pre]
	if !ok {
		t.Fatalf("unknown pre %q", pre)
	}
	tokens, merges := trainMerges(info.kind, trainCorpus, 300)
	types := make([]TokenType, len(tokens))
	for i := range types {
		types[i] = TypeNormal
	}
	for _, s := range bpeSpecials {
		tokens = append(tokens, s.text)
		types = append(types, s.typ)
	}
	bos := int32(len(tokens) - len(bpeSpecials))
	return &Vocab{Model: "gpt2", Pre: pre, Tokens: tokens, Types: types, Merges: merges, BOS: ID(bos), EOS: ID(bos + 1)}
}

// naiveBPE is an independent, quadratic statement of llama.cpp's merge
// rule: repeatedly merge the leftmost adjacent pair of lowest rank.
func naiveBPE(v *Vocab, pre preInfo, text string) []int32 {
	rank := map[[2]string]int{}
	for i, m := range v.Merges {
		k := strings.IndexByte(m[1:], ' ') + 1
		p := [2]string{m[:k], m[k+1:]}
		if _, ok := rank[p]; !ok {
			rank[p] = i
		}
	}
	id := map[string]int32{}
	for i, s := range v.Tokens {
		id[s] = int32(i)
	}
	var out []int32
	for _, w := range pretokenize(pre.kind, text) {
		var syms []string
		for _, c := range []byte(text[w[0]:w[1]]) {
			syms = append(syms, string(byteToRune[c]))
		}
		if whole, ok := id[strings.Join(syms, "")]; ok && pre.ignoreMerges {
			out = append(out, whole)
			continue
		}
		for {
			best, bestRank := -1, 0
			for i := 1; i < len(syms); i++ {
				if r, ok := rank[[2]string{syms[i-1], syms[i]}]; ok && (best < 0 || r < bestRank) {
					best, bestRank = i-1, r
				}
			}
			if best < 0 {
				break
			}
			syms = append(syms[:best], append([]string{syms[best] + syms[best+1]}, syms[best+2:]...)...)
		}
		for _, s := range syms {
			out = append(out, id[s])
		}
	}
	return out
}

// roundTripTexts are arbitrary UTF-8 strings, most of them not in the
// training corpus.
var roundTripTexts = []string{
	"",
	" ",
	"Hello, world!",
	"  leading and trailing  ",
	"Once upon a time, there was a little girl named Lily.",
	"emoji: 🚀😀🦙 👨‍👩‍👧 🇯🇵 ❤️ ✅",
	"CJK: 我想在apple工作1314151天～ 東京 こんにちは 안녕하세요",
	"Кириллица и ελληνικά, עברית, العربية, हिन्दी नमस्ते",
	"combining: e\u0301te\u0301 Z\u0351\u036b\u0343a\u0310l\u0352g\u0308o",
	"numbers 1234567890 3.14 1e-9 ½ ² ③ Ⅷ ١٢٣",
	"code:\n\tfor (i = 0; i < n; i++) { x += y[i] ^ 0xFF; }\r\n",
	"контракции: I'll, you'RE, it'S, we've 'd 'm",
	"\x00\x01\x7f control \u200b\u200d\ufeff zero-width",
	"tabs\t\t\tand\n\n\nnewlines\r\r\n  \u00a0\u3000",
	"<|im_start|>user\nhi<|im_end|>",
	"\U0010FFFF\U000E0001 private \uE000",
}
