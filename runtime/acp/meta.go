package acp

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/errcode"
)

// metaKey is the namespace of AgentOS's _meta extensions.
const metaKey = "org.agentos"

// The extensions a client may negotiate (spec §2.3, §2.4).
const (
	extAutoSelect   = "sessionAutoSelect"
	extToolScope    = "toolScope"
	extSessionSetup = "sessionSetup"
)

var supportedExtensions = []string{extAutoSelect, extSessionSetup, extToolScope}

// agentosMeta returns the "org.agentos" object of a _meta value, or nil
// when there is none (absent, null or not objects are all "none").
func agentosMeta(meta json.RawMessage) map[string]json.RawMessage {
	outer, ok := members(meta)
	if !ok {
		return nil
	}
	inner, ok := members(outer[metaKey])
	if !ok {
		return nil
	}
	return inner
}

// parseExtensions reads the extensions an initialize request lists in
// _meta."org.agentos".extensions: unknown names and non-strings are
// ignored, and so is a value that is not an array. The result is sorted
// and has no duplicates.
func parseExtensions(meta json.RawMessage) []string {
	var raw []json.RawMessage
	if json.Unmarshal(agentosMeta(meta)["extensions"], &raw) != nil {
		return nil
	}
	var out []string
	for _, r := range raw {
		if s, ok := stringOf(r); ok && slices.Contains(supportedExtensions, s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// autoSelect is a session/new request's _meta."org.agentos".autoSelect.
type autoSelect struct {
	present bool
	query   string
}

// parseAutoSelect reads autoSelect: absent is fine; present, it must be
// an object with a non-blank string query, and the extension must have
// been negotiated.
func parseAutoSelect(meta json.RawMessage, negotiated bool) (autoSelect, error) {
	raw, ok := agentosMeta(meta)["autoSelect"]
	if !ok {
		return autoSelect{}, nil
	}
	if !negotiated {
		return autoSelect{}, errcode.New(errcode.InvalidParams, "the sessionAutoSelect extension was not negotiated in initialize")
	}
	obj, ok := members(raw)
	if !ok {
		return autoSelect{}, errcode.New(errcode.InvalidParams, "autoSelect must be an object")
	}
	q, ok := stringOf(obj["query"])
	if !ok || strings.TrimSpace(q) == "" {
		return autoSelect{}, errcode.New(errcode.InvalidParams, "autoSelect.query must be a non-empty string")
	}
	return autoSelect{present: true, query: q}, nil
}

// parseServers reads a request's mcpServers (absent or null: none) into
// the catalog's form for validation. Shapes are checked here; the rules
// (http only, names, URLs, headers, count) are catalog.ValidateSessionServers'.
// Texts name the index, never a value.
func parseServers(raw json.RawMessage) ([]catalog.SessionServer, error) {
	if len(raw) == 0 || isNull(raw) {
		return nil, nil
	}
	if firstByte(raw) != '[' {
		return nil, errcode.New(errcode.InvalidParams, "mcpServers must be an array")
	}
	var elems []json.RawMessage
	if json.Unmarshal(raw, &elems) != nil {
		return nil, errcode.New(errcode.InvalidParams, "mcpServers must be an array")
	}
	out := make([]catalog.SessionServer, 0, len(elems))
	for i, el := range elems {
		m, ok := members(el)
		if !ok {
			return nil, errcode.Newf(errcode.InvalidParams, "mcpServers[%d] must be an object", i)
		}
		s := catalog.SessionServer{Transport: "stdio"} // ACP: a server without type is stdio
		if t, ok := m["type"]; ok {
			if s.Transport, ok = stringOf(t); !ok {
				return nil, errcode.Newf(errcode.InvalidParams, "mcpServers[%d].type must be a string", i)
			}
		}
		if s.Transport != "http" {
			// Refused by the validator with the spec's message; no need to
			// read the rest of its shape.
			out = append(out, s)
			continue
		}
		var okName, okURL bool
		s.Name, okName = stringOf(m["name"])
		s.URL, okURL = stringOf(m["url"])
		if !okName || !okURL {
			return nil, errcode.Newf(errcode.InvalidParams, "mcpServers[%d] needs a string name and url", i)
		}
		if h, ok := m["headers"]; ok && !isNull(h) {
			var hs []json.RawMessage
			if firstByte(h) != '[' || json.Unmarshal(h, &hs) != nil {
				return nil, errcode.Newf(errcode.InvalidParams, "mcpServers[%d].headers must be an array", i)
			}
			for j, hr := range hs {
				hm, ok := members(hr)
				name, ok1 := stringOf(hm["name"])
				value, ok2 := stringOf(hm["value"])
				if !ok || !ok1 || !ok2 {
					return nil, errcode.Newf(errcode.InvalidParams, "mcpServers[%d].headers[%d] needs a string name and value", i, j)
				}
				s.Headers = append(s.Headers, catalog.Header{Name: name, Value: value})
			}
		}
		out = append(out, s)
	}
	return out, nil
}
