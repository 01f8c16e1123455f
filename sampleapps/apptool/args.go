package apptool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode/utf8"
)

// Args reads a tool's JSON arguments with the checks every sample tool
// needs. The first problem found is kept and returned by Err as a
// one-sentence *UserError, so handlers read every parameter and check Err
// once, before touching their store (no partial writes on bad input).
//
//	a, err := apptool.ParseArgs(raw)
//	if err != nil { return nil, err }
//	id := a.Int("id", apptool.Required)
//	label := a.String("label", apptool.MaxLen(60))
//	if err := a.Err(); err != nil { return nil, err }
type Args struct {
	m    map[string]json.RawMessage
	seen map[string]bool
	err  error
}

// ParseArgs decodes raw as a JSON object. Empty input and null are an
// empty object.
func ParseArgs(raw json.RawMessage) (*Args, error) {
	a := &Args{m: map[string]json.RawMessage{}, seen: map[string]bool{}}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return a, nil
	}
	if trimmed[0] != '{' {
		return nil, Errorf("Arguments must be a JSON object.")
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil {
		return nil, Errorf("Arguments must be a JSON object.")
	}
	if m != nil {
		a.m = m
	}
	return a, nil
}

// Opt is a check applied to one parameter.
type Opt func(*check)

type check struct {
	required bool
	maxLen   int
	minLen   int
	hasMin   bool
	hasMax   bool
	min, max float64
	oneOf    []string
	nonEmpty bool
}

// Required makes a missing (or null) parameter an error.
var Required Opt = func(c *check) { c.required = true }

// NonEmpty rejects "" and strings of only spaces.
var NonEmpty Opt = func(c *check) { c.nonEmpty = true }

// MaxLen limits a string to n code points.
func MaxLen(n int) Opt { return func(c *check) { c.maxLen = n } }

// MinLen requires at least n code points.
func MinLen(n int) Opt { return func(c *check) { c.minLen = n } }

// Range bounds a number (inclusive).
func Range(min, max float64) Opt {
	return func(c *check) { c.hasMin, c.hasMax, c.min, c.max = true, true, min, max }
}

// Min bounds a number from below (inclusive).
func Min(min float64) Opt { return func(c *check) { c.hasMin, c.min = true, min } }

// OneOf limits a string to the given values.
func OneOf(values ...string) Opt { return func(c *check) { c.oneOf = values } }

func opts(os []Opt) check {
	var c check
	for _, o := range os {
		o(&c)
	}
	return c
}

func (a *Args) fail(format string, args ...any) {
	if a.err == nil {
		a.err = Errorf(format, args...)
	}
}

// raw returns the value of name, or nil when it is absent or null.
func (a *Args) raw(name string, c check) json.RawMessage {
	a.seen[name] = true
	v, ok := a.m[name]
	if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		if c.required {
			a.fail("Missing required parameter %q.", name)
		}
		return nil
	}
	return v
}

// Has reports whether name was sent with a non-null value.
func (a *Args) Has(name string) bool {
	v, ok := a.m[name]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

// String reads a string parameter ("" when absent).
func (a *Args) String(name string, os ...Opt) string {
	s, _ := a.StringOK(name, os...)
	return s
}

// StringOK reads a string parameter and reports whether it was present.
func (a *Args) StringOK(name string, os ...Opt) (string, bool) {
	c := opts(os)
	v := a.raw(name, c)
	if v == nil {
		return "", false
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		a.fail("Parameter %q must be a string.", name)
		return "", false
	}
	n := utf8.RuneCountInString(s)
	switch {
	case c.nonEmpty && strings.TrimSpace(s) == "":
		a.fail("Parameter %q must not be empty.", name)
	case c.maxLen > 0 && n > c.maxLen:
		a.fail("Parameter %q is too long (%d characters; the limit is %d).", name, n, c.maxLen)
	case c.minLen > 0 && n < c.minLen:
		a.fail("Parameter %q is too short (at least %d characters).", name, c.minLen)
	case len(c.oneOf) > 0 && !contains(c.oneOf, s):
		a.fail("Parameter %q must be one of %s.", name, strings.Join(c.oneOf, ", "))
	}
	return s, true
}

// Int reads an integer parameter (0 when absent).
func (a *Args) Int(name string, os ...Opt) int64 {
	n, _ := a.IntOK(name, os...)
	return n
}

// IntOK reads an integer parameter and reports whether it was present.
// Numbers with a fraction and numeric strings are rejected.
func (a *Args) IntOK(name string, os ...Opt) (int64, bool) {
	c := opts(os)
	v := a.raw(name, c)
	if v == nil {
		return 0, false
	}
	var num json.Number
	if err := json.Unmarshal(v, &num); err != nil || bytes.HasPrefix(bytes.TrimSpace(v), []byte(`"`)) {
		a.fail("Parameter %q must be an integer.", name)
		return 0, false
	}
	f, err := num.Float64()
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		a.fail("Parameter %q must be an integer.", name)
		return 0, false
	}
	a.checkRange(name, f, c)
	return int64(f), true
}

