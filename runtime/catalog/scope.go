package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"unicode/utf8"

	"github.com/agentoslab/agentlab/runtime/errcode"
)

// toolScope limits (spec §4.2).
const (
	MaxScopeEntries  = 32
	MaxScopeFieldLen = 128 // UTF-16 code units, like Java's String.length
)

// ScopeEntry is one (plugin, raw MCP tool) pair of a toolScope (spec
// §2.4); the server name is not part of it. It has the same fields and
// tags as engine.ToolScopeEntry, so each converts to the other with a
// plain conversion (see ScopeOf and ScopeAs for slices). The catalog
// does not import the engine: the engine interprets stored scopes and
// modes with this package, and the catalog must stay importable by
// anything without pulling in the engine's dependencies.
//
// Scope convention used throughout this package, as in engine.SessionView:
// a nil scope means "no toolScope" (whole catalog); a non-nil scope,
// possibly empty, restricts the session to its entries (empty = no tools).
type ScopeEntry struct {
	Plugin string `json:"plugin"`
	Tool   string `json:"tool"`
}

// scopeShape is the underlying type of ScopeEntry and of any identical
// entry type elsewhere (engine.ToolScopeEntry).
type scopeShape interface {
	~struct {
		Plugin string `json:"plugin"`
		Tool   string `json:"tool"`
	}
}

// ScopeOf converts a scope of an identical entry type (such as
// []engine.ToolScopeEntry) to []ScopeEntry, keeping nil (no scope) nil
// and empty (no tools) empty.
func ScopeOf[E scopeShape](s []E) []ScopeEntry {
	if s == nil {
		return nil
	}
	out := make([]ScopeEntry, len(s))
	for i, e := range s {
		out[i] = ScopeEntry(e)
	}
	return out
}

// ScopeAs converts []ScopeEntry to a scope of an identical entry type,
// keeping nil nil and empty empty.
func ScopeAs[E scopeShape](s []ScopeEntry) []E {
	if s == nil {
		return nil
	}
	out := make([]E, len(s))
	for i, e := range s {
		out[i] = E(e)
	}
	return out
}

// ParseToolScope reads the toolScope of a session/new or session/fork
// request from its _meta object (spec §2.4).
//
// present is false (and err nil) when there is nothing to read: meta
// absent, null or not an object, "org.agentos" absent, null or not an
// object, or no "toolScope" key. Otherwise the value must be an array of
// at most 32 objects (counted as sent, duplicates included) whose
// "plugin" and "tool" are strings of 1 to 128 characters; extra keys are
// ignored. Any violation is an *errcode.Error with code invalid_params
// whose text names the rule and the index but never the value.
//
// A valid scope comes back normalized: duplicates merged, sorted by
// plugin then tool, never nil (an empty array is a valid "no tools").
func ParseToolScope(meta json.RawMessage) (scope []ScopeEntry, present bool, err error) {
	obj, ok := objectOf(meta)
	if !ok {
		return nil, false, nil
	}
	ext, ok := objectOf(obj["org.agentos"])
	if !ok {
		return nil, false, nil
	}
	raw, ok := ext["toolScope"]
	if !ok {
		return nil, false, nil
	}
	if firstByte(raw) != '[' {
		return nil, true, scopeError("toolScope must be an array")
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, true, scopeError("toolScope must be an array")
	}
	if len(elems) > MaxScopeEntries {
		return nil, true, scopeError(fmt.Sprintf("toolScope has more than %d entries", MaxScopeEntries))
	}
	out := make([]ScopeEntry, 0, len(elems))
	for i, el := range elems {
		fields, ok := objectOf(el)
		if !ok {
			return nil, true, scopeError(fmt.Sprintf("toolScope[%d] must be an object", i))
		}
		var e ScopeEntry
		for _, f := range [...]struct {
			key string
			dst *string
		}{{"plugin", &e.Plugin}, {"tool", &e.Tool}} {
			v, ok := fields[f.key]
			if !ok {
				return nil, true, scopeError(fmt.Sprintf("toolScope[%d].%s is missing", i, f.key))
			}
			if firstByte(v) != '"' || json.Unmarshal(v, f.dst) != nil {
				return nil, true, scopeError(fmt.Sprintf("toolScope[%d].%s must be a string", i, f.key))
			}
			if n := utf16Len(*f.dst); n < 1 || n > MaxScopeFieldLen {
				return nil, true, scopeError(fmt.Sprintf("toolScope[%d].%s must be 1 to %d characters long", i, f.key, MaxScopeFieldLen))
			}
		}
		out = append(out, e)
	}
	return NormalizeScope(out), true, nil
}

