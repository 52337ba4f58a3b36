package tokenizer

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// makePiece is llama.cpp's token_to_piece(id, special = true) without
// leading-space stripping: the bytes a token stands for.
func (t *Tokenizer) makePiece(id int32) []byte {
	a := t.attrs[id]
	text := t.tokens[id]
	switch {
	case a&(attrUnknown|attrControl|attrUserDef) != 0:
		return []byte(text)
	case a&attrNormal != 0:
		if t.kind == kindSPM {
			return []byte(strings.ReplaceAll(text, spaceEsc, " "))
		}
		return decodeByteLevel(text)
	case a&attrByte != 0:
		return []byte{tokenByte(text)}
	}
	return nil // unused and undefined tokens have no text
}

// tokenByte is llama.cpp's token_to_byte: the hex value of "<0xNN>" (strtol
// of the two characters after "<0x"; 0 if they are not hex).
func tokenByte(text string) byte {
	var v byte
	for i := 3; i < 5 && i < len(text); i++ {
		c := text[i]
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return v
		}
		v = v<<4 | d
	}
	return v
}

// decodeByteLevel maps byte-level BPE text back to bytes (llama.cpp's
// llama_decode_text), marking characters outside the byte table as
// "[UNK_BYTE_0x<utf8 hex><text>]" as llama.cpp does.
func decodeByteLevel(text string) []byte {
	out := make([]byte, 0, len(text))
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		i += n
		if b, ok := runeToByte[r]; ok {
			out = append(out, b)
			continue
		}
		out = append(out, "[UNK_BYTE_0x"...)
		for _, c := range []byte(string(r)) {
			out = fmt.Appendf(out, "%02x", c)
		}
		out = append(out, text...)
		out = append(out, ']')
	}
	return out
}

// Piece returns the bytes of token id as llama.cpp's token_to_piece with
// special = true (control tokens such as "</s>" give their text; byte tokens
// give one raw byte, which may be incomplete UTF-8). It returns nil for an
// id outside the vocabulary.
func (t *Tokenizer) Piece(id int32) []byte {
	if id < 0 || int(id) >= len(t.pieces) {
		return nil
	}
	return append([]byte(nil), t.pieces[id]...)
}

// Decode concatenates the pieces of ids (see Piece): the exact bytes a
// generation loop printing each token's piece would produce. Ids outside the
// vocabulary contribute nothing. For SPM vocabularies the space that Encode
// prefixes is kept; use Detokenize to strip it as llama.cpp does.
func (t *Tokenizer) Decode(ids []int32) []byte {
	var out []byte
	for _, id := range ids {
		if id >= 0 && int(id) < len(t.pieces) {
			out = append(out, t.pieces[id]...)
		}
	}
	return out
}

// DetokenizeOptions are llama_detokenize's flags.
type DetokenizeOptions struct {
	// RemoveSpecial drops a leading BOS and a trailing EOS when the
	// vocabulary adds them.
	RemoveSpecial bool
	// UnparseSpecial renders control and unknown tokens as their text;
	// otherwise they produce nothing.
	UnparseSpecial bool
}

// Detokenize is llama_detokenize: the pieces of ids with the leading space
// of the first one removed for vocabularies that prefix one (SPM), and, for
// vocabularies that ask for it (most byte-level BPE pre-tokenizers), the
// clean-up of spaces before punctuation and contractions. It fails on ids
// outside the vocabulary.
func (t *Tokenizer) Detokenize(ids []int32, opts DetokenizeOptions) ([]byte, error) {
	for i, id := range ids {
		if id < 0 || int(id) >= len(t.tokens) {
			return nil, fmt.Errorf("tokenizer: token %d (position %d) is outside the vocabulary of %d tokens", id, i, len(t.tokens))
		}
	}
	removeSpace := t.addSpacePrefix
	if opts.RemoveSpecial && t.addBOS && len(ids) > 0 && ids[0] == t.bos {
		removeSpace = false
		ids = ids[1:]
	}
	if opts.RemoveSpecial && t.addEOS && len(ids) > 0 && ids[len(ids)-1] == t.eos {
		ids = ids[:len(ids)-1]
	}
	var text []byte
	for _, id := range ids {
		p := t.pieces[id]
		if !opts.UnparseSpecial && t.attrs[id]&(attrUnknown|attrControl) != 0 {
			p = nil
		}
		if removeSpace && len(p) > 0 && p[0] == ' ' {
			p = p[1:]
		}
		removeSpace = false
		text = append(text, p...)
	}
	if t.kind == kindBPE && t.pk.cleanSpaces {
		text = cleanSpaces(text)
	}
	return text, nil
}

// cleanSpaces is the clean_up_tokenization_spaces pass of llama_detokenize,
// done in place over the bytes in three passes exactly as llama.cpp does.
func cleanSpaces(text []byte) []byte {
	total := len(text)
	// " ?", " !", " .", " ," lose their space.
	t1 := total
	total = min(total, 1)
	for i := 1; i < t1; i++ {
		x := text[i]
		if text[i-1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',') {
			total--
		}
		text[total] = x
		total++
	}
	// " ' " loses both spaces.
	t2 := total
	total = min(total, 1)
	for i := 1; i < t2; i++ {
		x := text[i]
		if x == '\'' && i+1 < t2 && text[i-1] == ' ' && text[i+1] == ' ' {
			total--
			i++
			text[i] = 0
		}
		text[total] = x
		total++
	}
	// " 's", " 'm", " 're", " 've" lose their space.
	t3 := total
	total = min(total, 1)
	for i := 1; i < t3; i++ {
		x := text[i]
		if text[i-1] == ' ' && x == '\'' && i+1 < t3 {
			x1 := text[i+1]
			if x1 == 't' || x1 == 'd' {
				// kept
			} else if x1 == 's' || x1 == 'm' {
				total--
			} else if i+2 < t3 {
				x2 := text[i+2]
				if (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e') {
					total--
				}
			}
		}
		text[total] = x
		total++
	}
	return text[:total]
}

// StreamDecoder turns a stream of tokens into text without ever splitting a
// UTF-8 character: bytes of a character whose remaining bytes may come with
// the next tokens are held back. Everything returned by Push and Flush,
// concatenated, equals Decode of the same tokens.
type StreamDecoder struct {
	t       *Tokenizer
	pending []byte
}

// NewStreamDecoder returns a decoder for a token stream.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder { return &StreamDecoder{t: t} }

// Push adds a token and returns the bytes that are now complete: everything
// except a trailing incomplete (but so far valid) UTF-8 sequence. Bytes that
// can never become valid UTF-8 are passed through unchanged.
func (d *StreamDecoder) Push(id int32) []byte {
	if id >= 0 && int(id) < len(d.t.pieces) {
		d.pending = append(d.pending, d.t.pieces[id]...)
	}
	cut := len(d.pending)
	for i := len(d.pending) - 1; i >= 0 && i >= len(d.pending)-3; i-- {
		if utf8.RuneStart(d.pending[i]) {
			if !utf8.FullRune(d.pending[i:]) {
				cut = i
			}
			break
		}
	}
	out := append([]byte(nil), d.pending[:cut]...)
	d.pending = append(d.pending[:0], d.pending[cut:]...)
	return out
}

// Flush returns the bytes still held back (an incomplete UTF-8 sequence at
// the end of the stream) and resets the decoder.
func (d *StreamDecoder) Flush() []byte {
	out := append([]byte(nil), d.pending...)
	d.pending = d.pending[:0]
	return out
}
