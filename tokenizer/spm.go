package tokenizer

import (
	"fmt"
	"unicode/utf8"
)

// SentencePiece-style BPE (llama.cpp's llm_tokenizer_spm): start from one
// symbol per UTF-8 character, repeatedly merge the adjacent pair whose
// concatenation is the highest-scoring token (leftmost first on ties), then
// emit each symbol's token, or its bytes as byte tokens when it has none.

type spmSym struct {
	start, n   int32
	prev, next int32
}

type spmBigram struct {
	left, right int32
	score       float32
	size        int32
}

// spmHeap pops the bigram of highest score first, then the leftmost.
type spmHeap = bigramHeap[spmBigram]

func (a spmBigram) before(b spmBigram) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.left < b.left
}

// spmMergeable marks the codepoints that occur in some token of two or more
// characters. A character outside this set can never be part of a merge, so
// its symbol is final from the start and the text on either side of it can
// be merged independently: this keeps the priority queues small (and the
// result identical to llama.cpp's single queue over the whole text).
func spmMergeable(tokens []string) []uint64 {
	set := make([]uint64, (utf8.MaxRune+64)/64)
	for _, s := range tokens {
		if utf8.RuneCountInString(s) < 2 {
			continue
		}
		for _, r := range s {
			set[r>>6] |= 1 << (r & 63)
		}
	}
	return set
}

// spmState holds buffers reused across the runs of one encode call.
type spmState struct {
	syms []spmSym
	heap spmHeap
}

func (t *Tokenizer) spmEncode(text []byte, out []int32) ([]int32, error) {
	var st spmState
	runStart := 0
	var err error
	for off := 0; off < len(text); {
		n, isolated := 1, false
		if c := text[off]; c >= utf8.RuneSelf {
			// One symbol per character. llama.cpp cuts by the length the
			// lead byte announces; for valid UTF-8 that is the same, and an
			// invalid byte is kept as a symbol of its own so that decoding
			// gives it back.
			var r rune
			r, n = utf8.DecodeRune(text[off:])
			isolated = n > 1 && t.spmMerge[r>>6]&(1<<(r&63)) == 0
		} else {
			isolated = t.spmMerge[c>>6]&(1<<(c&63)) == 0
		}
		if isolated {
			if out, err = t.spmRun(&st, text[runStart:off], out); err != nil {
				return nil, err
			}
			if out, err = t.spmSymbol(text[off:off+n], out); err != nil {
				return nil, err
			}
			runStart = off + n
		}
		off += n
	}
	return t.spmRun(&st, text[runStart:], out)
}

// spmSymbol emits a final symbol: its token, or its bytes as byte tokens
// (llama.cpp's resegment; every merged symbol is a token, so only single
// characters can fall back to bytes).
func (t *Tokenizer) spmSymbol(piece []byte, out []int32) ([]int32, error) {
	if id, ok := t.fast.get(piece); ok {
		return append(out, id), nil
	}
	for _, c := range piece {
		id := t.byteTok[c]
		if id == NoToken {
			return nil, fmt.Errorf("tokenizer: no token for byte 0x%02X (vocabulary has no <0x%02X> token)", c, c)
		}
		out = append(out, id)
	}
	return out, nil
}

// spmRun merges the symbols of text with llama.cpp's bigram queue.
func (t *Tokenizer) spmRun(st *spmState, text []byte, out []int32) ([]int32, error) {
	if len(text) == 0 {
		return out, nil
	}
	syms := st.syms[:0]
	for off := 0; off < len(text); {
		n := 1
		if text[off] >= utf8.RuneSelf {
			_, n = utf8.DecodeRune(text[off:])
		}
		i := int32(len(syms))
		next := i + 1
		if off+n == len(text) {
			next = -1
		}
		syms = append(syms, spmSym{start: int32(off), n: int32(n), prev: i - 1, next: next})
		off += n
	}
	h := st.heap[:0]
	tryAdd := func(left, right int32) {
		if left < 0 || right < 0 {
			return
		}
		l := syms[left]
		end := l.start + l.n + syms[right].n
		id, ok := t.fast.get(text[l.start:end])
		if !ok {
			return
		}
		h.push(spmBigram{left: left, right: right, score: t.scores[id], size: end - l.start})
	}
	for i := int32(1); i < int32(len(syms)); i++ {
		tryAdd(i-1, i)
	}
	for len(h) > 0 {
		b := h.pop()
		l, r := &syms[b.left], &syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue // stale: one side was merged since
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = b.left
		}
		tryAdd(l.prev, b.left)
		tryAdd(b.left, l.next)
	}
	var err error
	for i := int32(0); i != -1; i = syms[i].next {
		s := syms[i]
		if out, err = t.spmSymbol(text[s.start:s.start+s.n], out); err != nil {
			return nil, err
		}
	}
	st.syms, st.heap = syms, h
	return out, nil
}
