package acp

import (
	"bytes"
	"encoding/json"

	"github.com/agentoslab/agentlab/runtime/errcode"
)

// params are a request's params by exact (case-sensitive) key. Go's
// encoding/json matches struct fields case-insensitively, so params are
// read key by key here instead; a misspelt key is simply absent.
type params map[string]json.RawMessage

// parseParams reads a request's params: absent or null is an empty
// object, anything but an object is invalid_params.
func parseParams(raw json.RawMessage) (params, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return params{}, nil
	}
	if raw[0] != '{' {
		return nil, errcode.New(errcode.InvalidParams, "params must be an object")
	}
	var p params
	if err := json.Unmarshal(raw, &p); err != nil || p == nil {
		return nil, errcode.New(errcode.InvalidParams, "params must be an object")
	}
	return p, nil
}

// has reports whether key is present and not null.
func (p params) has(key string) bool {
	v, ok := p[key]
	return ok && !isNull(v)
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// str reads a string field. A missing or null field is "" with ok false;
// a value of another type is invalid_params naming the field.
func (p params) str(key string) (s string, ok bool, err error) {
	v, present := p[key]
	if !present || isNull(v) {
		return "", false, nil
	}
	if err := json.Unmarshal(v, &s); err != nil || firstByte(v) != '"' {
		return "", false, errcode.Newf(errcode.InvalidParams, "%s must be a string", key)
	}
	return s, true, nil
}

// required reads a string field that must be present.
func (p params) required(key string) (string, error) {
	s, ok, err := p.str(key)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", errcode.Newf(errcode.InvalidParams, "%s is required", key)
	}
	return s, nil
}

// object returns a field that must be an object when present (nil when
// absent or null).
func (p params) object(key string) (json.RawMessage, error) {
	v, ok := p[key]
	if !ok || isNull(v) {
		return nil, nil
	}
	if firstByte(v) != '{' {
		return nil, errcode.Newf(errcode.InvalidParams, "%s must be an object", key)
	}
	return v, nil
}

func firstByte(raw []byte) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

// members decodes a JSON object; ok is false for anything else.
func members(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	if firstByte(raw) != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

// stringOf decodes a JSON string; ok is false for anything else.
func stringOf(raw json.RawMessage) (string, bool) {
	if firstByte(raw) != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}
