package viz

import "strings"

// The SVG pictures that viz lays out itself (the liveness chart and the
// interference matrix) must size their canvas and columns to their text,
// and SVG has no layout engine: a title longer than the canvas is simply
// cut off. TextWidth estimates how wide a browser draws a string from the
// advance widths of Helvetica (Adobe's published AFM metrics, which Arial
// and Liberation Sans, the fonts browsers substitute for it, share), so the
// pictures leave room for their text and the tests can check that no text
// runs outside its box with the same arithmetic.

// helvetica holds advance widths in 1/1000 em of the printable ASCII
// characters ' ' (32) to '~' (126): regular, then bold.
var helvetica = [2][95]uint16{{
	278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, // ' ' .. '/'
	556, 556, 556, 556, 556, 556, 556, 556, 556, 556, // 0-9
	278, 278, 584, 584, 584, 556, 1015, // : ; < = > ? @
	667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, // A-M
	722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, // N-Z
	278, 278, 278, 469, 556, 333, // [ \ ] ^ _ `
	556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, // a-m
	556, 556, 556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, // n-z
	334, 260, 334, 584, // { | } ~
}, {
	278, 333, 474, 556, 556, 889, 722, 238, 333, 333, 389, 584, 278, 333, 278, 278,
	556, 556, 556, 556, 556, 556, 556, 556, 556, 556,
	333, 333, 584, 584, 584, 611, 975,
	722, 722, 722, 722, 667, 611, 778, 722, 278, 556, 722, 611, 833,
	722, 778, 667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611,
	333, 278, 333, 584, 556, 333,
	556, 611, 556, 611, 556, 333, 611, 611, 278, 278, 556, 278, 889,
	611, 611, 611, 611, 389, 556, 333, 611, 556, 778, 556, 556, 500,
	389, 280, 389, 584,
}}

// wide is the width of characters outside printable ASCII: an em, which
// over-estimates most of them (·, ×, −) and matches the widest (…, →).
const wide = 1000

// TextWidth returns the width in pixels of s drawn in Helvetica (or Arial)
// at size pixels, bold or not: the sum of the characters' advance widths.
// It is what the liveness chart and the interference matrix use to size
// their canvas, title lines and label columns.
func TextWidth(s string, size float64, bold bool) float64 {
	b := 0
	if bold {
		b = 1
	}
	var units int
	for _, r := range s {
		if r >= ' ' && r <= '~' {
			units += int(helvetica[b][r-' '])
		} else {
			units += wide
		}
	}
	return float64(units) * size / 1000
}

// wrapText breaks s into lines no wider than width (at size, bold or not),
// preferring to break after ", " and then at spaces; a word wider than
// width is cut with an ellipsis, so that no line runs past width.
func wrapText(s string, width, size float64, bold bool) []string {
	if TextWidth(s, size, bold) <= width {
		return []string{s}
	}
	var lines []string
	for _, sep := range []string{", ", " "} {
		lines = lines[:0]
		cur := ""
		ok := true
		for _, piece := range splitAfter(s, sep) {
			if cur != "" && TextWidth(cur+piece, size, bold) > width {
				lines = append(lines, strings.TrimRight(cur, " "))
				cur = ""
			}
			cur += piece
			if TextWidth(strings.TrimRight(cur, " "), size, bold) > width {
				ok = false
			}
		}
		lines = append(lines, strings.TrimRight(cur, " "))
		if ok {
			return lines
		}
	}
	for i, l := range lines {
		lines[i] = clipText(l, width, size, bold)
	}
	return lines
}

// splitAfter splits s after every sep, keeping sep at the end of pieces.
func splitAfter(s, sep string) []string {
	return strings.SplitAfter(s, sep)
}

// clipText shortens s with an ellipsis until it fits width.
func clipText(s string, width, size float64, bold bool) string {
	if TextWidth(s, size, bold) <= width {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && TextWidth(string(r)+"…", size, bold) > width {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}
