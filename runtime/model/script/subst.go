package script

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Substitution templates in argument strings:
//
//	$result[N].path     N-th tool result since the last user message
//	${result[N].path}   the same, delimited, for use inside other text
//	$$                  a literal "$"
//
// The result text is parsed as JSON; path is a sequence of .key and [i].
// A string that is exactly one reference takes the referenced value with
// its JSON type; inside other text a value is inserted as a string
// (strings as they are, anything else as compact JSON).

// maxResultIndex bounds N; no turn has this many tool results.
const maxResultIndex = 1 << 20

// template is a parsed argument string.
type template struct {
	parts []part
}

// part is a literal or a reference.
type part struct {
	lit string
	ref *ref
}

type ref struct {
	n    int
	path []pathStep
	src  string // as written, for errors
}

type pathStep struct {
	key   string
	index int
	isIdx bool
}

var errLoneDollar = errors.New(`a "$" must start $$, $result[N] or ${result[N]} (write $$ for a dollar sign)`)

// parseTemplate parses s. A string without references yields a template
// with one literal part ($$ already unescaped).
func parseTemplate(s string) (*template, error) {
	t := &template{}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t.parts = append(t.parts, part{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' {
			lit.WriteByte(c)
			i++
			continue
		}
		rest := s[i+1:]
		switch {
		case strings.HasPrefix(rest, "$"):
			lit.WriteByte('$')
			i += 2
		case strings.HasPrefix(rest, "{"):
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return nil, fmt.Errorf("unclosed ${ in %q", clip(s))
			}
			inner := rest[1:end]
			r, n, err := parseRef(inner, true)
			if err != nil {
				return nil, err
			}
			if n != len(inner) {
				return nil, fmt.Errorf("unexpected %q in ${%s}", inner[n:], inner)
			}
			r.src = "${" + inner + "}"
			flush()
			t.parts = append(t.parts, part{ref: r})
			i += 1 + end + 1
		case strings.HasPrefix(rest, "result["):
			r, n, err := parseRef(rest, false)
			if err != nil {
				return nil, err
			}
			r.src = "$" + rest[:n]
			flush()
			t.parts = append(t.parts, part{ref: r})
			i += 1 + n
		default:
			return nil, errLoneDollar
		}
	}
	flush()
	return t, nil
}

// parseRef parses "result[N]" and a path from the start of s and returns
// how many bytes it used. Unbraced, a path ends at the first byte that
// cannot continue it (".", "[" not followed by a key or an index stay
// text); braced, keys are anything but ".", "[", "]" and "}".
func parseRef(s string, braced bool) (*ref, int, error) {
	const head = "result["
	if !strings.HasPrefix(s, head) {
		return nil, 0, fmt.Errorf("unknown reference %q (want result[N])", clip(s))
	}
	i := len(head)
	n, j, ok := digits(s, i)
	if !ok || j >= len(s) || s[j] != ']' {
		return nil, 0, fmt.Errorf("bad reference %q: want result[N] with N a whole number", clip(s))
	}
	if n > maxResultIndex {
		return nil, 0, fmt.Errorf("result index %d is too large", n)
	}
	r := &ref{n: n}
	i = j + 1
	for i < len(s) {
		switch s[i] {
		case '.':
			k := i + 1
			for k < len(s) && keyByte(s[k], braced) {
				k++
			}
			if k == i+1 {
				if braced {
					return nil, 0, fmt.Errorf("empty key in %q", clip(s))
				}
				return r, i, nil
			}
			r.path = append(r.path, pathStep{key: s[i+1 : k]})
			i = k
		case '[':
			idx, k, ok := digits(s, i+1)
			if !ok || k >= len(s) || s[k] != ']' || idx > maxResultIndex {
				if braced {
					return nil, 0, fmt.Errorf("bad index in %q", clip(s))
				}
				return r, i, nil
			}
			r.path = append(r.path, pathStep{index: idx, isIdx: true})
			i = k + 1
		default:
			return r, i, nil
		}
	}
	return r, i, nil
}

