package scenario

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// References inside strings: "${NAME}" or "${NAME.path}" / "${NAME[0]…}"
// is a value the scenario knows by NAME (a step's saved output, vars,
// device, attempt) and a JSON path into it. A string that is exactly one
// reference takes the referenced value with its JSON type; inside other
// text the value is inserted as text (strings as they are, anything else
// as compact JSON). "$${" is a literal "${"; any other "$" is literal
// (shell commands keep their $?).

// ErrUnknownRef is wrapped by expansion errors for a name nothing saved.
var ErrUnknownRef = errors.New("unknown reference")

// ErrRefEmpty is wrapped by expansion errors for a path that selects
// nothing.
var ErrRefEmpty = errors.New("reference selects nothing")

// Ref is one ${…} reference.
type Ref struct {
	Name string
	Path Path
	// Raw is the text between ${ and }.
	Raw string
}

type tmplPart struct {
	text string
	ref  *Ref
}

func isNameStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_'
}

func isNameByte(c byte) bool { return isNameStart(c) || c >= '0' && c <= '9' || c == '-' }

// parseTemplate splits s into text and references.
func parseTemplate(s string) ([]tmplPart, error) {
	var parts []tmplPart
	var text strings.Builder
	for i := 0; i < len(s); {
		if strings.HasPrefix(s[i:], "$${") {
			text.WriteString("${")
			i += 3
			continue
		}
		if !strings.HasPrefix(s[i:], "${") {
			text.WriteByte(s[i])
			i++
			continue
		}
		end, err := refEnd(s, i+2)
		if err != nil {
			return nil, err
		}
		raw := s[i+2 : end]
		ref, err := parseRef(raw)
		if err != nil {
			return nil, err
		}
		if text.Len() > 0 {
			parts = append(parts, tmplPart{text: text.String()})
			text.Reset()
		}
		parts = append(parts, tmplPart{ref: ref})
		i = end + 1
	}
	if text.Len() > 0 || len(parts) == 0 {
		parts = append(parts, tmplPart{text: text.String()})
	}
	return parts, nil
}

// refEnd finds the "}" closing a reference that starts at i, skipping
// quoted strings inside filters.
func refEnd(s string, i int) (int, error) {
	inQuote := false
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case inQuote && c == '\\':
			i++
		case c == '"':
			inQuote = !inQuote
		case !inQuote && c == '}':
			return i, nil
		}
	}
	return 0, fmt.Errorf("unclosed ${ (write $${ for a literal ${)")
}

func parseRef(raw string) (*Ref, error) {
	if raw == "" || !isNameStart(raw[0]) {
		return nil, fmt.Errorf("${%s}: a reference starts with a name", clip(raw, 40))
	}
	n := 1
	for n < len(raw) && isNameByte(raw[n]) {
		n++
	}
	p, err := ParsePath(raw[n:])
	if err != nil {
		return nil, fmt.Errorf("${%s}: %w", clip(raw, 40), err)
	}
	return &Ref{Name: raw[:n], Path: p, Raw: raw}, nil
}

// Refs returns the references in s, or the reason s does not parse.
func Refs(s string) ([]Ref, error) {
	parts, err := parseTemplate(s)
	if err != nil {
		return nil, err
	}
	var out []Ref
	for _, p := range parts {
		if p.ref != nil {
			out = append(out, *p.ref)
		}
	}
	return out, nil
}

// Lookup resolves a reference name to its value.
type Lookup func(name string) (any, bool)

func (r *Ref) resolve(look Lookup) (any, error) {
	v, ok := look(r.Name)
	if !ok {
		return nil, fmt.Errorf("${%s}: %w %q", r.Raw, ErrUnknownRef, r.Name)
	}
	if r.Path.IsZero() {
		return v, nil
	}
	vals := r.Path.Select(toJSON(v))
	if len(vals) == 0 {
		return nil, fmt.Errorf("${%s}: %w", r.Raw, ErrRefEmpty)
	}
	if len(vals) > 1 {
		return vals, nil
	}
	return vals[0], nil
}

// Expand expands the references in s. A string that is exactly one
// reference yields the referenced value itself.
func Expand(s string, look Lookup) (any, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	parts, err := parseTemplate(s)
	if err != nil {
		return nil, err
	}
	if len(parts) == 1 && parts[0].ref != nil {
		return parts[0].ref.resolve(look)
	}
	var b strings.Builder
	for _, p := range parts {
		if p.ref == nil {
			b.WriteString(p.text)
			continue
		}
		v, err := p.ref.resolve(look)
		if err != nil {
			return nil, err
		}
		b.WriteString(asText(v))
	}
	return b.String(), nil
}

// ExpandString expands s and returns the result as text.
func ExpandString(s string, look Lookup) (string, error) {
	v, err := Expand(s, look)
	if err != nil {
		return "", err
	}
	return asText(v), nil
}

// ExpandValue expands every string inside v (maps, lists).
func ExpandValue(v any, look Lookup) (any, error) {
	switch t := v.(type) {
	case string:
		return Expand(t, look)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			x, err := ExpandValue(e, look)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			x, err := ExpandValue(e, look)
			if err != nil {
				return nil, err
			}
			out[k] = x
		}
		return out, nil
	}
	return v, nil
}

// ExpandText expands the references in every string inside v as text
// (a string that is one reference stays a string): for values the lab
// sends as JSON, where a reference was always text inside a string.
func ExpandText(v any, look Lookup) (any, error) {
	var first error
	out := mapStrings(v, func(s string) string {
		x, err := ExpandString(s, look)
		if err != nil && first == nil {
			first = err
		}
		return x
	})
	return out, first
}

// asText renders a value for insertion into text.
func asText(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case nil:
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// toJSON turns a Go value into its encoding/json `any` form, so paths can
// walk values that were saved as structs.
func toJSON(v any) any {
	switch v.(type) {
	case nil, bool, float64, string, []any, map[string]any:
		return v
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

// ToJSON is toJSON for other packages: any Go value as encoding/json's any.
func ToJSON(v any) any { return toJSON(v) }