func scopeError(text string) *errcode.Error { return errcode.New(errcode.InvalidParams, text) }

// objectOf decodes a JSON object into its members; ok is false for
// anything else (absent, null, array, scalar, malformed). Keys are
// case-sensitive.
func objectOf(raw json.RawMessage) (map[string]json.RawMessage, bool) {
	if firstByte(raw) != '{' {
		return nil, false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

func firstByte(raw []byte) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

// utf16Len counts UTF-16 code units; an invalid UTF-8 byte counts as one.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r > 0xFFFF {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// NormalizeScope returns the distinct entries of s sorted by plugin then
// tool. nil stays nil (no scope); any non-nil s gives a non-nil result.
func NormalizeScope(s []ScopeEntry) []ScopeEntry {
	if s == nil {
		return nil
	}
	out := append(make([]ScopeEntry, 0, len(s)), s...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Plugin != out[j].Plugin {
			return out[i].Plugin < out[j].Plugin
		}
		return out[i].Tool < out[j].Tool
	})
	w := 0
	for i, e := range out {
		if i > 0 && e == out[w-1] {
			continue
		}
		out[w] = e
		w++
	}
	return out[:w]
}

// Narrow is the scope of a forked session (spec §2.4): a scope can only
// narrow. nil parent + requested = requested; parent + nil requested =
// parent; both = their intersection, which may be empty (= no tools,
// never "no restriction"). The result is normalized.
func Narrow(parent, requested []ScopeEntry) []ScopeEntry {
	switch {
	case parent == nil:
		return NormalizeScope(requested)
	case requested == nil:
		return NormalizeScope(parent)
	}
	in := make(map[ScopeEntry]bool, len(parent))
	for _, e := range parent {
		in[e] = true
	}
	out := make([]ScopeEntry, 0, len(requested))
	for _, e := range requested {
		if in[e] {
			out = append(out, e)
		}
	}
	return NormalizeScope(out)
}

// ScopeEqual reports whether two scopes are the same, ignoring order and
// duplicates; nil (no scope) equals only nil. autoSelect uses it to pick
// an existing session.
func ScopeEqual(a, b []ScopeEntry) bool {
	if (a == nil) != (b == nil) {
		return false
	}
	na, nb := NormalizeScope(a), NormalizeScope(b)
	if len(na) != len(nb) {
		return false
	}
	for i := range na {
		if na[i] != nb[i] {
			return false
		}
	}
	return true
}

// inScope reports whether (plugin, tool) is allowed by scope.
func inScope(scope []ScopeEntry, plugin, tool string) bool {
	if scope == nil {
		return true
	}
	for _, e := range scope {
		if e.Plugin == plugin && e.Tool == tool {
			return true
		}
	}
	return false
}

// EncodeStoredScope is the form a session's scope is persisted in:
// nil for "no scope", else the normalized JSON array.
func EncodeStoredScope(s []ScopeEntry) []byte {
	if s == nil {
		return nil
	}
	b, err := json.Marshal(NormalizeScope(s))
	if err != nil {
		// Marshalling a slice of two-string structs cannot fail.
		panic("catalog: encode scope: " + err.Error())
	}
	return b
}

// DecodeStoredScope reads a persisted scope. nil or empty data means no
// scope. Anything unreadable, including entries that break the parse
// rules, gives an empty scope: no tools (fail closed, spec §2.4).
func DecodeStoredScope(data []byte) []ScopeEntry {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	var s []ScopeEntry
	if firstByte(data) != '[' || json.Unmarshal(data, &s) != nil || len(s) > MaxScopeEntries {
		return []ScopeEntry{}
	}
	for _, e := range s {
		if n := utf16Len(e.Plugin); n < 1 || n > MaxScopeFieldLen || !utf8.ValidString(e.Plugin) {
			return []ScopeEntry{}
		}
		if n := utf16Len(e.Tool); n < 1 || n > MaxScopeFieldLen || !utf8.ValidString(e.Tool) {
			return []ScopeEntry{}
		}
	}
	return NormalizeScope(s)
}
