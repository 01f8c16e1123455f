package consent

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// runeClass says what the sanitiser does with one code point.
type runeClass uint8

const (
	classKeep  runeClass = iota
	classDrop            // controls, format chars, private use, unassigned, invalid UTF-8
	classBlank           // space, tab, NBSP, ideographic space, any Zs
	classBreak           // CR, LF, U+2028, U+2029
)

// bmpClass caches classifySlow for the Basic Multilingual Plane, built
// on first use: the Unicode table searches cost far more than the rest of
// the sanitiser.
var (
	bmpOnce  sync.Once
	bmpClass *[0x10000]runeClass
)

func classify(r rune) runeClass {
	if r >= 0 && r < 0x10000 {
		bmpOnce.Do(func() {
			t := new([0x10000]runeClass)
			for i := range t {
				t[i] = classifySlow(rune(i))
			}
			bmpClass = t
		})
		return bmpClass[r]
	}
	return classifySlow(r)
}

func classifySlow(r rune) runeClass {
	if r < 0x80 { // ASCII fast path
		switch {
		case r == '\r' || r == '\n':
			return classBreak
		case r == ' ' || r == '\t':
			return classBlank
		case r < 0x20 || r == 0x7f:
			return classDrop
		}
		return classKeep
	}
	switch {
	case r == '\u2028' || r == '\u2029':
		return classBreak
	case unicode.Is(unicode.Zs, r):
		return classBlank
	case unicode.IsGraphic(r):
		// L, M, N, P, S (Zs handled above): assigned, visible.
		return classKeep
	}
	// Cc, Cf, Cs, Co and everything unassigned (Cn, noncharacters).
	return classDrop
}

// Allowed reports whether r may appear in SingleLine output (Block output
// may also hold '\n'). Exported for tests of other packages that show
// sanitised text.
func Allowed(r rune) bool { return r == ' ' || classify(r) == classKeep }

// cleanLine maps blanks (and, when breaksAreBlanks, line breaks) to one
// space, drops forbidden code points, collapses space runs and trims.
// Invalid UTF-8 bytes (Go's form of lone surrogates) are dropped.
func cleanLine(s string, brackets bool) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r == utf8.RuneError && size == 1 {
			continue
		}
		switch classify(r) {
		case classDrop:
			continue
		case classBlank, classBreak:
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		if brackets {
			switch r {
			case '「', '」', '『', '』':
				r = '\''
			}
		}
		b.WriteRune(r)
	}
	return b.String()
}

// truncate cuts s to max code points: if longer, it keeps max-1, trims
// trailing blanks and line breaks, and appends "…".
func truncate(s string, max int) (string, bool) {
	if max <= 0 {
		return "", s != ""
	}
	if utf8.RuneCountInString(s) <= max {
		return s, false
	}
	n, cut := 0, len(s)
	for i := range s {
		if n == max-1 {
			cut = i
			break
		}
		n++
	}
	return strings.TrimRight(s[:cut], " \n") + "…", true
}

// SingleLine cleans third-party text for one line of a consent card
// (spec §5.5): drops ISO controls, Unicode format characters (zero-width
// chars, BOM, every bidi control), lone surrogates (invalid UTF-8 in Go),
// private-use and unassigned code points; turns every blank and line
// break into one space, collapses runs and trims; replaces 「」『』 with
// "'" because those brackets frame third-party text in the card's own
// strings; and cuts to max code points (max-1 plus "…").
func SingleLine(s string, max int) string {
	out, _ := singleLine(s, max)
	return out
}

func singleLine(s string, max int) (string, bool) {
	return truncate(cleanLine(s, true), max)
}

// Block cleans multi-line third-party text (tool arguments) like
// SingleLine but keeps line breaks (CR, LF, CRLF, U+2028, U+2029 become
// "\n"), trims each line, collapses runs of empty lines to one and drops
// trailing empty lines. Brackets are kept. It cuts to max code points the
// same way.
func Block(s string, max int) string {
	out, _ := block(s, max)
	return out
}

func block(s string, max int) (string, bool) {
	var lines []string
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || classify(r) != classBreak {
			i += size
			continue
		}
		lines = append(lines, s[start:i])
		i += size
		if r == '\r' && i < len(s) && s[i] == '\n' {
			i++ // CRLF is one break
		}
		start = i
	}
	lines = append(lines, s[start:])
	var b strings.Builder
	b.Grow(len(s))
	empty := 0 // empty lines seen since the last written non-empty one
	wrote := false
	for _, l := range lines {
		c := cleanLine(l, false)
		if c == "" {
			empty++
			continue
		}
		if wrote || empty > 0 {
			if wrote {
				b.WriteByte('\n')
			}
			if empty > 0 {
				b.WriteByte('\n')
			}
		}
		empty = 0
		wrote = true
		b.WriteString(c)
	}
	return truncate(b.String(), max)
}