// digits reads a decimal number at s[i:]; ok is false when there is none
// or it has more than 7 digits.
func digits(s string, i int) (n, end int, ok bool) {
	j := i
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == i || j-i > 7 {
		return 0, j, false
	}
	n, _ = strconv.Atoi(s[i:j])
	return n, j, true
}

func keyByte(c byte, braced bool) bool {
	if braced {
		return c != '.' && c != '[' && c != ']' && c != '}'
	}
	return c == '_' || c == '-' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

// literal reports whether t has no references, and its text.
func (t *template) literal() (string, bool) {
	switch {
	case len(t.parts) == 0:
		return "", true
	case len(t.parts) == 1 && t.parts[0].ref == nil:
		return t.parts[0].lit, true
	}
	return "", false
}

// eval computes the template's value from the tool results.
func (t *template) eval(results []result) (any, error) {
	if len(t.parts) == 1 && t.parts[0].ref != nil {
		return t.parts[0].ref.eval(results)
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.ref == nil {
			b.WriteString(p.lit)
			continue
		}
		v, err := p.ref.eval(results)
		if err != nil {
			return nil, err
		}
		b.WriteString(stringOf(v))
	}
	return b.String(), nil
}

// result is one tool result: its JSON value, or its text when it is not
// JSON.
type result struct {
	value  any
	isJSON bool
}

func parseResult(text string) result {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return result{value: text}
	}
	return result{value: v, isJSON: true}
}

func (r *ref) eval(results []result) (any, error) {
	if r.n >= len(results) {
		return nil, fmt.Errorf("%s: there are only %d tool results since the last user message", r.src, len(results))
	}
	res := results[r.n]
	if len(r.path) > 0 && !res.isJSON {
		return nil, fmt.Errorf("%s: tool result %d is not JSON", r.src, r.n)
	}
	v := res.value
	for _, st := range r.path {
		switch x := v.(type) {
		case map[string]any:
			if st.isIdx {
				return nil, fmt.Errorf("%s: [%d] applied to an object", r.src, st.index)
			}
			next, ok := x[st.key]
			if !ok {
				return nil, fmt.Errorf("%s: no key %q", r.src, st.key)
			}
			v = next
		case []any:
			if !st.isIdx {
				return nil, fmt.Errorf("%s: .%s applied to an array", r.src, st.key)
			}
			if st.index >= len(x) {
				return nil, fmt.Errorf("%s: index %d out of range (length %d)", r.src, st.index, len(x))
			}
			v = x[st.index]
		default:
			return nil, fmt.Errorf("%s: cannot go into a %s", r.src, kindOf(v))
		}
	}
	return v, nil
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number, float64, int, int64, uint64:
		return "number"
	}
	return "value"
}

// stringOf is how a value reads inside other text.
func stringOf(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// compileTree replaces every string of an arguments tree by its parsed
// template (or, without references, by its unescaped text).
func compileTree(v any) (any, error) {
	switch x := v.(type) {
	case string:
		t, err := parseTemplate(x)
		if err != nil {
			return nil, err
		}
		if s, ok := t.literal(); ok {
			return s, nil
		}
		return t, nil
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			c, err := compileTree(e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			m[k] = c
		}
		return m, nil
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			c, err := compileTree(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			l[i] = c
		}
		return l, nil
	}
	return v, nil
}

// evalTree evaluates a compiled tree against the tool results.
func evalTree(v any, results []result) (any, error) {
	switch x := v.(type) {
	case *template:
		return x.eval(results)
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			c, err := evalTree(e, results)
			if err != nil {
				return nil, err
			}
			m[k] = c
		}
		return m, nil
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			c, err := evalTree(e, results)
			if err != nil {
				return nil, err
			}
			l[i] = c
		}
		return l, nil
	}
	return v, nil
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
