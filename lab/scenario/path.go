package scenario

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits of the JSON path language.
const (
	MaxPathLen      = 1024
	maxPathSegments = 64
	maxFilterDepth  = 8
	// maxSelected bounds the values one path may select, so that a
	// wildcard over a huge dump cannot exhaust memory.
	maxSelected = 100000
)

// Path is a parsed JSON path. The language:
//
//	path    := ["$"] segment*
//	segment := "." KEY | ".*" | "[" INT "]" | "[*]" | "[" STRING "]" | "[?" filter "]"
//	filter  := rel [op LITERAL]
//	rel     := "@" segment* | segment+ | KEY segment*
//	op      := "==" | "!=" | "<" | "<=" | ">" | ">=" | "=~"
//
// KEY is [A-Za-z0-9_-]+; STRING and LITERAL are JSON literals. A negative
// index counts from the end. * selects every element of an array, or
// every value of an object in key order. A filter keeps the elements (or
// object values) for which rel selects a value that compares true with
// the literal (=~ matches a regular expression), or, without an
// operator, for which rel selects a value that is not null.
type Path struct {
	src  string
	segs []segment
}

type segKind int

const (
	segKey segKind = iota
	segIndex
	segAll
	segFilter
)

type segment struct {
	kind  segKind
	key   string
	index int
	f     *filter
}

type filter struct {
	rel Path
	op  string
	lit any
	re  *regexp.Regexp
}

// PathError is a path that does not parse; Col is 1-based.
type PathError struct {
	Path string
	Col  int
	Msg  string
}

func (e *PathError) Error() string {
	return fmt.Sprintf("path %q, column %d: %s", clip(e.Path, 60), e.Col, e.Msg)
}

// String returns the path as written.
func (p Path) String() string { return p.src }

// IsZero reports whether p is the empty path (the whole value).
func (p Path) IsZero() bool { return len(p.segs) == 0 }

// ParsePath parses a JSON path.
func ParsePath(s string) (Path, error) {
	if len(s) > MaxPathLen {
		return Path{}, &PathError{Path: s, Col: 1, Msg: fmt.Sprintf("longer than %d bytes", MaxPathLen)}
	}
	if !utf8.ValidString(s) {
		return Path{}, &PathError{Path: s, Col: 1, Msg: "not valid UTF-8"}
	}
	p := &pathParser{s: s}
	p.skipSpace()
	if p.peek() == '$' {
		p.i++
	}
	path, err := p.segments(0, false)
	if err != nil {
		return Path{}, err
	}
	p.skipSpace()
	if p.i < len(p.s) {
		return Path{}, p.errf("unexpected %q", p.s[p.i:])
	}
	path.src = s
	return path, nil
}

type pathParser struct {
	s string
	i int
}

func (p *pathParser) errf(format string, args ...any) error {
	return &PathError{Path: p.s, Col: p.i + 1, Msg: fmt.Sprintf(format, args...)}
}

func (p *pathParser) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *pathParser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func isKeyByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

func (p *pathParser) key() (string, error) {
	start := p.i
	for p.i < len(p.s) && isKeyByte(p.s[p.i]) {
		p.i++
	}
	if p.i == start {
		return "", p.errf("want a key")
	}
	return p.s[start:p.i], nil
}

// segments parses segments until the end, or (inFilter) an operator or "]".
func (p *pathParser) segments(depth int, inFilter bool) (Path, error) {
	var path Path
	for p.i < len(p.s) {
		if len(path.segs) >= maxPathSegments {
			return Path{}, p.errf("more than %d segments", maxPathSegments)
		}
		switch c := p.s[p.i]; c {
		case '.':
			p.i++
			if p.peek() == '*' {
				p.i++
				path.segs = append(path.segs, segment{kind: segAll})
				continue
			}
			k, err := p.key()
			if err != nil {
				return Path{}, err
			}
			path.segs = append(path.segs, segment{kind: segKey, key: k})
		case '[':
			p.i++
			seg, err := p.bracket(depth)
			if err != nil {
				return Path{}, err
			}
			path.segs = append(path.segs, seg)
		default:
			if inFilter {
				return path, nil
			}
			if c == ' ' || c == '\t' {
				return path, nil
			}
			return Path{}, p.errf("want . or [, got %q", string(c))
		}
	}
	return path, nil
}

func (p *pathParser) bracket(depth int) (segment, error) {
	p.skipSpace()
	switch c := p.peek(); {
	case c == '*':
		p.i++
		if err := p.close(); err != nil {
			return segment{}, err
		}
		return segment{kind: segAll}, nil
	case c == '"':
		lit, err := p.literal()
		if err != nil {
			return segment{}, err
		}
		s, ok := lit.(string)
		if !ok {
			return segment{}, p.errf("want a quoted key")
		}
		if err := p.close(); err != nil {
			return segment{}, err
		}
		return segment{kind: segKey, key: s}, nil
	case c == '-' || c >= '0' && c <= '9':
		start := p.i
		p.i++
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		n, err := strconv.Atoi(p.s[start:p.i])
		if err != nil || n > 1<<30 || n < -(1<<30) {
			p.i = start
			return segment{}, p.errf("bad index")
		}
		if err := p.close(); err != nil {
			return segment{}, err
		}
		return segment{kind: segIndex, index: n}, nil
	case c == '?':
		p.i++
		if depth >= maxFilterDepth {
			return segment{}, p.errf("filters nested deeper than %d", maxFilterDepth)
		}
		f, err := p.filter(depth + 1)
		if err != nil {
			return segment{}, err
		}
		if err := p.close(); err != nil {
			return segment{}, err
		}
		return segment{kind: segFilter, f: f}, nil
	}
	return segment{}, p.errf("want an index, *, a quoted key or ?filter")
}