// Float reads a number parameter.
func (a *Args) Float(name string, os ...Opt) (float64, bool) {
	c := opts(os)
	v := a.raw(name, c)
	if v == nil {
		return 0, false
	}
	var num json.Number
	if err := json.Unmarshal(v, &num); err != nil || bytes.HasPrefix(bytes.TrimSpace(v), []byte(`"`)) {
		a.fail("Parameter %q must be a number.", name)
		return 0, false
	}
	f, err := num.Float64()
	if err != nil {
		a.fail("Parameter %q must be a number.", name)
		return 0, false
	}
	a.checkRange(name, f, c)
	return f, true
}

func (a *Args) checkRange(name string, f float64, c check) {
	switch {
	case c.hasMin && c.hasMax && (f < c.min || f > c.max):
		a.fail("Parameter %q must be between %s and %s.", name, fmtNum(c.min), fmtNum(c.max))
	case c.hasMin && f < c.min:
		a.fail("Parameter %q must be at least %s.", name, fmtNum(c.min))
	}
}

// Bool reads a boolean parameter; def is returned when it is absent.
func (a *Args) Bool(name string, def bool, os ...Opt) bool {
	b, ok := a.BoolOK(name, os...)
	if !ok {
		return def
	}
	return b
}

// BoolOK reads a boolean parameter and reports whether it was present.
func (a *Args) BoolOK(name string, os ...Opt) (bool, bool) {
	c := opts(os)
	v := a.raw(name, c)
	if v == nil {
		return false, false
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		a.fail("Parameter %q must be true or false.", name)
		return false, false
	}
	return b, true
}

// Strings reads an array of strings; each element gets the options'
// length and value checks.
func (a *Args) Strings(name string, os ...Opt) ([]string, bool) {
	c := opts(os)
	v := a.raw(name, c)
	if v == nil {
		return nil, false
	}
	var ss []string
	if err := json.Unmarshal(v, &ss); err != nil {
		a.fail("Parameter %q must be an array of strings.", name)
		return nil, false
	}
	for _, s := range ss {
		n := utf8.RuneCountInString(s)
		switch {
		case c.maxLen > 0 && n > c.maxLen:
			a.fail("Each item of %q must be at most %d characters.", name, c.maxLen)
		case c.nonEmpty && strings.TrimSpace(s) == "":
			a.fail("Items of %q must not be empty.", name)
		case len(c.oneOf) > 0 && !contains(c.oneOf, s):
			a.fail("Items of %q must be one of %s.", name, strings.Join(c.oneOf, ", "))
		}
	}
	if ss == nil {
		ss = []string{}
	}
	return ss, true
}

// Ints reads an array of integers.
func (a *Args) Ints(name string, os ...Opt) ([]int64, bool) {
	c := opts(os)
	v := a.raw(name, c)
	if v == nil {
		return nil, false
	}
	var nums []json.Number
	if err := json.Unmarshal(v, &nums); err != nil {
		a.fail("Parameter %q must be an array of integers.", name)
		return nil, false
	}
	out := make([]int64, 0, len(nums))
	for _, num := range nums {
		f, err := num.Float64()
		if err != nil || f != math.Trunc(f) {
			a.fail("Parameter %q must be an array of integers.", name)
			return nil, false
		}
		a.checkRange(name, f, c)
		out = append(out, int64(f))
	}
	return out, true
}

// Raw returns a parameter's raw JSON (nil when absent) without checks.
func (a *Args) Raw(name string) json.RawMessage {
	a.seen[name] = true
	return a.m[name]
}

// Unknown returns the names the handler never read, sorted. Tools whose
// schema sets additionalProperties:false reject them with RejectUnknown.
func (a *Args) Unknown() []string {
	var out []string
	for k := range a.m {
		if !a.seen[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// RejectUnknown records an error for the first parameter not read so far.
func (a *Args) RejectUnknown() {
	if u := a.Unknown(); len(u) > 0 {
		a.fail("Unknown parameter %q.", u[0])
	}
}

// Fail records a handler's own validation error (first error wins).
func (a *Args) Fail(format string, args ...any) { a.fail(format, args...) }

// Err returns the first problem found, as a *UserError, or nil.
func (a *Args) Err() error { return a.err }

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func fmtNum(f float64) string {
	if f == math.Trunc(f) {
		return fmt.Sprintf("%d", int64(f))
	}
	return fmt.Sprintf("%g", f)
}
