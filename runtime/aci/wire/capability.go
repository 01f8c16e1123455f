package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Flag is a capability's behaviour flag.
type Flag string

// The flags, in the spelling this implementation writes (upstream main's).
const (
	FlagBackground Flag = "background"
	FlagNoUI       Flag = "no_ui"
	FlagDangerous  Flag = "dangerous"
)

// flagAliases are the AAR's spellings of the same flags. Behaviour never
// depends on which spelling a callee used.
var flagAliases = map[string]Flag{
	"background_executable": FlagBackground,
	"no_ui_required":        FlagNoUI,
	"dangerous_action":      FlagDangerous,
}

// ParseFlag normalizes a flag string: either upstream spelling, any case,
// becomes the constant; anything else is kept as written.
func ParseFlag(s string) Flag {
	l := strings.ToLower(strings.TrimSpace(s))
	switch Flag(l) {
	case FlagBackground, FlagNoUI, FlagDangerous:
		return Flag(l)
	}
	if f, ok := flagAliases[l]; ok {
		return f
	}
	return Flag(s)
}

// DefaultCapabilityVersion is a capability's version when it declares
// none (the AAR's fixed value).
const DefaultCapabilityVersion = "1.0"

// Limits of one capability.
const (
	MaxCapabilityJSON = 64 << 10
	MaxParams         = 64
	MaxCapabilities   = 256
	MaxIDLen          = 64
	MaxDescription    = 4096
)

