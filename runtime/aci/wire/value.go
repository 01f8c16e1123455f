package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Type is a declared param or result type.
type Type string

// The declared types. Upstream's Bundle carries these; string_array is
// in upstream's later docs.
const (
	TypeString      Type = "string"
	TypeInt         Type = "int"
	TypeBoolean     Type = "boolean"
	TypeDouble      Type = "double"
	TypeBytes       Type = "bytes"
	TypeStringArray Type = "string_array"
)

// Types are the declared types, in the order above.
var Types = []Type{TypeString, TypeInt, TypeBoolean, TypeDouble, TypeBytes, TypeStringArray}

// typeAliases are other spellings upstream's docs and callees use.
var typeAliases = map[string]Type{
	"byte[]": TypeBytes, "float": TypeDouble, "bool": TypeBoolean,
	"integer": TypeInt, "long": TypeInt, "number": TypeDouble, "string[]": TypeStringArray,
}

// ParseType reads a declared type: a name of Types or an upstream alias
// ("byte[]", "float", "bool", "integer", "long", "number", "string[]"),
// case-insensitively. ok is false for anything else; the caller keeps the
// raw name (a controller treats such a param as a string).
func ParseType(s string) (Type, bool) {
	l := strings.ToLower(strings.TrimSpace(s))
	if slices.Contains(Types, Type(l)) {
		return Type(l), true
	}
	if t, ok := typeAliases[l]; ok {
		return t, true
	}
	return Type(s), false
}

// Known reports whether t is one of Types.
func (t Type) Known() bool { return slices.Contains(Types, t) }

// Value is one typed value of a Bundle. The zero Value has no type and
// is never sent.
type Value struct {
	t  Type
	s  string
	i  int64
	f  float64
	b  bool
	by []byte
	ss []string
}

// String, Int, Double, Bool, Bytes and Strings make values of each type.
func String(s string) Value          { return Value{t: TypeString, s: s} }
func Int(i int64) Value              { return Value{t: TypeInt, i: i} }
func Double(f float64) Value         { return Value{t: TypeDouble, f: f} }
func Bool(b bool) Value              { return Value{t: TypeBoolean, b: b} }
func Bytes(b []byte) Value           { return Value{t: TypeBytes, by: b} }
func Strings(ss []string) Value      { return Value{t: TypeStringArray, ss: ss} }
func (v Value) Type() Type           { return v.t }
func (v Value) IsZero() bool         { return v.t == "" }
func (v Value) Str() string          { return v.s }
func (v Value) IntVal() int64        { return v.i }
func (v Value) DoubleVal() float64   { return v.f }
func (v Value) BoolVal() bool        { return v.b }
func (v Value) BytesVal() []byte     { return v.by }
func (v Value) StringsVal() []string { return v.ss }

// Any returns the value as a plain Go value (string, int64, float64,
// bool, []byte, []string), nil for the zero Value.
func (v Value) Any() any {
	switch v.t {
	case TypeString:
		return v.s
	case TypeInt:
		return v.i
	case TypeDouble:
		return v.f
	case TypeBoolean:
		return v.b
	case TypeBytes:
		return v.by
	case TypeStringArray:
		return v.ss
	}
	return nil
}

// Text is the value as text: strings as they are, numbers and booleans
// as JSON writes them, bytes as "<N bytes>", arrays comma-joined.
func (v Value) Text() string {
	switch v.t {
	case TypeString:
		return v.s
	case TypeInt:
		return strconv.FormatInt(v.i, 10)
	case TypeDouble:
		return strconv.FormatFloat(v.f, 'g', -1, 64)
	case TypeBoolean:
		return strconv.FormatBool(v.b)
	case TypeBytes:
		return fmt.Sprintf("<%d bytes>", len(v.by))
	case TypeStringArray:
		return strings.Join(v.ss, ",")
	}
	return ""
}

