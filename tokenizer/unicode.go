package tokenizer

import (
	"sync"
	"unicode"
)

// Codepoint classes used by the pre-tokenizers. They follow llama.cpp's
// unicode_cpt_flags: a codepoint belongs to exactly one general category
// (letter, number, punctuation, symbol, mark, separator, control or
// unassigned) and may in addition be White_Space.
const (
	cpLetter uint8 = 1 << iota
	cpNumber
	cpPunct
	cpSymbol
	cpMark
	cpSpace // Unicode White_Space property (the regex \s)
)

var (
	cpOnce  sync.Once
	cpTable []uint8 // flags for every codepoint 0..0x10FFFF
)

func buildCPTable() {
	t := make([]uint8, unicode.MaxRune+1)
	mark := func(rt *unicode.RangeTable, f uint8) {
		for _, r := range rt.R16 {
			for c := uint32(r.Lo); c <= uint32(r.Hi); c += uint32(r.Stride) {
				t[c] |= f
			}
		}
		for _, r := range rt.R32 {
			for c := r.Lo; c <= r.Hi; c += r.Stride {
				t[c] |= f
			}
		}
	}
	mark(unicode.L, cpLetter)
	mark(unicode.N, cpNumber)
	mark(unicode.P, cpPunct)
	mark(unicode.S, cpSymbol)
	mark(unicode.M, cpMark)
	mark(unicode.White_Space, cpSpace)
	cpTable = t
}

// cpFlags returns the class flags of a codepoint (0 for out-of-range values).
func cpFlags(r rune) uint8 {
	cpOnce.Do(buildCPTable)
	if r < 0 || int(r) >= len(cpTable) {
		return 0
	}
	return cpTable[r]
}
