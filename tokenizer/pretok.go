package tokenizer

// Pre-tokenizers for byte-level BPE. llama.cpp describes them as lists of
// regexes that are applied one after the other, each splitting the pieces
// left by the previous one into matches and the gaps between matches
// (unicode_regex_split). The regexes use look-ahead (\s+(?!\S)), which Go's
// regexp does not have, so each one is written here as a matcher: a function
// giving the length of the match that the regex would find at a position
// (0 for none), with the same ordered-alternation semantics.

// span is a half-open range of codepoint indices.
type span struct{ lo, hi int }

// matcher returns the length of the match starting at pos within [pos, end),
// or 0 if the regex does not match there.
type matcher func(cps []rune, fl []uint8, pos, end int) int

// splitAll applies one regex (as matcher m) to every span, keeping both the
// matches and the text between them, as llama.cpp's unicode_regex_split_stl
// and its custom splitters do.
func splitAll(cps []rune, fl []uint8, in []span, m matcher) []span {
	out := make([]span, 0, len(in)*2)
	for _, s := range in {
		gap := s.lo
		for p := s.lo; p < s.hi; {
			n := m(cps, fl, p, s.hi)
			if n <= 0 {
				p++
				continue
			}
			if gap < p {
				out = append(out, span{gap, p})
			}
			out = append(out, span{p, p + n})
			p += n
			gap = p
		}
		if gap < s.hi {
			out = append(out, span{gap, s.hi})
		}
	}
	return out
}

func matchers(k preKind) []matcher {
	switch k {
	case preDefault:
		// "[\p{P}\$\+<=>\^~\|]+", gpt2, "\p{N}+", "[0-9][0-9][0-9]"
		return []matcher{runOf(isPunctOrDefaultSym), matchGPT2, runOf(isNumber), matchThreeDigits}
	case preGPT2:
		return []matcher{matchGPT2}
	case preLlama3:
		return []matcher{llama3Like(3)}
	case preQwen2:
		return []matcher{llama3Like(1)}
	case preStarcoder:
		// "\p{N}", gpt2
		return []matcher{oneOf(isNumber), matchGPT2}
	case preFalcon:
		// "[\p{P}\$\+<=>\^~\|`]+", gpt2, "[0-9][0-9][0-9]"
		return []matcher{runOf(isPunctOrFalconSym), matchGPT2, matchThreeDigits}
	}
	return nil
}

func isNumber(r rune, f uint8) bool { return f&cpNumber != 0 }

func isPunctOrDefaultSym(r rune, f uint8) bool {
	if f&cpSpace == 0 && f&cpPunct != 0 {
		return true
	}
	switch r {
	case '$', '+', '<', '=', '>', '^', '~', '|':
		return true
	}
	return false
}

func isPunctOrFalconSym(r rune, f uint8) bool {
	return r == '`' || isPunctOrDefaultSym(r, f)
}

// runOf matches a non-empty run of codepoints accepted by pred ("[...]+").
func runOf(pred func(rune, uint8) bool) matcher {
	return func(cps []rune, fl []uint8, pos, end int) int {
		p := pos
		for p < end && pred(cps[p], fl[p]) {
			p++
		}
		return p - pos
	}
}

// oneOf matches a single codepoint accepted by pred ("[...]").
func oneOf(pred func(rune, uint8) bool) matcher {
	return func(cps []rune, fl []uint8, pos, end int) int {
		if pred(cps[pos], fl[pos]) {
			return 1
		}
		return 0
	}
}

// matchThreeDigits is "[0-9][0-9][0-9]" (ASCII digits only).
func matchThreeDigits(cps []rune, fl []uint8, pos, end int) int {
	if end-pos >= 3 && isDigit(cps[pos]) && isDigit(cps[pos+1]) && isDigit(cps[pos+2]) {
		return 3
	}
	return 0
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// isOther is [^\s\p{L}\p{N}].
func isOther(f uint8) bool { return f&(cpSpace|cpLetter|cpNumber) == 0 }

// matchGPT2 is GPT-2's pre-tokenizer regex
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// (llama.cpp's unicode_regex_split_custom_gpt2).
func matchGPT2(cps []rune, fl []uint8, pos, end int) int {
	c := cps[pos]
	if c == '\'' && pos+1 < end {
		switch cps[pos+1] {
		case 's', 't', 'm', 'd':
			return 2
		}
		if pos+2 < end {
			a, b := cps[pos+1], cps[pos+2]
			if (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') {
				return 3
			}
		}
	}
	start := pos // the optional leading space
	if c == ' ' {
		if pos+1 >= end {
			return matchSpaces(cps, fl, pos, end)
		}
		pos++
	}
	f := fl[pos]
	var class uint8
	switch {
	case f&cpLetter != 0:
		class = cpLetter
	case f&cpNumber != 0:
		class = cpNumber
	case isOther(f):
		p := pos
		for p < end && isOther(fl[p]) {
			p++
		}
		return p - start
	default:
		return matchSpaces(cps, fl, start, end)
	}
	p := pos
	for p < end && fl[p]&class != 0 {
		p++
	}
	return p - start
}

// matchSpaces is "\s+(?!\S)|\s+".
func matchSpaces(cps []rune, fl []uint8, pos, end int) int {
	n := 0
	for pos+n < end && fl[pos+n]&cpSpace != 0 {
		n++
	}
	if n > 1 && pos+n < end {
		return n - 1
	}
	return n
}

// llama3Like is the LLaMA 3 regex (maxDigits 3) and the Qwen2 regex
// (maxDigits 1):
//
//	(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,maxDigits}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// (llama.cpp's unicode_regex_split_custom_llama3; Qwen2's variant goes
// through std::regex in llama.cpp, with the same result).
func llama3Like(maxDigits int) matcher {
	return func(cps []rune, fl []uint8, pos, end int) int {
		c, f := cps[pos], fl[pos]
		if c == '\'' && pos+1 < end {
			switch lowerASCII(cps[pos+1]) {
			case 's', 't', 'm', 'd':
				return 2
			}
			if pos+2 < end {
				a, b := lowerASCII(cps[pos+1]), lowerASCII(cps[pos+2])
				if (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') {
					return 3
				}
			}
		}
		// [^\r\n\p{L}\p{N}]?\p{L}+
		if !(c == '\r' || c == '\n' || f&cpNumber != 0) {
			if f&cpLetter != 0 || (pos+1 < end && fl[pos+1]&cpLetter != 0) {
				p := pos + 1
				for p < end && fl[p]&cpLetter != 0 {
					p++
				}
				return p - pos
			}
		}
		// \p{N}{1,maxDigits}
		if f&cpNumber != 0 {
			p := pos
			for p < end && fl[p]&cpNumber != 0 && p-pos < maxDigits {
				p++
			}
			return p - pos
		}
		// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
		p := pos
		if c == ' ' && pos+1 < end {
			p++
		}
		if p < end && isOther(fl[p]) {
			for p < end && isOther(fl[p]) {
				p++
			}
			for p < end && (cps[p] == '\r' || cps[p] == '\n') {
				p++
			}
			return p - pos
		}
		// \s*[\r\n]+ | \s+(?!\S) | \s+
		n, lastNL := 0, -1
		for pos+n < end && fl[pos+n]&cpSpace != 0 {
			if r := cps[pos+n]; r == '\r' || r == '\n' {
				lastNL = n
			}
			n++
		}
		if lastNL >= 0 {
			return lastNL + 1
		}
		if n > 1 && pos+n < end {
			return n - 1
		}
		return n
	}
}

func lowerASCII(r rune) rune {
	if r >= 'A' && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}