// Equal reports whether v and w have the same type and value.
func (v Value) Equal(w Value) bool {
	return v.t == w.t && v.s == w.s && v.i == w.i && (v.f == w.f || (v.f != v.f && w.f != w.f)) &&
		v.b == w.b && bytes.Equal(v.by, w.by) && slices.Equal(v.ss, w.ss)
}

// ErrValue is a value that cannot be encoded or decoded.
var ErrValue = errors.New("aci: bad value")

// MarshalJSON writes {"<type>": value}.
func (v Value) MarshalJSON() ([]byte, error) {
	var inner any
	switch v.t {
	case TypeString:
		inner = v.s
	case TypeInt:
		inner = v.i
	case TypeDouble:
		if math.IsNaN(v.f) || math.IsInf(v.f, 0) {
			return nil, fmt.Errorf("%w: %v is not a JSON number", ErrValue, v.f)
		}
		inner = v.f
	case TypeBoolean:
		inner = v.b
	case TypeBytes:
		inner = base64.StdEncoding.EncodeToString(v.by)
	case TypeStringArray:
		ss := v.ss
		if ss == nil {
			ss = []string{}
		}
		inner = ss
	default:
		return nil, fmt.Errorf("%w: a value without a type", ErrValue)
	}
	b, err := json.Marshal(inner)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(b)+len(v.t)+5)
	out = append(out, `{"`...)
	out = append(out, v.t...)
	out = append(out, `":`...)
	out = append(out, b...)
	return append(out, '}'), nil
}

// UnmarshalJSON reads {"<type>": value}: exactly one member, a known type
// name, a value of that type (an int is an integer literal within 64
// bits, bytes are standard base64).
func (v *Value) UnmarshalJSON(data []byte) error {
	ms, err := objectMembers(data)
	if err != nil || len(ms) != 1 {
		return fmt.Errorf("%w: must be an object with one member naming its type", ErrValue)
	}
	t, raw := Type(ms[0].key), ms[0].val
	var out Value
	switch t {
	case TypeString:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return fmt.Errorf("%w: string must be a JSON string", ErrValue)
		}
		out = String(s)
	case TypeInt:
		i, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
		if err != nil {
			return fmt.Errorf("%w: int must be an integer of at most 64 bits", ErrValue)
		}
		out = Int(i)
	case TypeDouble:
		var f float64
		if json.Unmarshal(raw, &f) != nil {
			return fmt.Errorf("%w: double must be a JSON number", ErrValue)
		}
		out = Double(f)
	case TypeBoolean:
		var b bool
		if json.Unmarshal(raw, &b) != nil {
			return fmt.Errorf("%w: boolean must be true or false", ErrValue)
		}
		out = Bool(b)
	case TypeBytes:
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return fmt.Errorf("%w: bytes must be a base64 string", ErrValue)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return fmt.Errorf("%w: bytes must be standard base64", ErrValue)
		}
		out = Bytes(b)
	case TypeStringArray:
		var ss []string
		if json.Unmarshal(raw, &ss) != nil || ss == nil {
			return fmt.Errorf("%w: string_array must be an array of strings", ErrValue)
		}
		out = Strings(ss)
	default:
		return fmt.Errorf("%w: %q is not a value type", ErrValue, clip(string(t)))
	}
	*v = out
	return nil
}

// Bundle is a request's params or a response's result: named typed
// values, like an Android Bundle.
type Bundle map[string]Value

// UnmarshalJSON reads an object of values; a repeated name is an error.
func (b *Bundle) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*b = nil
		return nil
	}
	ms, err := objectMembers(data)
	if err != nil {
		return fmt.Errorf("%w: a bundle must be an object", ErrValue)
	}
	out := make(Bundle, len(ms))
	for _, m := range ms {
		if _, dup := out[m.key]; dup {
			return fmt.Errorf("%w: %q repeated", ErrValue, clip(m.key))
		}
		var v Value
		if err := v.UnmarshalJSON(m.val); err != nil {
			return fmt.Errorf("%s: %w", clip(m.key), err)
		}
		out[m.key] = v
	}
	*b = out
	return nil
}