var capabilityID = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,63}$`)

// ValidID reports whether s can be a capability or param id:
// [A-Za-z][A-Za-z0-9_.-]{0,63}.
func ValidID(s string) bool { return capabilityID.MatchString(s) }

var versionLike = regexp.MustCompile(`^[vV]?[0-9]+(\.[0-9]+){0,3}([-+][0-9A-Za-z.-]+)?$`)

// LooksLikeVersion reports whether a description is a version string
// ("1.0", "v2.1.0"): upstream's Capability.create(id, "1.0") bug, which
// left the model a capability it could not understand.
func LooksLikeVersion(s string) bool { return versionLike.MatchString(strings.TrimSpace(s)) }

// Param is one declared param or result.
type Param struct {
	Name string
	// Type is a Types name; a callee's unknown type is kept as written
	// (Type.Known is false) and treated as a string.
	Type     Type
	Required bool
	// Description tells the model what the param means.
	Description string
}

// Capability is one capability a callee declares.
type Capability struct {
	ID          string
	Version     string
	Description string
	Params      []Param
	Results     []Param
	// Flags are normalized (ParseFlag); unknown ones kept as written.
	Flags []Flag
	// RequirePermission is a permission the calling app must hold ("" for none).
	RequirePermission  string
	RequireUserConfirm bool
	// SyncTimeout is the callee's own budget for a synchronous call; 0
	// means the controller's default (15 s). Written as "syncTimeoutMs",
	// a key upstream parsers ignore.
	SyncTimeout time.Duration
}

// Param returns the declared param named name.
func (c *Capability) Param(name string) (Param, bool) {
	i := slices.IndexFunc(c.Params, func(p Param) bool { return p.Name == name })
	if i < 0 {
		return Param{}, false
	}
	return c.Params[i], true
}

// Result returns the declared result named name.
func (c *Capability) Result(name string) (Param, bool) {
	i := slices.IndexFunc(c.Results, func(p Param) bool { return p.Name == name })
	if i < 0 {
		return Param{}, false
	}
	return c.Results[i], true
}

// Has reports whether c carries flag f.
func (c *Capability) Has(f Flag) bool { return slices.Contains(c.Flags, f) }

// NeedsConfirm reports whether every call needs the user's confirmation:
// the capability asks for it or is flagged dangerous.
func (c *Capability) NeedsConfirm() bool { return c.RequireUserConfirm || c.Has(FlagDangerous) }

// MarshalJSON writes upstream's keys in upstream's order: id, version,
// description, params, result, flags, requirePermission (only when set),
// requireUserConfirm, then syncTimeoutMs (only when set).
func (c Capability) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	w := func(key string, v any, comma bool) error {
		if comma {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(key)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(vb)
		return nil
	}
	version := c.Version
	if version == "" {
		version = DefaultCapabilityVersion
	}
	flags := make([]string, 0, len(c.Flags))
	for _, f := range c.Flags {
		flags = append(flags, string(f))
	}
	b.WriteByte('{')
	errs := []error{
		w("id", c.ID, false),
		w("version", version, true),
		w("description", c.Description, true),
		w("params", paramsJSON(c.Params, true), true),
		w("result", paramsJSON(c.Results, false), true),
		w("flags", flags, true),
	}
	if c.RequirePermission != "" {
		errs = append(errs, w("requirePermission", c.RequirePermission, true))
	}
	errs = append(errs, w("requireUserConfirm", c.RequireUserConfirm, true))
	if c.SyncTimeout > 0 {
		errs = append(errs, w("syncTimeoutMs", c.SyncTimeout.Milliseconds(), true))
	}
	b.WriteByte('}')
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

type paramJSON struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Required    bool   `json:"required"`
	Description string `json:"description"`
}

func paramsJSON(ps []Param, params bool) []paramJSON {
	out := make([]paramJSON, 0, len(ps))
	for _, p := range ps {
		out = append(out, paramJSON{Name: p.Name, Type: string(p.Type), Required: params && p.Required, Description: p.Description})
	}
	return out
}

// Encode returns c as the one JSON object getCapabilities answers for it.
func (c *Capability) Encode() (string, error) {
	b, err := c.MarshalJSON()
	if err != nil {
		return "", fmt.Errorf("encode capability %s: %w", c.ID, err)
	}
	return string(b), nil
}

// Why a capability element was skipped.
var (
	ErrCapabilityJSON       = errors.New("not one JSON object")
	ErrNoID                 = errors.New(`"id" is missing or not a valid id`)
	ErrDescriptionIsVersion = errors.New("the description is a version string (upstream's create(id, \"1.0\") bug): the model could not tell what the capability does")
	ErrDuplicateID          = errors.New("a capability with this id came earlier")
	ErrBadParams            = errors.New("bad params or result")
	ErrTooManyCapabilities  = fmt.Errorf("more than %d capabilities", MaxCapabilities)
)

// CapabilityError says why element Index of a capability list was skipped.
type CapabilityError struct {
	Index  int
	ID     string // "" when unknown
	Err    error  // one of the Err… values above
	Detail string
}

func (e *CapabilityError) Error() string {
	s := fmt.Sprintf("capability %d", e.Index)
	if e.ID != "" {
		s += " (" + e.ID + ")"
	}
	s += ": " + e.Err.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *CapabilityError) Unwrap() error { return e.Err }

// ParseCapabilities reads getCapabilities' answer: one JSON object per
// element, with upstream's (the AAR's) defaults — version "1.0", no
// permission, no confirmation, a param's type "string" and required
// false. Unknown keys are ignored, as upstream's parser does. A bad
// element (not an object, no id, a version for a description, a
// duplicate id, malformed params) is skipped and reported, never hiding
// the others; elements past MaxCapabilities are reported once.
func ParseCapabilities(elems []string) ([]Capability, []error) {
	var caps []Capability
	var errs []error
	seen := map[string]bool{}
	for i, e := range elems {
		if i >= MaxCapabilities {
			errs = append(errs, &CapabilityError{Index: i, Err: ErrTooManyCapabilities})
			break
		}
		c, err := ParseCapability(e)
		if err != nil {
			var ce *CapabilityError
			if errors.As(err, &ce) {
				ce.Index = i
			}
			errs = append(errs, err)
			continue
		}
		if seen[c.ID] {
			errs = append(errs, &CapabilityError{Index: i, ID: c.ID, Err: ErrDuplicateID})
			continue
		}
		seen[c.ID] = true
		caps = append(caps, *c)
	}
	return caps, errs
}

// ParseCapability reads one capability object (ParseCapabilities' rules);
// the error is a *CapabilityError.
func ParseCapability(s string) (*Capability, error) {
	fail := func(id string, err error, detail string) (*Capability, error) {
		return nil, &CapabilityError{ID: id, Err: err, Detail: detail}
	}
	if len(s) > MaxCapabilityJSON {
		return fail("", ErrCapabilityJSON, fmt.Sprintf("larger than %d bytes", MaxCapabilityJSON))
	}
	ms, err := objectMembers([]byte(s))
	if err != nil {
		return fail("", ErrCapabilityJSON, "")
	}
	get := func(k string) (json.RawMessage, bool) {
		for _, m := range ms {
			if m.key == k {
				return m.val, true
			}
		}
		return nil, false
	}
	c := &Capability{Version: DefaultCapabilityVersion}
	raw, ok := get("id")
	if !ok || json.Unmarshal(raw, &c.ID) != nil || !ValidID(c.ID) {
		return fail("", ErrNoID, "")
	}
	if raw, ok := get("version"); ok {
		if v, ok := optString(raw); ok && v != "" {
			c.Version = v
		}
	}
	if raw, ok := get("description"); ok {
		c.Description, _ = optString(raw)
	}
	if len(c.Description) > MaxDescription {
		c.Description = strings.ToValidUTF8(c.Description[:MaxDescription], "")
	}
	if LooksLikeVersion(c.Description) {
		return fail(c.ID, ErrDescriptionIsVersion, fmt.Sprintf("%q", c.Description))
	}
	for _, k := range []string{"params", "result"} {
		raw, ok := get(k)
		if !ok {
			continue
		}
		ps, detail := parseParams(raw, k == "params")
		if detail != "" {
			return fail(c.ID, ErrBadParams, k+": "+detail)
		}
		if k == "params" {
			c.Params = ps
		} else {
			c.Results = ps
		}
	}
	if raw, ok := get("flags"); ok && !isNull(raw) {
		var fs []json.RawMessage
		if json.Unmarshal(raw, &fs) != nil {
			return fail(c.ID, ErrBadParams, "flags must be an array of strings")
		}
		for _, f := range fs {
			if s, ok := optString(f); ok && s != "" && !slices.Contains(c.Flags, ParseFlag(s)) {
				c.Flags = append(c.Flags, ParseFlag(s))
			}
		}
	}
	if raw, ok := get("requirePermission"); ok {
		c.RequirePermission, _ = optString(raw)
	}
	if raw, ok := get("requireUserConfirm"); ok {
		c.RequireUserConfirm = optBool(raw)
	}
	if raw, ok := get("syncTimeoutMs"); ok {
		var ms int64
		if json.Unmarshal(raw, &ms) == nil && ms > 0 && ms <= int64(time.Hour/time.Millisecond) {
			c.SyncTimeout = time.Duration(ms) * time.Millisecond
		}
	}
	return c, nil
}

// parseParams reads a params or result array; detail is "" when it is fine.
func parseParams(raw json.RawMessage, params bool) ([]Param, string) {
	if isNull(raw) {
		return nil, ""
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil, "must be an array of objects"
	}
	if len(items) == 0 {
		return nil, ""
	}
	if len(items) > MaxParams {
		return nil, fmt.Sprintf("more than %d entries", MaxParams)
	}
	out := make([]Param, 0, len(items))
	for i, it := range items {
		ms, err := objectMembers(it)
		if err != nil {
			return nil, fmt.Sprintf("entry %d is not an object", i)
		}
		p := Param{Type: TypeString}
		named := false
		for _, m := range ms {
			switch m.key {
			case "name":
				named = json.Unmarshal(m.val, &p.Name) == nil
			case "type":
				if s, ok := optString(m.val); ok && s != "" {
					p.Type, _ = ParseType(s)
				}
			case "required":
				p.Required = params && optBool(m.val)
			case "description":
				p.Description, _ = optString(m.val)
			}
		}
		if !named || !ValidID(p.Name) {
			return nil, fmt.Sprintf("entry %d has no valid name", i)
		}
		if slices.ContainsFunc(out, func(q Param) bool { return q.Name == p.Name }) {
			return nil, fmt.Sprintf("%q is declared twice", p.Name)
		}
		out = append(out, p)
	}
	return out, ""
}

// optString is org.json's optString: a string, or a number or boolean as
// text; ok is false for anything else.
func optString(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String(), true
	}
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return strconv.FormatBool(b), true
	}
	return "", false
}

// optBool is org.json's optBoolean: true, or the string "true" in any case.
func optBool(raw json.RawMessage) bool {
	var b bool
	if json.Unmarshal(raw, &b) == nil {
		return b
	}
	var s string
	return json.Unmarshal(raw, &s) == nil && strings.EqualFold(s, "true")
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }
