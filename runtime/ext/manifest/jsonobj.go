package manifest

import (
	"bytes"
	"encoding/json"
	"io"
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