// Coerce converts v to type t for a param declared t, accepting what a
// peer reasonably sends instead: text for numbers and booleans ("50",
// "true"), numbers and booleans for text (upstream's callees dropped
// those silently), an integral double for an int, an int for a double.
// Anything else is an error that names the type; nothing is dropped.
// An unknown t takes the value as text.
func Coerce(v Value, t Type) (Value, error) {
	if !t.Known() {
		t = TypeString
	}
	if v.t == t {
		return v, nil
	}
	bad := fmt.Errorf("%w: a %s cannot be used as %s", ErrValue, v.t, article(t))
	switch t {
	case TypeString:
		switch v.t {
		case TypeInt, TypeDouble, TypeBoolean:
			return String(v.Text()), nil
		}
	case TypeInt:
		switch v.t {
		case TypeString:
			i, err := strconv.ParseInt(strings.TrimSpace(v.s), 10, 64)
			if err != nil {
				return Value{}, fmt.Errorf("%w: %q is not an integer", ErrValue, clip(v.s))
			}
			return Int(i), nil
		case TypeDouble:
			if v.f == math.Trunc(v.f) && math.Abs(v.f) <= 1<<53 {
				return Int(int64(v.f)), nil
			}
			return Value{}, fmt.Errorf("%w: %v is not an integer", ErrValue, v.f)
		}
	case TypeDouble:
		switch v.t {
		case TypeInt:
			return Double(float64(v.i)), nil
		case TypeString:
			f, err := strconv.ParseFloat(strings.TrimSpace(v.s), 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return Value{}, fmt.Errorf("%w: %q is not a number", ErrValue, clip(v.s))
			}
			return Double(f), nil
		}
	case TypeBoolean:
		if v.t == TypeString {
			switch strings.ToLower(strings.TrimSpace(v.s)) {
			case "true":
				return Bool(true), nil
			case "false":
				return Bool(false), nil
			}
			return Value{}, fmt.Errorf("%w: %q is not true or false", ErrValue, clip(v.s))
		}
	case TypeBytes:
		if v.t == TypeString {
			b, err := base64.StdEncoding.DecodeString(v.s)
			if err != nil {
				return Value{}, fmt.Errorf("%w: bytes must be standard base64", ErrValue)
			}
			return Bytes(b), nil
		}
	case TypeStringArray:
		if v.t == TypeString {
			return Strings([]string{v.s}), nil
		}
	}
	return Value{}, bad
}

func article(t Type) string {
	switch t {
	case TypeInt:
		return "an int"
	case TypeStringArray:
		return "a string_array"
	}
	return "a " + string(t)
}

// ArgError is an argument that does not fit its declared param.
type ArgError struct {
	Param  string
	Reason string
}

func (e *ArgError) Error() string {
	if e.Param == "" {
		return "arguments: " + e.Reason
	}
	return fmt.Sprintf("argument %s: %s", e.Param, e.Reason)
}

// ConvertArgs turns a model's JSON arguments into the typed params of a
// call to c (what upstream's aci_call did, without its bugs): each
// member must be a declared param and is converted to the param's type
// (Coerce's rules; an object or array for a string param is its compact
// JSON text); JSON null means absent; a required param must be present.
// Nothing is dropped silently: every problem is an *ArgError.
func ConvertArgs(c *Capability, args json.RawMessage) (Bundle, error) {
	args = bytes.TrimSpace(args)
	out := Bundle{}
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = []byte("{}")
	}
	ms, err := objectMembers(args)
	if err != nil {
		return nil, &ArgError{Reason: "must be a JSON object"}
	}
	for _, m := range ms {
		p, ok := c.Param(m.key)
		if !ok {
			return nil, &ArgError{Param: clip(m.key), Reason: fmt.Sprintf("%s has no such parameter", c.ID)}
		}
		if _, dup := out[m.key]; dup {
			return nil, &ArgError{Param: m.key, Reason: "given twice"}
		}
		raw := bytes.TrimSpace(m.val)
		if bytes.Equal(raw, []byte("null")) {
			continue
		}
		v, err := fromJSON(raw, p.Type)
		if err != nil {
			return nil, &ArgError{Param: m.key, Reason: strings.TrimPrefix(err.Error(), ErrValue.Error()+": ")}
		}
		out[m.key] = v
	}
	for _, p := range c.Params {
		if _, ok := out[p.Name]; p.Required && !ok {
			return nil, &ArgError{Param: p.Name, Reason: "required"}
		}
	}
	return out, nil
}

