package consent

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestSingleLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		max      int
		want     string
	}{
		{"plain", "Create alarm", 80, "Create alarm"},
		{"trim and collapse", "  a \t\t b  ", 80, "a b"},
		{"newlines become spaces", "line1\nline2\r\nline3\rline4", 80, "line1 line2 line3 line4"},
		{"unicode line separators", "a\u2028b\u2029c", 80, "a b c"},
		{"all blanks are one space", "a\u00a0b\u3000c\u2003d\u202fe\u205ff\u1680g", 80, "a b c d e f g"},
		{"C0 controls dropped", "a\x00b\x07c\x1bd\x7fe", 80, "abcde"},
		{"C1 controls dropped, NEL too", "a\u0085b\u009bc", 80, "abc"},
		{"VT and FF are controls, dropped", "a\vb\fc", 80, "abc"},
		{"zero-width and BOM dropped", "a\u200bb\u200cc\u200dd\ufeffe\u2060f\u00adg", 80, "abcdefg"},
		{"bidi embeddings and overrides dropped", "a\u202ab\u202bc\u202cd\u202de\u202ef", 80, "abcdef"},
		{"bidi isolates dropped", "a\u2066b\u2067c\u2068d\u2069e", 80, "abcde"},
		{"bidi marks dropped", "a\u200eb\u200fc\u061cd", 80, "abcd"},
		{"tag characters dropped", "a\U000E0001\U000E0041b", 80, "ab"},
		{"private use dropped", "a\ue000b\U000F0000c\U0010FFFDd", 80, "abcd"},
		{"unassigned and noncharacters dropped", "a\u0378b\uffffc\ufdd0d\U0001FFFEe", 80, "abcde"},
		{"invalid UTF-8 (lone surrogates) dropped", "a\xed\xa0\x80b\xffc", 80, "abc"},
		{"real U+FFFD kept", "a\ufffdb", 80, "a\ufffdb"},
		{"brackets replaced", "「x」『y』", 80, "'x''y'"},
		{"CJK and emoji kept", "笔记 😀 é", 80, "笔记 😀 é"},
		{"combining marks kept", "e\u0301", 80, "e\u0301"},
		{"only junk", "\u200b\u202e \t\n", 80, ""},
		{"fits exactly", "abcde", 5, "abcde"},
		{"cut keeps max-1 and adds ellipsis", "abcdef", 5, "abcd…"},
		{"cut by code points", "😀😀😀😀😀😀", 3, "😀😀…"},
		{"cut trims the end", "ab  cdefgh", 4, "ab…"},
		{"max 1", "abc", 1, "…"},
		{"max 0", "abc", 0, ""},
		{"dropped chars do not count", "a\u200bb\u200bc", 3, "abc"},
	}
	for _, tt := range tests {
		if got := SingleLine(tt.in, tt.max); got != tt.want {
			t.Errorf("%s: SingleLine(%q, %d) = %q, want %q", tt.name, tt.in, tt.max, got, tt.want)
		}
	}
}

// TestClassifyTable: the cached BMP table agrees with the slow path.
func TestClassifyTable(t *testing.T) {
	t.Parallel()
	for r := rune(0); r < 0x10000; r++ {
		if classify(r) != classifySlow(r) {
			t.Fatalf("%U: table %d, slow %d", r, classify(r), classifySlow(r))
		}
	}
}

func TestBlock(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		max      int
		want     string
	}{
		{"single line", "a  b", 100, "a b"},
		{"line breaks kept", "a\nb\r\nc\rd\u2028e\u2029f", 100, "a\nb\nc\nd\ne\nf"},
		{"CRLF is one break", "a\r\n\r\nb", 100, "a\n\nb"},
		{"lines trimmed", "  a  \n\t b \t", 100, "a\nb"},
		{"empty runs collapse to one", "a\n\n\n\n b", 100, "a\n\nb"},
		{"blank-only lines are empty", "a\n \t \n\u3000\nb", 100, "a\n\nb"},
		{"trailing empties dropped", "a\n\n\n  \n", 100, "a"},
		{"a leading empty line collapses to one", "\n\n\na", 100, "\na"},
		{"brackets kept in blocks", "「x」", 100, "「x」"},
		{"controls and bidi dropped", "a\u202e\x00b\n\u200bc", 100, "ab\nc"},
		{"cut", "abc\ndef", 5, "abc…"},
		{"cut counts the newline", "ab\ncdef", 5, "ab\nc…"},
		{"cut trims a trailing newline", "abc\n\ndef", 5, "abc…"},
		{"empty", "", 10, ""},
	}
	for _, tt := range tests {
		if got := Block(tt.in, tt.max); got != tt.want {
			t.Errorf("%s: Block(%q, %d) = %q, want %q", tt.name, tt.in, tt.max, got, tt.want)
		}
	}
}

// checkClean asserts the sanitiser's guarantees on one output.
func checkClean(t *testing.T, out string, max int, multiLine bool) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("invalid UTF-8 in %q", out)
	}
	if n := utf8.RuneCountInString(out); n > max {
		t.Fatalf("%d code points > %d: %q", n, max, out)
	}
	for _, r := range out {
		switch {
		case r == '\n' && multiLine:
		case r == ' ':
		case r == '…':
		case unicode.Is(unicode.Cc, r), unicode.Is(unicode.Cf, r), unicode.Is(unicode.Co, r), unicode.Is(unicode.Cs, r):
			t.Fatalf("forbidden %U in %q", r, out)
		case unicode.IsSpace(r), r == '\u2028', r == '\u2029':
			t.Fatalf("blank %U not mapped to space in %q", r, out)
		case !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S):
			t.Fatalf("unassigned %U in %q", r, out)
		case !multiLine && strings.ContainsRune("「」『』", r):
			t.Fatalf("bracket %U in single line %q", r, out)
		}
	}
	lines := []string{out}
	if multiLine {
		lines = strings.Split(out, "\n")
		if strings.HasSuffix(out, "\n") || strings.Contains(out, "\n\n\n") {
			t.Fatalf("empty lines not collapsed/dropped: %q", out)
		}
	}
	for _, l := range lines {
		if strings.HasPrefix(l, " ") || strings.HasSuffix(l, " ") || strings.Contains(l, "  ") {
			t.Fatalf("line not trimmed/collapsed: %q", l)
		}
	}
}

// FuzzSanitize: for any input and limit, SingleLine and Block never emit
// a forbidden character, never exceed the limit, and are idempotent.
func FuzzSanitize(f *testing.F) {
	for _, s := range []string{
		"plain", "a\u202eb", "「x」\n\n\n y", "\xed\xa0\x80", "😀😀😀", "a\r\n\r\n\r\nb", "\u2028\u2029",
		strings.Repeat("笔记 ", 30), "\ue000\U000E0041\ufeff", "a\u00a0\u3000b",
	} {
		f.Add(s, 10)
		f.Add(s, 600)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 1 || max > 5000 {
			max = 1 + (max%5000+5000)%5000
		}
		one := SingleLine(s, max)
		checkClean(t, one, max, false)
		if again := SingleLine(one, max); again != one {
			t.Fatalf("SingleLine not idempotent: %q → %q", one, again)
		}
		blk := Block(s, max)
		checkClean(t, blk, max, true)
		if again := Block(blk, max); again != blk {
			t.Fatalf("Block not idempotent: %q → %q", blk, again)
		}
	})
}
