package tokenizer

import "unicode/utf8"

// Byte-level BPE (llama.cpp's llm_tokenizer_bpe): pre-tokenise the text into
// words, map every byte of a word to a printable codepoint (GPT-2's
// bytes_to_unicode), and merge adjacent symbols by merge rank, lowest rank
// first (leftmost first on ties).

// byteToRune is GPT-2's byte-to-unicode table: printable Latin-1 bytes map
// to themselves, the other 68 bytes to U+0100.. in byte order.
var byteToRune, runeToByte = func() ([256]rune, map[rune]byte) {
	var b2r [256]rune
	r2b := make(map[rune]byte, 256)
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			b2r[b] = rune(b)
		} else {
			b2r[b] = rune(256 + n)
			n++
		}
		r2b[b2r[b]] = byte(b)
	}
	return b2r, r2b
}()

type bpeSym struct {
	id         int32 // token of the symbol, NoToken if it is none
	start, n   int32 // bytes of the word
	prev, next int32
}

type bpeBigram struct {
	left, right int32
	rank        int32
	id          int32 // merged token
	size        int32
}

// bpeHeap pops the merge of lowest rank first, then the leftmost.
type bpeHeap = bigramHeap[bpeBigram]

func (a bpeBigram) before(b bpeBigram) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	return a.left < b.left
}

// bpeState holds buffers reused across the words of one Encode call.
type bpeState struct {
	syms []bpeSym
	heap bpeHeap
	enc  []byte
}

// pretokenize splits text into words (byte ranges of text) with a
// pre-tokenizer. Invalid UTF-8 bytes take part as U+FFFD.
func pretokenize(k preKind, text string) [][2]int {
	cps := make([]rune, 0, len(text))
	offs := make([]int, 0, len(text)+1)
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		cps = append(cps, r)
		offs = append(offs, i)
		i += n
	}
	offs = append(offs, len(text))
	fl := make([]uint8, len(cps))
	for i, r := range cps {
		fl[i] = cpFlags(r)
	}
	spans := []span{{0, len(cps)}}
	for _, m := range matchers(k) {
		spans = splitAll(cps, fl, spans, m)
	}
	words := make([][2]int, len(spans))
	for i, s := range spans {
		words[i] = [2]int{offs[s.lo], offs[s.hi]}
	}
	return words
}

func (t *Tokenizer) bpeEncode(text string, out []int32) []int32 {
	var st bpeState
	for _, w := range pretokenize(t.pk.kind, text) {
		out = t.bpeWord(&st, text[w[0]:w[1]], out)
	}
	return out
}

func (st *bpeState) encode(word string) []byte {
	st.enc = st.enc[:0]
	for i := 0; i < len(word); i++ {
		st.enc = utf8.AppendRune(st.enc, byteToRune[word[i]])
	}
	return st.enc
}

func (t *Tokenizer) bpeWord(st *bpeState, word string, out []int32) []int32 {
	if t.pk.ignoreMerges {
		if id, ok := t.fast.get(st.encode(word)); ok {
			return append(out, id)
		}
	}
	syms := st.syms[:0]
	for i := 0; i < len(word); i++ {
		next := int32(i + 1)
		if i+1 == len(word) {
			next = -1
		}
		syms = append(syms, bpeSym{id: t.byteTok[word[i]], start: int32(i), n: 1, prev: int32(i - 1), next: next})
	}
	h := st.heap[:0]
	tryAdd := func(left, right int32) {
		if left < 0 || right < 0 {
			return
		}
		l, r := syms[left].id, syms[right].id
		if l < 0 || r < 0 {
			return
		}
		m, ok := t.merges[uint64(uint32(l))<<32|uint64(uint32(r))]
		if !ok {
			return
		}
		h.push(bpeBigram{left: left, right: right, rank: m.rank, id: m.id, size: syms[left].n + syms[right].n})
	}
	for i := int32(1); i < int32(len(syms)); i++ {
		tryAdd(i-1, i)
	}
	for len(h) > 0 {
		b := h.pop()
		l, r := &syms[b.left], &syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue // stale
		}
		l.n += r.n
		l.id = b.id
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = b.left
		}
		tryAdd(l.prev, b.left)
		tryAdd(b.left, l.next)
	}
	for i := int32(0); i != -1 && len(syms) > 0; i = syms[i].next {
		s := syms[i]
		if s.id >= 0 {
			out = append(out, s.id)
			continue
		}
		// Not a token (the vocabulary lacks this byte's token): llama.cpp
		// looks up each byte of the encoded symbol as a one-byte token and
		// drops the bytes it cannot find.
		for _, c := range st.encode(word[s.start : s.start+s.n]) {
			if id, ok := t.index[string([]byte{c})]; ok {
				out = append(out, id)
			}
		}
	}
	st.syms, st.heap = syms, h
	return out
}
