package chars

import (
	"strings"
	"testing"
	"unicode/utf16"
)

func TestLenAndCut(t *testing.T) {
	t.Parallel()
	const g = "𝄞" // U+1D11E: two units
	tests := []struct {
		s       string
		n       int
		wantLen int
		wantCut string
	}{
		{"", 3, 0, ""},
		{"abc", 2, 3, "ab"},
		{"abc", 5, 3, "abc"},
		{"é€", 1, 2, "é"},
		{"a" + g + "b", 1, 4, "a"},
		{"a" + g + "b", 2, 4, "a"}, // never half a surrogate pair
		{"a" + g + "b", 3, 4, "a" + g},
		{g, 0, 2, ""},
		{"\xff\xfe", 1, 2, "\xff"}, // invalid bytes count one each
	}
	for _, tc := range tests {
		if got := Len(tc.s); got != tc.wantLen {
			t.Errorf("Len(%q) = %d, want %d", tc.s, got, tc.wantLen)
		}
		if got := Cut(tc.s, tc.n); got != tc.wantCut {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.wantCut)
		}
	}
}

func TestSplit(t *testing.T) {
	t.Parallel()
	g := "𝄞"
	tests := []struct {
		s    string
		n    int
		want []string
	}{
		{"", 4, nil},
		{"abcdef", 4, []string{"abcd", "ef"}},
		{"abc" + g + "d", 4, []string{"abc", g + "d"}},
		{g + g, 1, []string{g, g}},
	}
	for _, tc := range tests {
		got := Split(tc.s, tc.n)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("Split(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestFirstLine(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", ""},
		{"  \n\t\nHello world \nsecond", "Hello world"},
		{strings.Repeat("x", 100), strings.Repeat("x", 80)},
		{"\r\n  Title\r\n", "Title"},
	}
	for _, tc := range tests {
		if got := FirstLine(tc.in, 80); got != tc.want {
			t.Errorf("FirstLine(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// FuzzSplit checks the promises callers rely on: pieces rejoin to the
// input, each is within the limit unless it is a single rune, and no piece
// starts or ends inside a surrogate pair.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"", "abc", "𝄞𝄞x", "\xff\xfe\xfd", "日本語テキスト"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n <= 0 || n > 1<<16 {
			return
		}
		parts := Split(s, n)
		if strings.Join(parts, "") != s {
			t.Fatalf("pieces do not rejoin: %q", parts)
		}
		total := 0
		for _, p := range parts {
			l := Len(p)
			total += l
			if l > n && len([]rune(p)) != 1 {
				t.Fatalf("piece %q has %d units > %d", p, l, n)
			}
			if p == "" {
				t.Fatal("empty piece")
			}
		}
		if total != Len(s) {
			t.Fatalf("units %d != %d", total, Len(s))
		}
		if want := len(utf16.Encode([]rune(s))); Len(s) != want {
			t.Fatalf("Len = %d, utf16 = %d", Len(s), want)
		}
	})
}
