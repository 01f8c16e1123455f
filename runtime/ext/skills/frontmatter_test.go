package skills

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func codes(ps []Problem) []Code {
	var out []Code
	for _, p := range ps {
		out = append(out, p.Code)
	}
	return out
}

func TestParseFrontmatter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     string
		fields map[string]string // nil = expect no fields at all
		probs  []Code
	}{
		{
			"simple",
			"---\nname: notes\ndescription: Write and find notes.\n---\n# Body\n",
			map[string]string{"name": "notes", "description": "Write and find notes."}, nil,
		},
		{
			"dot-dot-dot closes",
			"---\nname: a\ndescription: b\n...\nbody",
			map[string]string{"name": "a", "description": "b"}, nil,
		},
		{
			"BOM and CRLF",
			"\uFEFF---\r\nname: a\r\ndescription: b c\r\n---\r\n",
			map[string]string{"name": "a", "description": "b c"}, nil,
		},
		{
			"delimiters may have trailing blanks",
			"--- \nname: a\ndescription: b\n---\t\n",
			map[string]string{"name": "a", "description": "b"}, nil,
		},
		{
			"comments",
			"---\n# a comment\nname: a # trailing comment\ndescription: issue#7 stays # but this goes\n---\n",
			map[string]string{"name": "a", "description": "issue#7 stays"}, nil,
		},
		{
			"plain continuation lines fold",
			"---\nname: a\ndescription: first line\n  second line\n\n  after blank\n---\n",
			map[string]string{"name": "a", "description": "first line second line\nafter blank"}, nil,
		},
		{
			"value on the next line",
			"---\nname: a\ndescription:\n  starts below\n  and goes on\n---\n",
			map[string]string{"name": "a", "description": "starts below and goes on"}, nil,
		},
		{
			"single quoted",
			"---\nname: 'a'\ndescription: 'it''s # not a comment'\n---\n",
			map[string]string{"name": "a", "description": "it's # not a comment"}, nil,
		},
		{
			"single quoted multi-line",
			"---\nname: a\ndescription: 'one\n  two\n\n  three'\n---\n",
			map[string]string{"name": "a", "description": "one two\nthree"}, nil,
		},
		{
			"double quoted escapes",
			"---\nname: \"a\"\ndescription: \"tab\\there \\\"q\\\" \\u00e9\\x41\\\\ \\U0001F600\"\n---\n",
			map[string]string{"name": "a", "description": "tab\there \"q\" éA\\ 😀"}, nil,
		},
		{
			"double quoted multi-line and escaped break",
			"---\nname: a\ndescription: \"one\n  two \\\n  three\"\n---\n",
			map[string]string{"name": "a", "description": "one two three"}, nil,
		},
		{
			"literal block",
			"---\nname: a\ndescription: |\n  line 1\n    indented\n  line 3\n\n---\n",
			map[string]string{"name": "a", "description": "line 1\n  indented\nline 3\n"}, nil,
		},
		{
			"literal strip",
			"---\nname: a\ndescription: |-\n  x\n  y\n---\n",
			map[string]string{"name": "a", "description": "x\ny"}, nil,
		},
		{
			"literal keep",
			"---\nname: a\ndescription: |+\n  x\n\n\n---\n",
			map[string]string{"name": "a", "description": "x\n\n\n"}, nil,
		},
		{
			"folded block",
			"---\nname: a\ndescription: >\n  one\n  two\n\n  three\n    more indented\n  four\n---\n",
			map[string]string{"name": "a", "description": "one two\nthree\n  more indented\nfour\n"}, nil,
		},
		{
			"folded strip with comment and indentation digit",
			"---\nname: a\ndescription: >-2 # comment\n   x\n  y\n---\n",
			map[string]string{"name": "a", "description": " x\ny"}, nil, // " x" is more indented: not folded
		},
		{
			"block ends at a less indented key",
			"---\ndescription: |\n  body\nname: a\n---\n",
			map[string]string{"name": "a", "description": "body\n"}, nil,
		},
		{
			"lists and nesting ignored",
			"---\nname: a\ndescription: d\ntags:\n  - x\n  - y\nmeta:\n  author: me\n  nested: { a: 1 }\nflow: [1, 2]\n---\n",
			map[string]string{"name": "a", "description": "d"}, nil,
		},
		{
			"nested description is not a scalar",
			"---\nname: a\ndescription:\n  en: hello\n---\n",
			map[string]string{"name": "a"}, []Code{MissingDescription},
		},
		{
			"first duplicate wins",
			"---\nname: first\ndescription: d\nname: second\n---\n",
			map[string]string{"name": "first", "description": "d"}, []Code{DuplicateKey},
		},
		{
			"duplicate of a non-scalar still counts",
			"---\nname:\n  - x\nname: later\ndescription: d\n---\n",
			map[string]string{"description": "d"}, []Code{DuplicateKey, MissingName},
		},
		{
			"unclosed double quote",
			"---\nname: \"a\ndescription: d\n---\n",
			map[string]string{"description": "d"}, []Code{UnclosedQuote, MissingName},
		},
		{
			"unclosed single quote",
			"---\nname: a\ndescription: 'oops\n---\n",
			map[string]string{"name": "a"}, []Code{UnclosedQuote, MissingDescription},
		},
		{
			"quoted key",
			"---\n\"name\": a\n'description': b\n---\n",
			map[string]string{"name": "a", "description": "b"}, nil,
		},
		{
			"colon inside value",
			"---\nname: a\ndescription: see https://example.com: it works\n---\n",
			map[string]string{"name": "a", "description": "see https://example.com: it works"}, nil,
		},
		{
			"null and empty",
			"---\nname: a\ndescription:\n---\n",
			map[string]string{"name": "a"}, []Code{MissingDescription},
		},
		{
			"explicit empty string",
			"---\nname: a\ndescription: \"\"\n---\n",
			map[string]string{"name": "a", "description": ""}, nil,
		},
		{"missing both", "---\nother: x\n---\n", map[string]string{"other": "x"}, []Code{MissingName, MissingDescription}},
		{"no frontmatter", "# Title\nname: a\n", nil, []Code{NoFrontmatter}},
		{"leading blank line", "\n---\nname: a\n---\n", nil, []Code{NoFrontmatter}},
		{"unclosed", "---\nname: a\ndescription: b\n", nil, []Code{Unclosed}},
		{"empty file", "", nil, []Code{NoFrontmatter}},
		{"NUL byte", "---\nname: a\x00\n---\n", nil, []Code{NotText}},
		{"invalid UTF-8", "---\nname: \xff\n---\n", nil, []Code{NotText}},
	}
	for _, tt := range tests {
		fm, ps := ParseFrontmatter([]byte(tt.in))
		if got := codes(ps); !slices.Equal(got, tt.probs) {
			t.Errorf("%s: problems %v, want %v", tt.name, got, tt.probs)
		}
		if tt.fields == nil {
			if len(fm.Fields) != 0 {
				t.Errorf("%s: fields %q", tt.name, fm.Fields)
			}
			continue
		}
		for k, want := range tt.fields {
			if got, ok := fm.Fields[k]; !ok || got != want {
				t.Errorf("%s: %s = %q (%v), want %q", tt.name, k, got, ok, want)
			}
		}
		for k := range fm.Fields {
			if _, ok := tt.fields[k]; !ok {
				t.Errorf("%s: unexpected field %s = %q", tt.name, k, fm.Fields[k])
			}
		}
	}
}

