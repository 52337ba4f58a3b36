package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// EncodeOptions are llama_tokenize's flags.
type EncodeOptions struct {
	// AddSpecial adds BOS / EOS as the vocabulary asks (add_bos_token,
	// add_eos_token).
	AddSpecial bool
	// ParseSpecial turns the text of control and unknown tokens (such as
	// "<s>") into those tokens. User-defined tokens are always recognised.
	ParseSpecial bool
	// AllowInvalidUTF8 accepts text that is not valid UTF-8 instead of
	// returning an error. Each invalid byte is then kept as a symbol of its
	// own and encoded as its byte token, so that decoding gives back the
	// exact input. (llama.cpp has no defined behaviour here: its SPM
	// tokenizer groups bytes by the length a lead byte announces, and its
	// BPE pre-tokenizer replaces invalid bytes by U+FFFD. Our BPE
	// pre-tokenizer splits an invalid byte like U+FFFD.)
	AllowInvalidUTF8 bool
}

// fragment is a piece of the input after special tokens were cut out: either
// a token (tok >= 0) or the text in [lo, hi).
type fragment struct {
	tok    int32
	lo, hi int
}

// Encode tokenises text as llama_tokenize(text, add_special, parse_special).
// Text that is not valid UTF-8 is an error unless opts.AllowInvalidUTF8.
func (t *Tokenizer) Encode(text string, opts EncodeOptions) (ids []int32, err error) {
	if !opts.AllowInvalidUTF8 && !utf8.ValidString(text) {
		off := 0
		for off < len(text) {
			r, n := utf8.DecodeRuneInString(text[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return nil, fmt.Errorf("tokenizer: text is not valid UTF-8 (byte 0x%02X at offset %d)", text[off], off)
	}
	defer func() {
		if r := recover(); r != nil {
			ids, err = nil, fmt.Errorf("tokenizer: internal error while encoding: %v", r)
		}
	}()
	frags := t.partition(text, opts.ParseSpecial)
	out := make([]int32, 0, len(text)/3+2)
	switch t.kind {
	case kindSPM:
		isPrevSpecial := true // a space is prefixed to the first fragment
		if opts.AddSpecial && t.addBOS {
			out = append(out, t.bos)
		}
		var buf []byte
		for _, f := range frags {
			if f.tok >= 0 {
				out = append(out, f.tok)
				isPrevSpecial = true
				continue
			}
			buf = buf[:0]
			if t.addSpacePrefix && isPrevSpecial {
				buf = append(buf, spaceEsc...)
			}
			buf = appendEscaped(buf, text[f.lo:f.hi])
			if out, err = t.spmEncode(buf, out); err != nil {
				return nil, err
			}
			isPrevSpecial = false
		}
		if opts.AddSpecial && t.addEOS {
			out = append(out, t.eos)
		}
	case kindBPE:
		if opts.AddSpecial && t.addBOS {
			out = append(out, t.bos)
		}
		for _, f := range frags {
			if f.tok >= 0 {
				out = append(out, f.tok)
				continue
			}
			out = t.bpeEncode(text[f.lo:f.hi], out)
		}
		if opts.AddSpecial && t.addEOS {
			out = append(out, t.eos)
		}
	}
	return out, nil
}

// partition cuts special tokens out of the text, longest token first, as
// llama.cpp's tokenizer_st_partition does. Control and unknown tokens are
// only recognised when parseSpecial is set; user-defined tokens always are.
func (t *Tokenizer) partition(text string, parseSpecial bool) []fragment {
	if text == "" {
		return nil
	}
	frags := []fragment{{tok: NoToken, lo: 0, hi: len(text)}}
	for _, id := range t.special {
		if !parseSpecial && t.attrs[id]&(attrControl|attrUnknown) != 0 {
			continue
		}
		tok := t.tokens[id]
		var next []fragment
		changed := false
		for _, f := range frags {
			if f.tok >= 0 {
				next = append(next, f)
				continue
			}
			lo := f.lo
			for lo < f.hi {
				k := strings.Index(text[lo:f.hi], tok)
				if k < 0 {
					break
				}
				changed = true
				if k > 0 {
					next = append(next, fragment{tok: NoToken, lo: lo, hi: lo + k})
				}
				next = append(next, fragment{tok: id})
				lo += k + len(tok)
			}
			if lo < f.hi {
				next = append(next, fragment{tok: NoToken, lo: lo, hi: f.hi})
			}
		}
		if changed {
			frags = next
		}
	}
	return frags
}

// spaceEsc is U+2581 (LOWER ONE EIGHTH BLOCK), SentencePiece's escaped space.
const spaceEsc = "\u2581"

func appendEscaped(dst []byte, s string) []byte {
	for {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:i]...)
		dst = append(dst, spaceEsc...)
		s = s[i+1:]
	}
}
