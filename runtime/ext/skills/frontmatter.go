package skills

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxFrontmatterBytes is how much of a SKILL.md is read for its
// frontmatter (spec §4.10).
const MaxFrontmatterBytes = 16384

// Code is a skill problem code, recorded per plugin for the plugin page;
// a problem never breaks other skills.
type Code string

const (
	NoFrontmatter      Code = "NO_FRONTMATTER"
	Unclosed           Code = "UNCLOSED"
	MissingName        Code = "MISSING_NAME"
	MissingDescription Code = "MISSING_DESCRIPTION"
	UnclosedQuote      Code = "UNCLOSED_QUOTE"
	DuplicateKey       Code = "DUPLICATE_KEY"
	NotText            Code = "NOT_TEXT"
	// FileMissing and Unreadable are for the caller that reads the file.
	FileMissing Code = "FILE_MISSING"
	Unreadable  Code = "UNREADABLE"
	// InvalidName: neither the frontmatter name nor the directory name is
	// a valid skill name; the skill is skipped.
	InvalidName Code = "INVALID_NAME"
)

// Problem is one frontmatter problem. Line is 1-based within the file
// (0 when it concerns the whole file).
type Problem struct {
	Code    Code   `json:"code"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

// Frontmatter holds the top-level scalar values of a SKILL.md
// frontmatter. Lists, nested mappings, flow collections and null values
// are not scalars and are left out; for a repeated key the first wins.
type Frontmatter struct {
	Fields map[string]string
}

// Name returns the raw "name" value.
func (f Frontmatter) Name() (string, bool) { v, ok := f.Fields["name"]; return v, ok }

// Description returns the raw "description" value.
func (f Frontmatter) Description() (string, bool) { v, ok := f.Fields["description"]; return v, ok }

// ParseFrontmatter reads the YAML frontmatter of a SKILL.md (spec §6.5):
// the file's first line is "---", the block ends at a line "---" or
// "..."; a BOM and CRLF line ends are tolerated. The subset understood:
// top-level "key: value" with plain scalars (a " #" starts a comment),
// single- and double-quoted scalars, block scalars "|" and ">" with "+"
// or "-" chomping and an optional indentation digit, and indented
// continuation lines. At most MaxFrontmatterBytes are looked at; the
// input may be the whole file.
//
// Problems: NOT_TEXT (NUL byte or invalid UTF-8), NO_FRONTMATTER,
// UNCLOSED, UNCLOSED_QUOTE, DUPLICATE_KEY, MISSING_NAME,
// MISSING_DESCRIPTION.
func ParseFrontmatter(data []byte) (Frontmatter, []Problem) {
	fm := Frontmatter{Fields: map[string]string{}}
	cut := len(data) > MaxFrontmatterBytes
	if cut {
		data = data[:MaxFrontmatterBytes]
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return fm, []Problem{{Code: NotText, Message: "SKILL.md is not a text file"}}
	}
	if cut {
		// Do not count a character split by the cut as invalid.
		for i := 0; i < utf8.UTFMax && len(data) > 0 && !utf8.Valid(data); i++ {
			data = data[:len(data)-1]
		}
	}
	if !utf8.Valid(data) {
		return fm, []Problem{{Code: NotText, Message: "SKILL.md is not valid UTF-8 text"}}
	}
	text := strings.TrimPrefix(string(data), "\uFEFF")
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	if strings.TrimRight(lines[0], " \t") != "---" {
		return fm, []Problem{{Code: NoFrontmatter, Line: 1, Message: "SKILL.md does not start with a --- frontmatter line"}}
	}
	end := -1
	for i := 1; i < len(lines); i++ {
		if l := strings.TrimRight(lines[i], " \t"); l == "---" || l == "..." {
			end = i
			break
		}
	}
	if end < 0 {
		return fm, []Problem{{Code: Unclosed, Line: 1, Message: fmt.Sprintf("the frontmatter is not closed with --- within the first %d bytes", MaxFrontmatterBytes)}}
	}
	p := &fmParser{lines: lines[1:end], fields: fm.Fields, seen: map[string]bool{}}
	p.parse()
	if _, ok := fm.Fields["name"]; !ok {
		p.problem(MissingName, 0, "the frontmatter has no name")
	}
	if _, ok := fm.Fields["description"]; !ok {
		p.problem(MissingDescription, 0, "the frontmatter has no description")
	}
	return fm, p.problems
}

type fmParser struct {
	lines    []string // frontmatter body; line i is file line i+2
	fields   map[string]string
	seen     map[string]bool
	problems []Problem
}

func (p *fmParser) problem(c Code, bodyLine int, msg string) {
	line := 0
	if bodyLine >= 0 && c != MissingName && c != MissingDescription {
		line = bodyLine + 2
	}
	p.problems = append(p.problems, Problem{Code: c, Line: line, Message: msg})
}

func indented(l string) bool { return l != "" && (l[0] == ' ' || l[0] == '\t') }

func blank(l string) bool { return strings.TrimLeft(l, " \t") == "" }

// continuation reports whether line i belongs to the value of the key
// above it: indented, or blank.
func (p *fmParser) continuation(i int) bool {
	return i < len(p.lines) && (indented(p.lines[i]) || blank(p.lines[i]))
}

func (p *fmParser) parse() {
	for i := 0; i < len(p.lines); {
		l := p.lines[i]
		if blank(l) || indented(l) || strings.HasPrefix(l, "#") || l == "-" || strings.HasPrefix(l, "- ") {
			i++ // comments, stray indented lines, top-level list items
			continue
		}
		key, rest, ok := splitKey(l)
		if !ok {
			i++
			continue
		}
		value, isScalar, next := p.value(i, rest)
		if p.seen[key] {
			p.problem(DuplicateKey, i, "a key appears more than once; the first value is used")
		} else {
			p.seen[key] = true
			if isScalar {
				p.fields[key] = value
			}
		}
		i = next
	}
}

// splitKey splits "key: rest" at the first ':' followed by a blank or the
// end of the line. A quoted key loses its quotes.
func splitKey(l string) (key, rest string, ok bool) {
	for i := 0; i < len(l); i++ {
		if l[i] != ':' || (i+1 < len(l) && l[i+1] != ' ' && l[i+1] != '\t') {
			continue
		}
		key = strings.TrimRight(l[:i], " \t")
		if len(key) >= 2 && (key[0] == '"' || key[0] == '\'') && key[len(key)-1] == key[0] {
			key = key[1 : len(key)-1]
		}
		return key, strings.TrimLeft(l[i+1:], " \t"), key != ""
	}
	return "", "", false
}

// value reads the value starting on line i (rest is what follows the
// colon) and returns it, whether it is a scalar, and the next line to read.
func (p *fmParser) value(i int, rest string) (string, bool, int) {
	switch {
	case rest == "" || strings.HasPrefix(rest, "#"):
		return p.emptyValue(i)
	case rest[0] == '"' || rest[0] == '\'':
		return p.quoted(i, rest)
	case rest[0] == '|' || rest[0] == '>':
		if v, next, ok := p.block(i, rest); ok {
			return v, true, next
		}
	case rest[0] == '[' || rest[0] == '{':
		next := i + 1
		for p.continuation(next) {
			next++
		}
		return "", false, next // flow collection: not a scalar
	}
	return p.plain(i, stripComment(rest))
}

// emptyValue: nothing after the colon. Indented lines that follow are a
// nested mapping or list (not a scalar) or a plain multi-line scalar.
func (p *fmParser) emptyValue(i int) (string, bool, int) {
	next := i + 1
	first := ""
	for p.continuation(next) {
		if first == "" && !blank(p.lines[next]) {
			first = strings.TrimLeft(p.lines[next], " \t")
		}
		next++
	}
	if first == "" {
		return "", false, next // null
	}
	if first == "-" || strings.HasPrefix(first, "- ") || strings.HasPrefix(first, "#") {
		return "", false, next
	}
	if _, _, isKey := splitKey(first); isKey {
		return "", false, next
	}
	return p.plain(i, "")
}

// stripComment cuts a plain scalar at " #" (or a tab before '#').
func stripComment(s string) string {
	for i := 1; i < len(s); i++ {
		if s[i] == '#' && (s[i-1] == ' ' || s[i-1] == '\t') {
			return strings.TrimRight(s[:i], " \t")
		}
	}
	return strings.TrimRight(s, " \t")
}

// plain folds a plain scalar with its indented continuation lines: line
// breaks become spaces, blank lines become "\n". A comment ends it.
func (p *fmParser) plain(i int, first string) (string, bool, int) {
	var b strings.Builder
	b.WriteString(first)
	newlines := 0
	next := i + 1
	for p.continuation(next) {
		l := p.lines[next]
		next++
		if blank(l) {
			newlines++
			continue
		}
		t := strings.TrimLeft(l, " \t")
		if strings.HasPrefix(t, "#") {
			for p.continuation(next) {
				next++
			}
			break
		}
		t = stripComment(t)
		if b.Len() > 0 {
			if newlines > 0 {
				b.WriteString(strings.Repeat("\n", newlines))
			} else {
				b.WriteByte(' ')
			}
		}
		newlines = 0
		b.WriteString(t)
	}
	return b.String(), true, next
}

// quoted reads a single- or double-quoted scalar that may continue on
// indented lines. An unclosed quote is a problem: the value is dropped and
// only its own line is consumed, so the following keys still parse.
func (p *fmParser) quoted(i int, rest string) (string, bool, int) {
	q := rest[0]
	buf := []byte(rest[1:])
	end, esc := closingQuote(buf, q, 0, false)
	next := i + 1
	for end < 0 && p.continuation(next) {
		// Scan only what is added, so a long unclosed value stays linear.
		from := len(buf)
		buf = append(buf, '\n')
		buf = append(buf, p.lines[next]...)
		end, esc = closingQuote(buf, q, from, esc)
		next++
	}
	if end < 0 {
		p.problem(UnclosedQuote, i, "a quoted value is not closed")
		return "", false, i + 1
	}
	raw := string(buf[:end])
	if q == '\'' {
		return foldQuoted(strings.ReplaceAll(raw, "''", "'")), true, next
	}
	return unescapeDouble(raw), true, next
}

// closingQuote finds the closing quote in s[from:]: for ' a lone ' (a
// doubled ” is an escaped quote), for " one not escaped by a backslash.
// esc says whether s[from] is escaped (a backslash ended the part before);
// the returned esc says the same for the byte after s.
func closingQuote(s []byte, q byte, from int, esc bool) (int, bool) {
	for i := from; i < len(s); i++ {
		switch {
		case esc:
			esc = false
		case q == '"' && s[i] == '\\':
			esc = true
		case s[i] == q:
			if q == '\'' && i+1 < len(s) && s[i+1] == '\'' {
				i++
				continue
			}
			return i, false
		}
	}
	return -1, esc
}

// foldQuoted applies flow folding to a quoted scalar's raw text: a line
// break with the blanks around it is one space; n blank lines are n "\n".
func foldQuoted(s string) string {
	if !strings.Contains(s, "\n") {
		return s
	}
	parts := strings.Split(s, "\n")
	var b strings.Builder
	b.WriteString(strings.TrimRight(parts[0], " \t"))
	empties := 0
	for i := 1; i < len(parts); i++ {
		part := strings.TrimLeft(parts[i], " \t")
		if i < len(parts)-1 {
			part = strings.TrimRight(part, " \t")
			if part == "" {
				empties++
				continue
			}
		}
		if empties > 0 {
			b.WriteString(strings.Repeat("\n", empties))
		} else {
			b.WriteByte(' ')
		}
		empties = 0
		b.WriteString(part)
	}
	return b.String()
}

// unescapeDouble folds and unescapes a double-quoted scalar. An escaped
// line break joins the lines without a space; unknown escapes are kept.
func unescapeDouble(s string) string {
	// Escaped line breaks first: "\<newline><indent>" disappears.
	var joined strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			if s[i+1] == '\n' {
				i += 2
				for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
					i++
				}
				i--
				continue
			}
			joined.WriteByte(s[i])
			joined.WriteByte(s[i+1])
			i++
			continue
		}
		joined.WriteByte(s[i])
	}
	s = foldQuoted(joined.String())
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case '0':
			b.WriteByte(0)
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 't', '\t':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'v':
			b.WriteByte('\v')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case 'e':
			b.WriteByte(0x1b)
		case ' ', '"', '/', '\\':
			b.WriteByte(e)
		case 'N':
			b.WriteString("\u0085")
		case '_':
			b.WriteString("\u00a0")
		case 'L':
			b.WriteString("\u2028")
		case 'P':
			b.WriteString("\u2029")
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+1+n <= len(s) {
				if v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32); err == nil && utf8.ValidRune(rune(v)) {
					b.WriteRune(rune(v))
					i += n
					continue
				}
			}
			b.WriteByte('\\')
			b.WriteByte(e)
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String()
}

// block reads a block scalar: header "|" or ">", then in any order an
// optional chomping indicator ("+" keep, "-" strip) and an indentation
// digit, then an optional comment.
func (p *fmParser) block(i int, header string) (string, int, bool) {
	literal := header[0] == '|'
	chomp := byte(0)
	indent := 0
	h := header[1:]
	for k := 0; k < 2 && h != ""; k++ {
		switch c := h[0]; {
		case (c == '+' || c == '-') && chomp == 0:
			chomp = c
			h = h[1:]
		case c >= '1' && c <= '9' && indent == 0:
			indent = int(c - '0')
			h = h[1:]
		}
	}
	if h != "" && h[0] != ' ' && h[0] != '\t' {
		return "", 0, false // not a block header after all: a plain scalar
	}
	if t := strings.TrimLeft(h, " \t"); t != "" && t[0] != '#' {
		return "", 0, false
	}
	next := i + 1
	if indent == 0 {
		for k := next; k < len(p.lines); k++ {
			l := p.lines[k]
			if strings.TrimLeft(l, " ") == "" {
				continue
			}
			indent = len(l) - len(strings.TrimLeft(l, " "))
			break
		}
	}
	var content []string
	if indent > 0 {
		for next < len(p.lines) {
			l := p.lines[next]
			if strings.TrimLeft(l, " ") == "" {
				content = append(content, "")
				next++
				continue
			}
			if len(l)-len(strings.TrimLeft(l, " ")) < indent {
				break
			}
			content = append(content, l[indent:])
			next++
		}
	}
	trailing := 0
	for len(content) > 0 && content[len(content)-1] == "" {
		content = content[:len(content)-1]
		trailing++
	}
	var body string
	if literal {
		body = strings.Join(content, "\n")
	} else {
		body = foldBlock(content)
	}
	switch {
	case body == "":
		if chomp == '+' {
			body = strings.Repeat("\n", trailing)
		}
	case chomp == '-':
	case chomp == '+':
		body += "\n" + strings.Repeat("\n", trailing)
	default:
		body += "\n"
	}
	return body, next, true
}

// foldBlock folds the lines of a ">" scalar: adjacent ordinary lines are
// joined by a space, empty lines become line breaks, and more-indented
// lines keep their line breaks.
func foldBlock(lines []string) string {
	var b strings.Builder
	empties := 0
	started := false
	prevMore := false
	for _, l := range lines {
		if l == "" {
			empties++
			continue
		}
		more := l[0] == ' ' || l[0] == '\t'
		switch {
		case !started:
			b.WriteString(strings.Repeat("\n", empties))
		case !more && !prevMore && empties == 0:
			b.WriteByte(' ')
		case !more && !prevMore:
			b.WriteString(strings.Repeat("\n", empties))
		default:
			b.WriteString("\n" + strings.Repeat("\n", empties))
		}
		b.WriteString(l)
		started, prevMore, empties = true, more, 0
	}
	return b.String()
}