func TestFrontmatterProblemLines(t *testing.T) {
	t.Parallel()
	_, ps := ParseFrontmatter([]byte("---\nname: a\ndescription: 'x\nname: b\n---\n"))
	want := []Problem{{Code: UnclosedQuote, Line: 3}, {Code: DuplicateKey, Line: 4}, {Code: MissingDescription}}
	if len(ps) != len(want) {
		t.Fatalf("problems %v", ps)
	}
	for i := range want {
		if ps[i].Code != want[i].Code || ps[i].Line != want[i].Line || ps[i].Message == "" {
			t.Errorf("problem %d: %+v, want %+v", i, ps[i], want[i])
		}
	}
}

func TestFrontmatterReadLimit(t *testing.T) {
	t.Parallel()
	head := "---\nname: a\ndescription: b\n"
	pad := strings.Repeat("# padding\n", MaxFrontmatterBytes/10+1)
	inside := head + pad[:MaxFrontmatterBytes-len(head)-5] + "\n---\n"
	if len(inside) != MaxFrontmatterBytes {
		t.Fatalf("setup: %d bytes", len(inside))
	}
	if _, ps := ParseFrontmatter([]byte(inside + "body")); len(ps) != 0 {
		t.Errorf("closing line within the limit: %v", ps)
	}
	outside := head + pad[:MaxFrontmatterBytes-len(head)-1] + "\n---\n"
	if _, ps := ParseFrontmatter([]byte(outside)); !slices.Equal(codes(ps), []Code{Unclosed}) {
		t.Errorf("closing line after the limit: %v", ps)
	}
	// A NUL after the limit is not looked at; a multi-byte character
	// split by the limit is not "invalid UTF-8".
	body := strings.Repeat("é", MaxFrontmatterBytes)
	if _, ps := ParseFrontmatter([]byte("---\nname: a\ndescription: b\n---\n" + body + "\x00")); len(ps) != 0 {
		t.Errorf("content after the limit was judged: %v", ps)
	}
	odd := "---\nname: a\ndescription: b\n---\n" + strings.Repeat("x", MaxFrontmatterBytes-33-1) + "é"
	if _, ps := ParseFrontmatter([]byte(odd)); len(ps) != 0 {
		t.Errorf("split character: %v", ps)
	}
}

