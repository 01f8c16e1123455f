// Package chars measures and cuts text in the unit the spec's limits are
// written in: UTF-16 code units ("chars", Java String.length). A rune
// above U+FFFF counts two; cuts never split such a rune (a surrogate
// pair), so a cut may be one unit shorter than asked.
package chars

import (
	"strings"
	"unicode/utf8"
)

// units is the UTF-16 length of r (invalid runes count one, as U+FFFD).
func units(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// Len is the length of s in UTF-16 code units.
func Len(s string) int {
	n := 0
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		n += units(r)
		i += size
	}
	return n
}

// Cut returns the longest prefix of s that is at most n units long.
func Cut(s string, n int) string {
	if n <= 0 {
		return ""
	}
	used := 0
	for i := 0; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		u := units(r)
		if used+u > n {
			return s[:i]
		}
		used += u
		i += size
	}
	return s
}

// Split cuts s into pieces of at most n units each (n > 0), in order;
// joined they give s back. An empty s gives no pieces.
func Split(s string, n int) []string {
	if n <= 0 {
		panic("chars: Split with n <= 0")
	}
	var out []string
	for s != "" {
		p := Cut(s, n)
		if p == "" {
			// n == 1 and a two-unit rune: it cannot be split, send it whole.
			_, size := utf8.DecodeRuneInString(s)
			p = s[:size]
		}
		out = append(out, p)
		s = s[len(p):]
	}
	return out
}

// FirstLine returns the first line of s that is not blank, trimmed and
// cut to at most n units ("" when every line is blank).
func FirstLine(s string, n int) string {
	for line := range strings.Lines(s) {
		if t := strings.TrimSpace(line); t != "" {
			return Cut(t, n)
		}
	}
	return ""
}
