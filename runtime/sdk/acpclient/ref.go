package acpclient

import (
	"regexp"
	"slices"
	"strings"

	"github.com/agentoslab/agentlab/runtime/catalog"
)

var hashSuffix = regexp.MustCompile(`_([0-9a-f]{6}|[0-9a-f]{8}|[0-9a-f]{12}|[0-9a-f]{16}|[0-9a-f]{24})$`)

// refFor maps a final model tool name back to an entry of the session's
// toolScope (spec §2.10), or nil. The SDK does not know server names, so
// it reads the server out of the name: for "mcp__<plugin>__<server>__<tool>"
// of a scope entry's sanitized plugin and tool, the middle part is taken
// as the server and the name must be one of catalog.Candidates for that
// (plugin, server, tool). A name shortened with a hash (over 64 chars,
// where the server or the tool may be cut off) maps only when exactly one
// scope entry's plugin prefix fits it.
func refFor(name string, scope []ToolRef) *ToolRef {
	if len(scope) == 0 || !strings.HasPrefix(name, catalog.PluginPrefix) {
		return nil
	}
	stem := name
	if m := hashSuffix.FindStringIndex(name); m != nil {
		stem = name[:m[0]]
	}
	var loose []ToolRef
	for _, e := range catalog.ScopeOf(scope) {
		p := catalog.PluginPrefix + catalog.Sanitize(e.Plugin) + "__"
		t := "__" + catalog.Sanitize(e.Tool)
		for _, whole := range []string{name, stem} {
			if strings.HasPrefix(whole, p) && strings.HasSuffix(whole, t) && len(whole) > len(p)+len(t) {
				server := whole[len(p) : len(whole)-len(t)]
				if slices.Contains(catalog.Candidates(catalog.ToolID{Plugin: e.Plugin, Server: server, Tool: e.Tool}), name) {
					return &ToolRef{Plugin: e.Plugin, Tool: e.Tool}
				}
			}
		}
		// Only a name cut to the limit can have lost its tool part.
		if stem != name && len(name) == catalog.MaxNameLen && (strings.HasPrefix(stem, p) || strings.HasPrefix(p, stem)) {
			loose = append(loose, ToolRef(e))
		}
	}
	if len(loose) == 1 {
		return &loose[0]
	}
	return nil
}