// fromJSON converts one JSON argument to type t.
func fromJSON(raw []byte, t Type) (Value, error) {
	if !t.Known() {
		t = TypeString
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return Value{}, fmt.Errorf("%w: not valid JSON", ErrValue)
		}
		return Coerce(String(s), t)
	case 't', 'f':
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return Value{}, fmt.Errorf("%w: not valid JSON", ErrValue)
		}
		return Coerce(Bool(b), t)
	case '{', '[':
		if t == TypeStringArray && raw[0] == '[' {
			var items []json.RawMessage
			if err := json.Unmarshal(raw, &items); err != nil {
				return Value{}, fmt.Errorf("%w: not valid JSON", ErrValue)
			}
			ss := make([]string, 0, len(items))
			for _, it := range items {
				it = bytes.TrimSpace(it)
				if len(it) == 0 || it[0] == '{' || it[0] == '[' || bytes.Equal(it, []byte("null")) {
					return Value{}, fmt.Errorf("%w: string_array items must be strings, numbers or booleans", ErrValue)
				}
				v, err := fromJSON(it, TypeString)
				if err != nil {
					return Value{}, fmt.Errorf("%w: string_array items must be strings, numbers or booleans", ErrValue)
				}
				ss = append(ss, v.s)
			}
			return Strings(ss), nil
		}
		if t != TypeString {
			return Value{}, fmt.Errorf("%w: an object or array cannot be used as %s", ErrValue, article(t))
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			return Value{}, fmt.Errorf("%w: not valid JSON", ErrValue)
		}
		return String(buf.String()), nil
	default:
		// A number: kept as the literal for text, so 12345678901234567890
		// is not rounded on its way to a string param.
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return Value{}, fmt.Errorf("%w: not valid JSON", ErrValue)
		}
		switch t {
		case TypeString:
			return String(n.String()), nil
		case TypeInt:
			if i, err := n.Int64(); err == nil {
				return Int(i), nil
			}
			f, err := n.Float64()
			if err != nil {
				return Value{}, fmt.Errorf("%w: %s is not an integer of at most 64 bits", ErrValue, clip(n.String()))
			}
			return Coerce(Double(f), TypeInt)
		default:
			f, err := n.Float64()
			if err != nil {
				return Value{}, fmt.Errorf("%w: %s is out of range", ErrValue, clip(n.String()))
			}
			return Coerce(Double(f), t)
		}
	}
}

// member is one key/value of a JSON object, in document order.
type member struct {
	key string
	val json.RawMessage
}

// objectMembers returns the members of exactly one JSON object (keys as
// written: encoding/json matches struct fields case-insensitively, so
// documents are read key by key here).
func objectMembers(data []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var ms []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, errors.New("not a JSON object")
		}
		k, ok := t.(string)
		if !ok {
			return nil, errors.New("not a JSON object")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, errors.New("not a JSON object")
		}
		ms = append(ms, member{k, v})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, errors.New("not a JSON object")
	}
	if len(bytes.TrimSpace(data[dec.InputOffset():])) != 0 {
		return nil, errors.New("trailing data after the object")
	}
	return ms, nil
}

func clip(s string) string {
	if len(s) <= 80 {
		return s
	}
	return s[:80] + "…"
}