func (p *pathParser) close() error {
	p.skipSpace()
	if p.peek() != ']' {
		return p.errf("want ]")
	}
	p.i++
	return nil
}

var ops = []string{"==", "!=", "<=", ">=", "=~", "<", ">"}

func (p *pathParser) filter(depth int) (*filter, error) {
	p.skipSpace()
	start := p.i
	f := &filter{}
	switch c := p.peek(); {
	case c == '@':
		p.i++
	case isKeyByte(c):
		k, err := p.key()
		if err != nil {
			return nil, err
		}
		f.rel.segs = append(f.rel.segs, segment{kind: segKey, key: k})
	case c == '.' || c == '[':
	default:
		return nil, p.errf("want a relative path (@, .key or key)")
	}
	rest, err := p.segments(depth, true)
	if err != nil {
		return nil, err
	}
	f.rel.segs = append(f.rel.segs, rest.segs...)
	f.rel.src = strings.TrimSpace(p.s[start:p.i])
	p.skipSpace()
	if p.peek() == ']' {
		return f, nil
	}
	for _, op := range ops {
		if strings.HasPrefix(p.s[p.i:], op) {
			f.op = op
			p.i += len(op)
			break
		}
	}
	if f.op == "" {
		return nil, p.errf("want an operator (== != < <= > >= =~) or ]")
	}
	p.skipSpace()
	litCol := p.i
	lit, err := p.literal()
	if err != nil {
		return nil, err
	}
	f.lit = lit
	if f.op == "=~" {
		s, ok := lit.(string)
		if !ok {
			p.i = litCol
			return nil, p.errf("=~ takes a quoted regular expression")
		}
		re, err := regexp.Compile(s)
		if err != nil {
			p.i = litCol
			return nil, p.errf("bad regular expression: %v", err)
		}
		f.re = re
	}
	return f, nil
}

// literal reads one JSON literal.
func (p *pathParser) literal() (any, error) {
	start := p.i
	if p.peek() == '"' {
		p.i++
		for p.i < len(p.s) {
			switch p.s[p.i] {
			case '\\':
				p.i += 2
				continue
			case '"':
				p.i++
				var s string
				if err := json.Unmarshal([]byte(p.s[start:p.i]), &s); err != nil {
					p.i = start
					return nil, p.errf("bad string literal")
				}
				return s, nil
			}
			p.i++
		}
		p.i = start
		return nil, p.errf("unterminated string")
	}
	for p.i < len(p.s) && p.s[p.i] != ']' && p.s[p.i] != ' ' {
		p.i++
	}
	word := p.s[start:p.i]
	switch word {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return nil, nil
	}
	f, err := strconv.ParseFloat(word, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		p.i = start
		return nil, p.errf("want a JSON literal (a quoted string, a number, true, false or null)")
	}
	return f, nil
}

// Select returns the values p selects in v (JSON values as decoded by
// encoding/json into any), in document order.
func (p Path) Select(v any) []any {
	cur := []any{v}
	for _, s := range p.segs {
		var next []any
		for _, x := range cur {
			next = s.apply(x, next)
			if len(next) > maxSelected {
				next = next[:maxSelected]
				break
			}
		}
		cur = next
		if len(cur) == 0 {
			break
		}
	}
	return cur
}

func (s segment) apply(x any, out []any) []any {
	switch s.kind {
	case segKey:
		if m, ok := x.(map[string]any); ok {
			if v, ok := m[s.key]; ok {
				out = append(out, v)
			}
		}
	case segIndex:
		if l, ok := x.([]any); ok {
			i := s.index
			if i < 0 {
				i += len(l)
			}
			if i >= 0 && i < len(l) {
				out = append(out, l[i])
			}
		}
	case segAll:
		out = append(out, children(x)...)
	case segFilter:
		for _, c := range children(x) {
			if s.f.holds(c) {
				out = append(out, c)
			}
		}
	}
	return out
}

// children are an array's elements or an object's values in key order.
func children(x any) []any {
	switch t := x.(type) {
	case []any:
		return t
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out := make([]any, len(keys))
		for i, k := range keys {
			out[i] = t[k]
		}
		return out
	}
	return nil
}

func (f *filter) holds(x any) bool {
	for _, v := range f.rel.Select(x) {
		if f.op == "" {
			if v != nil {
				return true
			}
			continue
		}
		if compare(f.op, v, f.lit, f.re) {
			return true
		}
	}
	return false
}

// compare applies a filter operator.
func compare(op string, v, lit any, re *regexp.Regexp) bool {
	switch op {
	case "==":
		return equal(v, lit)
	case "!=":
		return !equal(v, lit)
	case "=~":
		s, ok := v.(string)
		return ok && re.MatchString(s)
	}
	c, ok := order(v, lit)
	if !ok {
		return false
	}
	switch op {
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	}
	return false
}

// order compares two numbers or two strings.
func order(a, b any) (int, bool) {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		if !ok {
			return 0, false
		}
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	case string:
		y, ok := b.(string)
		if !ok {
			return 0, false
		}
		return strings.Compare(x, y), true
	}
	return 0, false
}

// equal compares JSON values; numbers by value.
func equal(a, b any) bool {
	return reflect.DeepEqual(normalize(a), normalize(b))
}

// normalize turns Go numbers of any type into float64, recursively, so
// values decoded by different means compare.
func normalize(v any) any {
	switch t := v.(type) {
	case int:
		return float64(t)
	case int64:
		return float64(t)
	case json.Number:
		f, err := t.Float64()
		if err != nil {
			return t.String()
		}
		return f
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = normalize(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = normalize(e)
		}
		return out
	}
	return v
}
