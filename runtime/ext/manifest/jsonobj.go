package manifest

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
)

// member is one key/value of a JSON object, in document order.
type member struct {
	key string
	val json.RawMessage
}

// object reads a JSON object's members in order. ok is false when raw is
// not an object; dup names the first key that occurs twice ("" if none).
// Manifests are validated strictly: a repeated key would let two readers
// of the same file see different values.
func object(raw json.RawMessage) (ms []member, dup string, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, "", false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, "", false
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, "", false
		}
		k, isStr := t.(string)
		if !isStr {
			return nil, "", false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, "", false
		}
		if seen[k] && dup == "" {
			dup = k
		}
		seen[k] = true
		ms = append(ms, member{k, v})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, "", false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, "", false
	}
	return ms, dup, true
}

// get returns the first value of key.
func get(ms []member, key string) (json.RawMessage, bool) {
	for _, m := range ms {
		if m.key == key {
			return m.val, true
		}
	}
	return nil, false
}

// str decodes a JSON string; ok is false for any other JSON value.
func str(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// array decodes a JSON array's elements.
func array(raw json.RawMessage) ([]json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	var a []json.RawMessage
	if json.Unmarshal(raw, &a) != nil {
		return nil, false
	}
	return a, true
}

// stringMap decodes an object whose values are all strings.
func stringMap(raw json.RawMessage) (map[string]string, bool) {
	ms, dup, ok := object(raw)
	if !ok || dup != "" {
		return nil, false
	}
	out := make(map[string]string, len(ms))
	for _, m := range ms {
		s, ok := str(m.val)
		if !ok {
			return nil, false
		}
		out[m.key] = s
	}
	return out, true
}

// MaxDepth is the deepest nesting of arrays and objects a manifest may
// have; nothing in a manifest needs more, and the bound keeps validation
// linear in the file's size.
const MaxDepth = 64

// scanStructure walks the whole document once, token by token, and
// reports every object that repeats a key and nesting deeper than
// MaxDepth (after which it stops). data must be valid JSON.
func scanStructure(ps *problems, data []byte) {
	type frame struct {
		obj     bool
		keys    map[string]bool
		key     string // current key (objects)
		idx     int    // current index (arrays)
		wantKey bool
	}
	var stack []*frame
	// path names the repeated key: the keys and indices of the enclosing
	// frames, then the key itself.
	path := func(last string) string {
		parts := make([]string, 0, len(stack))
		for _, f := range stack[:len(stack)-1] {
			if f.obj {
				parts = append(parts, f.key)
			} else {
				parts = append(parts, strconv.Itoa(f.idx))
			}
		}
		return keyPath(append(parts, last)...)
	}
	// valueDone advances the enclosing frame after a complete value.
	valueDone := func() {
		if n := len(stack); n > 0 {
			if f := stack[n-1]; f.obj {
				f.wantKey = true
			} else {
				f.idx++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		t, err := dec.Token()
		if err != nil {
			return // io.EOF, or invalid JSON already reported
		}
		if k, isKey := t.(string); isKey && len(stack) > 0 && stack[len(stack)-1].obj && stack[len(stack)-1].wantKey {
			f := stack[len(stack)-1]
			if f.keys[k] {
				ps.add(Schema, path(k), "key appears more than once")
			}
			f.keys[k] = true
			f.key = k
			f.wantKey = false
			continue
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= MaxDepth {
				ps.add(Schema, "", "the document is nested more than %d levels deep", MaxDepth)
				return
			}
			f := &frame{obj: t == json.Delim('{')}
			if f.obj {
				f.keys = map[string]bool{}
				f.wantKey = true
			}
			stack = append(stack, f)
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueDone()
		default:
			valueDone()
		}
	}
}