// FuzzParseFrontmatter: never panics or loops; values are valid UTF-8
// (escapes may produce controls, which the catalog cleans); problem codes
// are known; name and description problems agree with the fields.
func FuzzParseFrontmatter(f *testing.F) {
	for _, s := range []string{
		"---\nname: notes\ndescription: d\n---\n",
		"\uFEFF---\r\nname: 'a''b'\r\ndescription: \"x\\ty\\u00e9\"\r\n...\r\n",
		"---\ndescription: >-\n  a\n\n   b\n  c\nname: |+2\n   x\n\n---\n",
		"---\nname: \"unclosed\ndescription:\n  - a\n---",
		"---\nk: [a\n  b]\nname:\n  nested: x\n---\n",
		"---\nname: \"\\x4\\U0011FFFF\\\"\n---\n",
		"no frontmatter",
	} {
		f.Add([]byte(s))
	}
	known := map[Code]bool{NoFrontmatter: true, Unclosed: true, MissingName: true, MissingDescription: true,
		UnclosedQuote: true, DuplicateKey: true, NotText: true}
	f.Fuzz(func(t *testing.T, data []byte) {
		fm, ps := ParseFrontmatter(data)
		for _, p := range ps {
			if !known[p.Code] || p.Message == "" {
				t.Fatalf("problem %+v", p)
			}
		}
		for k, v := range fm.Fields {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				t.Fatalf("invalid UTF-8 in %q: %q", k, v)
			}
		}
		_, hasName := fm.Name()
		if hasName == slices.Contains(codes(ps), MissingName) && len(fm.Fields) > 0 {
			t.Fatalf("name %v but problems %v", hasName, ps)
		}
	})
}

// BenchmarkParseFrontmatterWorstCase is a 16 KiB frontmatter whose
// quoted value never closes across thousands of indented lines (the
// shape that rescanning made quadratic).
func BenchmarkParseFrontmatterWorstCase(b *testing.B) {
	data := []byte("---\nname: \"x\n" + strings.Repeat("  y\n", (MaxFrontmatterBytes-20)/4) + "---\n")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		ParseFrontmatter(data)
	}
}
